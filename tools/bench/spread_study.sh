#!/usr/bin/env bash
# tools/bench/spread_study.sh — where the run-to-run spread of `keystone bench`
# comes from (issue 32 item 5). Each of RUNS 10-step float32 benches runs under
# `perf stat` (software events: context switches, migrations, page faults; a
# VM may expose no hardware counters) with `--profile` (its time per kernel),
# then a machine-speed probe (ks_bench_kernels: one-thread sgemm 1024³ and the
# memcpy rate), and the host's steal ticks from /proc/stat around the bench.
#   bash tools/bench/spread_study.sh [THREADS (default 2)] [RUNS (default 8)] [OUT (default spread-out)]
# One line per run: tokens/s, GEMM and other kernel ms per step, the perf
# counters, steal, the probe. If the program were the cause, a slow run would
# show it in the counters (more faults, switches, migrations) or in one
# kernel's share; if the machine is, every kernel slows alike and the fixed-work
# probe varies as much. Needs build/keystone, build/ks_bench_kernels, perf.
# Not a test: it prints figures; docs/performance.md has a run and its reading.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads="${1:-2}"
runs="${2:-8}"
out="${3:-spread-out}"
. tools/bench/args.sh
counts THREADS "$threads"
counts RUNS "$runs"
needs_keystone
command -v perf > /dev/null || { echo "perf not found: install linux-perf" >&2; exit 2; }
mkdir -p "$out"
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-SkylakeX}"  # as the speed tables (bench_vs_torch.sh)
steal() { awk '/^cpu /{print $9}' /proc/stat; }
cpu=$(keystone_cpu)
echo "# $cpu, $(date -u +%F), $(git rev-parse --short HEAD)," \
  "$threads thread(s), OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE"
for i in $(seq 1 "$runs"); do
  before=$(steal)
  perf stat -e task-clock,context-switches,cpu-migrations,page-faults -x, -o "$out/stat$i.csv" \
    build/keystone bench --steps 10 --precision float32 --threads "$threads" --profile > "$out/prof$i.txt"
  stolen=$(( $(steal) - before ))
  probe=$(build/ks_bench_kernels --threads 1 --reps 1 | awk '/^1024\^3/{g=$3} /^memcpy/{m=$6} END{print "probe sgemm " g " GFLOP/s, memcpy " m " GB/s"}')
  tps=$(sed -n 's/.*"tokens_per_s":\([0-9]*\).*/\1/p' "$out/prof$i.txt")
  kernels=$(awk '$4 ~ /^[0-9.]+$/ {if ($2 == "gemm") g += $4; else o += $4} END{printf "gemm %.0f ms, other %.0f ms", g, o}' "$out/prof$i.txt")
  counters=$(awk -F, '!/^#/ && NF > 2 {printf "%s %s, ", $3, $1}' "$out/stat$i.csv")
  echo "run $i: $tps tokens/s; $kernels; ${counters}steal $stolen ticks; $probe"
done
