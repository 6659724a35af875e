#!/usr/bin/env bash
# tools/bench/first_step_vs_torch.sh — the time to the first training step:
# seconds from the process's start to the end of the first (warm-up) step of
# the reference LM, Keystone's `keystone bench` (first_step_s) against
# PyTorch's ../shared/bench/torch_lm_bench.py (tools/bench/torch_first_step.py
# reads the same kernel clock, so Python's start and `import torch` count, as
# the loading of libkeystone does). Each run does one timed step after it; the
# two run in turn, ROUNDS times, for each shape of bench_vs_torch.sh.
#   bash tools/bench/first_step_vs_torch.sh [ROUNDS (default 3)]
# Environment: THREADS (default 2), PRECISION (float32 or bf16, default float32).
# Needs build/keystone and Debian's python3-torch. Not a test: it prints
# figures; docs/performance.md has a run and its reading.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-3}"
threads="${THREADS:-2}"
precision="${PRECISION:-float32}"
shapes=("softmax --heads 8" "fixed --heads 8 --head-dim 64" "mgk --heads 4 --head-dim 32" "mgk --heads 8")
. tools/bench/args.sh
counts ROUNDS "$rounds"
counts THREADS "$threads"
case "$precision" in
  float32 | bf16) ;;
  *) echo "PRECISION: expected float32 or bf16, got '$precision'" >&2; exit 2 ;;
esac
needs_keystone
[ -f ../shared/bench/torch_lm_bench.py ] ||
  { echo "../shared/bench/torch_lm_bench.py not found (the PyTorch reference LM)" >&2; exit 2; }
needs_torch
export OPENBLAS_CORETYPE=SkylakeX  # the same float32 kernels for both (see bench_vs_torch.sh)
. tools/bench/torch_blas.sh
cpu=$(keystone_cpu)
echo "# $cpu, $(date -u +%F), $(git rev-parse --short HEAD), $threads threads, $precision"
printf "%-36s %5s %12s %12s %7s\n" shape round keystone_s torch_s ratio
for shape in "${shapes[@]}"; do
  for r in $(seq 1 "$rounds"); do
    # shellcheck disable=SC2086
    ks=$(./build/keystone bench --attention $shape --threads "$threads" --precision "$precision" --steps 1 |
      field first_step_s)
    # shellcheck disable=SC2086
    pt=$(env $(torch_blas_env "$threads") /usr/bin/python3 tools/bench/torch_first_step.py --attention $shape \
      --threads "$threads" --precision "$precision" --steps 1 | field first_step_s)
    printf "%-36s %5s %12.2f %12.2f %6.2fx\n" "$shape" "$r" "$ks" "$pt" "$(python3 -c "print($pt / $ks)")"
  done
done
