#!/usr/bin/env bash
# tools/bench/attention_vs_torch.sh — one attention sublayer alone (projections
# and attention, forward and backward) at long sequences, Keystone's fused
# kernels against Debian's PyTorch (tools/bench/torch_attention_bench.py: the
# eager composition, MGK unfused), side by side in one run, each run in turn.
#   bash tools/bench/attention_vs_torch.sh [ROUNDS (default 2)] [SEQS (default "1024 2048 4096")]
# Batch 1, d_model 256, causal, float32, 2 threads; shapes as the reference LM's
# attention (softmax 8×32, fixed 8×64, mgk 4×32). PyTorch forms the (h, T, T)
# weights (MGK: (h, M, T, T) logits), so at 8192 it needs several GiB.
# Needs build/keystone and Debian's python3-torch. Not a test: it prints figures;
# docs/performance.md has a run and its reading.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-2}"
seqs="${2:-1024 2048 4096}"
shapes=("softmax --heads 8" "fixed --heads 8 --head-dim 64" "mgk --heads 4 --head-dim 32")
. tools/bench/args.sh
counts ROUNDS "$rounds"
# shellcheck disable=SC2086
counts SEQS $seqs
vs_torch 2  # PyTorch's BLAS on the run's thread count
echo "# $cpu, $(date -u +%F), $(git rev-parse --short HEAD), PyTorch: ${torch_blas:-its default OpenBLAS pool}"
printf "%-30s %6s %5s %12s %12s %7s\n" shape seq round keystone_ms torch_ms ratio
for shape in "${shapes[@]}"; do
  for n in $seqs; do
    for r in $(seq 1 "$rounds"); do
      common="--attention $shape --seq $n --batch 1 --threads 2 --steps 3"
      # shellcheck disable=SC2086
      ks=$(./build/keystone bench --attention-only $common --precision float32 | field step_ms)
      # shellcheck disable=SC2086
      pt=$(env $torch_blas /usr/bin/python3 tools/bench/torch_attention_bench.py $common | field step_ms)
      printf "%-30s %6s %5s %12.1f %12.1f %6.2fx\n" "$shape" "$n" "$r" "$ks" "$pt" \
        "$(python3 -c "print($pt / $ks)")"
    done
  done
done
