#!/usr/bin/env bash
# tools/gpu_check.sh — the prepared check for a session with a GPU (issue 5):
# builds Keystone with CUDA, runs the CUDA test suite, then times
# `keystone bench --device cuda` beside the same model in PyTorch eager on the
# same GPU, and writes a markdown results table — all within 8 minutes.
#
#   bash tools/gpu_check.sh            # from the repository root
#
# Needs: nvcc (CUDA 12+, sm_90 by default), cmake, a C++20 compiler, 16 cores
# (JOBS=16; set JOBS to change), and python3 with a CUDA build of torch
# (PYTHON=... to pick the interpreter). The table goes to $OUT/gpu_results.md
# when $OUT is set, else to stdout; logs of every phase sit beside it
# ($OUT/gpu_logs/ or build-gpu/gpu_logs/).
#
# The benchmark model is GPT-2-small sized: 12 layers, d_model 768, 12 heads
# of 64, d_ff 3072, seq 1024, vocab 50257 (GPT-2's), batch 8, softmax
# attention with learned positions and an untied output layer — the model of
# tools/gpu/torch_lm_bench_cuda.py (shared/bench/torch_lm_bench.py's model, built
# from tools/bench/torch_common.py),
# once per precision in BENCH_PRECISIONS (default "float32 bf16"): float32
# with TF32 off on both sides (Keystone's default GEMMs are full FP32), then
# bfloat16 GEMMs with float32 weights (Keystone --precision bf16; torch
# autocast bf16). One warm-up step, then the mean over BENCH_STEPS (5) steps.
# Override the shape with BENCH_ARGS (e.g. BENCH_ARGS="--layers 4 --seq 256").
#
# Time budget (every phase under `timeout`, each capped by what is left of
# 470 s): configure <= 120 s, build <= 300 s (only test_cuda, test_tools, the
# probe and the CLI), test_cuda <= 150 s, the trainer's GPU cases <= 90 s, each bench <= 90 s (float32 first: the later precisions are
# the first to be dropped when time runs short). A phase that fails or times out is
# reported in the table and the script goes on; it exits non-zero if any
# phase failed. Not here: the CPU suites (ctest in a CPU build), training runs.
set -u
cd "$(dirname "$0")/.." || exit 1

START=$(date +%s)
BUDGET=${BUDGET:-470}
JOBS=${JOBS:-16}
BUILD=${BUILD:-build-gpu}
PYTHON=${PYTHON:-python3}
BENCH_STEPS=${BENCH_STEPS:-5}
BENCH_PRECISIONS=${BENCH_PRECISIONS:-float32 bf16}
BENCH_ARGS=${BENCH_ARGS:---layers 12 --d-model 768 --heads 12 --d-ff 3072 --seq 1024 --batch 8 --vocab 50257}
if [ -n "${OUT:-}" ]; then
  RESULTS="$OUT/gpu_results.md"
  LOGS="$OUT/gpu_logs"
else
  RESULTS=""
  LOGS="$BUILD/gpu_logs"
fi
mkdir -p "$LOGS"
failed=0
phases=""  # markdown rows: | phase | result | seconds |

left() { echo $((BUDGET - ($(date +%s) - START))); }
# run_phase NAME CAP LOG command... : runs under timeout min(CAP, time left); records a row.
run_phase() {
  local name="$1" cap="$2" log="$3"; shift 3
  local limit t0 rc result
  limit=$(left)
  [ "$limit" -gt "$cap" ] && limit=$cap
  if [ "$limit" -le 5 ]; then
    phases+="| $name | not run: out of time | 0 |"$'\n'
    failed=1
    return 1
  fi
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then result="ok"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then result="TIMED OUT after ${limit} s"
  elif [ $rc -eq 77 ]; then result="SKIPPED: no CUDA device (exit 77)"
  else result="FAILED (exit $rc): $(tail -1 "$log" | cut -c1-200 | tr '|' '/')"
  fi
  [ $rc -eq 0 ] || failed=1
  phases+="| $name | $result (log: $(basename "$log")) | $(($(date +%s) - t0)) |"$'\n'
  return $rc
}

