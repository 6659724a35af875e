#!/usr/bin/env bash
# tools/bench/blocks_vs_torch.sh — a training step of the reference decoder LM
# (d 256, 4 layers, 8 heads, seq 256, batch 16, vocab 8192) with each of
# today's blocks swapped in, Keystone (`keystone bench`) against Debian's
# PyTorch (tools/bench/torch_blocks_bench.py, the same model written as a
# PyTorch user writes it), side by side, each pair run in turn.
#   bash tools/bench/blocks_vs_torch.sh [ROUNDS (default 2)] [THREADS (default 2)] [STEPS (default 5)]
# float32. The gated feed-forwards get d_ff 688 (Keystone's rule for d 256:
# the parameters of the 4d MLP). Needs build/keystone and /usr/bin/python3
# with torch. Not a test: it prints figures; docs/performance.md has a run.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-2}"
threads="${2:-2}"
steps="${3:-5}"
blocks=("--norm layernorm"
  "--norm rmsnorm"
  "--positions rope"
  "--positions alibi"
  "--ff swiglu --d-ff 688"
  "--ff geglu --d-ff 688"
  "--kv-heads 2"
  "--no-bias"
  "--norm rmsnorm --positions rope --ff swiglu --d-ff 688 --kv-heads 2 --no-bias")
. tools/bench/args.sh
counts ROUNDS "$rounds"
counts THREADS "$threads"
counts STEPS "$steps"
vs_torch "$threads"  # PyTorch's BLAS on the run's thread count
echo "# $cpu, $(date -u +%F), $(git rev-parse --short HEAD), $threads thread(s), $steps steps, PyTorch: ${torch_blas:-its default OpenBLAS pool}, load $(cut -d' ' -f1 /proc/loadavg)"
printf "%-70s %5s %12s %12s %7s\n" blocks round keystone_ms torch_ms ratio
for b in "${blocks[@]}"; do
  for r in $(seq 1 "$rounds"); do
    common="$b --threads $threads --steps $steps"
    # shellcheck disable=SC2086
    ks=$(./build/keystone bench $common | field step_ms)
    # shellcheck disable=SC2086
    pt=$(env $torch_blas /usr/bin/python3 tools/bench/torch_blocks_bench.py $common | field step_ms)
    printf "%-70s %5s %12.1f %12.1f %6.2fx\n" "$b" "$r" "$ks" "$pt" "$(python3 -c "print($pt / $ks)")"
  done
done
