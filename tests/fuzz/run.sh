#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [BUILD_DIR] — builds the libFuzzer harnesses
# with clang (KS_FUZZ=ON: ASan + UBSan everywhere) and runs each one for
# SECONDS (default 60) from the generated seed corpora; exits non-zero on the
# first crash, sanitizer report, leak, timeout (> 10 s per input) or input
# needing over 2 GB. Crash inputs land in BUILD_DIR/fuzz-artifacts/.
# JOBS (default 2) sets the build's parallelism; RUNS=N stops each harness
# after N executions instead (SECONDS then only caps the time).
# HARNESSES="a b" runs only those.
set -euo pipefail
secs="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${2:-$root/build-fuzz}"
harnesses=(${HARNESSES:-safetensors config tokenizer idx analysis metrics hf_tokenizer hf_config token_shard gguf})

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKS_FUZZ=ON -DKS_CUDA=OFF \
  -DKS_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target "${harnesses[@]/#/fuzz_}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$root/tests/fuzz/make_seeds.py" "$work/seeds"
mkdir -p "$build/fuzz-artifacts"
for h in "${harnesses[@]}"; do
  mkdir -p "$work/corpus-$h"  # grows as libFuzzer finds new paths; the seeds stay as made
  dict=()
  if [ -f "$root/tests/fuzz/$h.dict" ]; then dict=(-dict="$root/tests/fuzz/$h.dict"); fi
  runs=()
  if [ -n "${RUNS:-}" ]; then runs=(-runs="$RUNS"); fi
  echo "== fuzz_$h: $secs s${RUNS:+ or $RUNS executions}"
  if ! "$build/tests/fuzz/fuzz_$h" "${dict[@]}" "${runs[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$h-" "$work/corpus-$h" "$work/seeds/$h" \
       >"$work/$h.log" 2>&1; then
    tail -n 60 "$work/$h.log"
    echo "fuzz_$h FAILED; the input is in $build/fuzz-artifacts/" >&2
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb" "$work/$h.log" || true
done
echo "all fuzz harnesses ran ${RUNS:+$RUNS executions or }$secs s each without a crash"
