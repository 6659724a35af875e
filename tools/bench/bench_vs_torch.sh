#!/usr/bin/env bash
# tools/bench/bench_vs_torch.sh — Keystone's training step against PyTorch's on this
# CPU, side by side in one run: for each attention shape of issue 12's table
# (softmax 8×32, fixed 8×64, mgk 4×32, mgk 8×32) and each precision (float32;
# bf16 = our AMX/AVX512-BF16 GEMMs vs torch.autocast's oneDNN), the two
# benches run in turn ROUNDS times and each line is one run's tokens/s.
#   bash tools/bench/bench_vs_torch.sh [ROUNDS (default 3)]
# Needs build/keystone and Debian's python3-torch. Both run with
# OPENBLAS_CORETYPE=SkylakeX, the same float32 kernels for both (the AVX-512
# ones Keystone selects itself where OpenBLAS falls back to SSE3 kernels, and
# not what an environment's own OPENBLAS_CORETYPE may say).
# Not a test: it prints figures; docs/performance.md has a run and its reading.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-3}"
torch_bench=../shared/bench/torch_lm_bench.py
shapes=("softmax --heads 8" "fixed --heads 8 --head-dim 64" "mgk --heads 4 --head-dim 32" "mgk --heads 8")
tps() { sed -n 's/.*"tokens_per_s": *\([0-9.]*\).*/\1/p' | head -1; }
printf "%-36s %-8s %5s %12s %12s %7s\n" shape precision round keystone torch ratio
for shape in "${shapes[@]}"; do
  for precision in float32 bf16; do
    for r in $(seq 1 "$rounds"); do
      # shellcheck disable=SC2086
      ks=$(OPENBLAS_CORETYPE=SkylakeX ./build/keystone bench --attention $shape --threads 2 --precision "$precision" | tps)
      # shellcheck disable=SC2086
      pt=$(OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 "$torch_bench" --attention $shape --threads 2 \
             --precision "$precision" | tps)
      printf "%-36s %-8s %5s %12.0f %12.0f %6.2fx\n" "$shape" "$precision" "$r" "$ks" "$pt" \
        "$(python3 -c "print($ks / $pt)")"
    done
  done
done