{ timeout 20 nvidia-smi -L; nvcc --version | tail -2; timeout 60 "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'; } >"$LOGS/machine.txt" 2>&1

# Without doctest (the test suites' one extra dependency) the tests cannot be
# built; the benchmark still can, so configure again without them.
build_ok=0 tests_built=1
targets="test_cuda test_tools ks_cuda_probe keystone_cli"
if ! run_phase "configure (Release, KS_CUDA=ON)" 120 "$LOGS/configure.log" \
       cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKS_CUDA=ON -DKS_BUILD_TESTS=ON; then
  tests_built=0
  targets="keystone_cli"
  run_phase "configure again without the tests (KS_BUILD_TESTS=OFF)" 120 "$LOGS/configure_no_tests.log" \
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKS_CUDA=ON -DKS_BUILD_TESTS=OFF
fi
# shellcheck disable=SC2086  # targets is a list
if run_phase "build $targets (-j$JOBS)" 300 "$LOGS/build.log" cmake --build "$BUILD" -j"$JOBS" --target $targets; then
  build_ok=1
fi

tests_summary="not run"
[ $tests_built -eq 1 ] || tests_summary="not built (configure failed with the tests: see configure.log)"
if [ $build_ok -eq 1 ] && [ $tests_built -eq 1 ]; then
  run_phase "CUDA probe" 30 "$LOGS/probe.log" "$BUILD/tests/ks_cuda_probe"
  run_phase "test_cuda (every CUDA test case)" 150 "$LOGS/test_cuda.log" "$BUILD/tests/test_cuda" --duration=true
  run_phase "test_tools cuda cases (keystone train on the GPU)" 90 "$LOGS/test_tools_cuda.log" \
    "$BUILD/tests/test_tools" --test-case="cuda:*"
  tests_summary="test_cuda: $(grep -E "^\[doctest\] (test cases|assertions)" "$LOGS/test_cuda.log" | tr '\n' ' ')"
  tests_summary+=" — test_tools cuda cases: $(grep -E "^\[doctest\] test cases" "$LOGS/test_tools_cuda.log")"
fi

bench_lines=""  # one "precision<TAB>keystone json<TAB>torch json" line per precision
for prec in $BENCH_PRECISIONS; do
  ours_json="" torch_json=""
  if [ $build_ok -eq 1 ]; then
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
    if run_phase "keystone bench --device cuda --precision $prec" 90 "$LOGS/bench_keystone_$prec.log" \
         "$BUILD/keystone" bench --device cuda --precision "$prec" --steps "$BENCH_STEPS" $BENCH_ARGS; then
      ours_json=$(grep -E '^\{' "$LOGS/bench_keystone_$prec.log" | tail -1)
    fi
  fi
  # shellcheck disable=SC2086
  if run_phase "PyTorch eager bench --device cuda --precision $prec" 90 "$LOGS/bench_torch_$prec.log" \
       "$PYTHON" tools/gpu/torch_lm_bench_cuda.py --device cuda --precision "$prec" --steps "$BENCH_STEPS" \
       --threads "$JOBS" $BENCH_ARGS; then
    torch_json=$(grep -E '^\{' "$LOGS/bench_torch_$prec.log" | tail -1)
  fi
  bench_lines+="$prec"$'\t'"$ours_json"$'\t'"$torch_json"$'\n'
done

# The table. python3 only formats JSON here (any python3 will do).
table=$(LINES="$bench_lines" ARGS="$BENCH_ARGS" STEPS="$BENCH_STEPS" python3 - <<'PY'
import json, os
def load(s):
    try:
        return json.loads(s) if s else None
    except ValueError:
        return None
def cell(d, k, fmt):
    return fmt.format(d[k]) if d and k in d else "—"
print("| precision | Keystone tokens/s | PyTorch tokens/s | Keystone / PyTorch | Keystone step ms | PyTorch step ms "
      "| params (Keystone / PyTorch) | first loss Keystone | first loss PyTorch |")
print("|---|---|---|---|---|---|---|---|---|")
versions = set()
for line in os.environ["LINES"].splitlines():
    if not line.strip():
        continue
    prec, ours, torch = (line.split("\t") + ["", ""])[:3]
    ours, torch = load(ours), load(torch)
    for d in (ours, torch):
        if d:
            versions.add(d.get("framework", "?"))
    ratio = "—"
    if ours and torch and torch.get("tokens_per_s"):
        ratio = "**{:.2f}x**".format(ours["tokens_per_s"] / torch["tokens_per_s"])
    print("| {} | {} | {} | {} | {} | {} | {} / {} | {} | {} |".format(
        prec, cell(ours, "tokens_per_s", "{:,.0f}"), cell(torch, "tokens_per_s", "{:,.0f}"), ratio,
        cell(ours, "step_ms", "{:.1f}"), cell(torch, "step_ms", "{:.1f}"), cell(ours, "params", "{:,}"),
        cell(torch, "params", "{:,}"), cell(ours, "first_loss", "{:.4f}"), cell(torch, "first_loss", "{:.4f}")))
print()
print("Model: `{}`, softmax attention, AdamW; mean of {} steps after one warm-up step; {}.".format(
    os.environ["ARGS"], os.environ["STEPS"], ", ".join(sorted(versions)) or "no run finished"))
print("float32: TF32 off on both sides. bf16: bfloat16 GEMMs with float32 weights (torch: autocast).")
print("First losses should both be near ln(vocab) (random init, random tokens); the weights differ "
      "(each framework draws its own), so they are not expected to be equal.")
PY
)

report="# Keystone GPU check

$(date -u '+%Y-%m-%d %H:%M UTC'), $(head -1 "$LOGS/machine.txt"), $(($(date +%s) - START)) s in all.

| phase | result | seconds |
|---|---|---|
$phases
CUDA tests: $tests_summary

$table
"
if [ -n "$RESULTS" ]; then
  printf '%s\n' "$report" >"$RESULTS"
  echo "wrote $RESULTS"
fi
printf '%s\n' "$report"
exit $failed
