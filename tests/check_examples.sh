#!/usr/bin/env bash
# tests/check_examples.sh BUILD SRC [CUDA_COMPILER] — the example project
# (examples/, its README the how-to) built as a user builds it: Keystone is
# installed from BUILD into a prefix that is then moved (so any path that is
# not relative to the prefix breaks), the project is configured against the
# moved prefix, built and run (its op test, its training programs, and the
# installed `keystone` binary, which finds its library through its RPATH,
# training a model with the project's attention plugin and evaluating it);
# then one program is built against the build tree itself (its targets file,
# from export()). CUDA_COMPILER (the build's nvcc, empty without CUDA) lets
# the project compile its .cu kernel when Keystone has CUDA. ccache and Ninja
# are used where present, so a second run compiles next to nothing.
set -euo pipefail
build="$(cd "$1" && pwd)"; src="$(cd "$2" && pwd)"; cuda_compiler="${3:-}"
work="$build/examples-test"
rm -rf "$work"
mkdir -p "$work"

quiet() {  # runs a command, printing its output only when it fails
  local log="$work/last.log"
  "$@" >"$log" 2>&1 || { cat "$log"; echo "failed: $*" >&2; return 1; }
}

args=(-DCMAKE_BUILD_TYPE=Release)
command -v ninja >/dev/null && args+=(-G Ninja)
command -v ccache >/dev/null && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
[ -n "$cuda_compiler" ] && args+=(-DCMAKE_CUDA_COMPILER="$cuda_compiler")

echo "== install, then move the prefix"
quiet cmake --install "$build" --prefix "$work/installed"
mv "$work/installed" "$work/prefix"

echo "== the example project against the moved prefix"
quiet cmake -S "$src/examples" -B "$work/project" -DCMAKE_PREFIX_PATH="$work/prefix" "${args[@]}"
quiet cmake --build "$work/project"
if [ -n "$cuda_compiler" ]; then
  test -f "$work/project/CMakeFiles/squareplus.dir/squareplus/cuda.cu.o" || { echo "cuda.cu was not built" >&2; exit 1; }
  echo "squareplus/cuda.cu compiled against the installed core/cuda/loops.cuh"
fi
"$work/project/test_squareplus"
"$work/project/train_lm"
"$work/project/autograd_tour"
"$work/project/train_with_callbacks"
"$work/project/test_sigmoid_attention"
quiet "$work/prefix/bin/keystone" info --config "$src/tools/configs/copy.json"
echo "the installed keystone binary runs from the moved prefix"

echo "== the project's attention plugin, trained and evaluated by the installed keystone"
for i in $(seq 300); do echo "the cat sat on the mat, the dog sat on the log $((i % 7))"; done >"$work/corpus.txt"
cat >"$work/sigmoid.json" <<EOF
{"name": "sigmoid", "seed": 1,
 "data": {"dataset": "text", "train": "$work/corpus.txt", "seq_len": 32, "tokenizer": {"type": "char"}},
 "model": {"model": "decoder_lm", "d_model": 32, "layers": 1, "attention": {"type": "sigmoid", "heads": 2}},
 "optimizer": {"lr": 1e-2}, "schedule": {"type": "constant"},
 "train": {"steps": 30, "batch_size": 8, "eval_every": 15, "eval_batches": 4, "log_every": 5, "threads": 2}}
EOF
run="$work/sigmoid-run"
quiet "$work/prefix/bin/keystone" train --plugin "$work/project/libsigmoid_attention.so" --config "$work/sigmoid.json" \
  --out "$run" --quiet
grep -q '"type": "sigmoid"' "$run/config.json" || { echo "the run's config has no sigmoid attention" >&2; exit 1; }
# The first train record's loss against the test loss of the best checkpoint.
first=$(grep -m1 '"split":"train"' "$run/metrics.jsonl" | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/')
# eval is told nothing of the plugin: it loads it from the run folder's config.json.
evaluated=$("$work/prefix/bin/keystone" eval --run "$run")
test_loss=$(echo "$evaluated" | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/')
awk -v a="$first" -v b="$test_loss" 'BEGIN { exit !(b < 0.8 * a) }' ||
  { echo "sigmoid attention did not learn: first train loss $first, test loss $test_loss" >&2; exit 1; }
echo "sigmoid attention (plugin): keystone train --plugin, then eval from the run folder: loss $first -> $test_loss"

echo "== the project's optimizer plugin (Lion), trained, stopped and resumed by the installed keystone"
# The plugin's optimizer and its data set ("counting", examples/lion/counting.cpp).
sed 's/"optimizer": {"lr": 1e-2}/"optimizer": {"type": "lion", "lr": 2e-3, "beta2": 0.98}/; s/"sigmoid"/"softmax"/
     s|^ "data": .*$| "data": {"dataset": "counting", "length": 32, "examples": 256},|' \
  "$work/sigmoid.json" >"$work/lion.json"
grep -q '"type": "lion"' "$work/lion.json" || { echo "lion.json: the optimizer was not replaced" >&2; exit 1; }
grep -q '"dataset": "counting"' "$work/lion.json" || { echo "lion.json: the data set was not replaced" >&2; exit 1; }
# grep reads it all (not -q): under pipefail, grep -q leaving early made keystone's SIGPIPE fail the check.
"$work/prefix/bin/keystone" config --defaults --dataset counting --plugin "$work/project/liblion.so" |
  grep '"examples": 512' >/dev/null || { echo "config --defaults does not show the plugin's data set's keys" >&2; exit 1; }
whole="$work/lion-whole"; parts="$work/lion-parts"
quiet "$work/prefix/bin/keystone" train --plugin "$work/project/liblion.so" --config "$work/lion.json" --out "$whole" --quiet
# The same run in two sessions: 15 steps, then --resume to 30 (the moment comes back from the checkpoint).
quiet "$work/prefix/bin/keystone" train --plugin "$work/project/liblion.so" --config "$work/lion.json" \
  --set train.steps=15 --out "$parts" --quiet
quiet "$work/prefix/bin/keystone" train --out "$parts" --resume --set train.steps=30 --quiet
grep -q '"type": "lion"' "$whole/config.json" || { echo "the run's config has no lion optimizer" >&2; exit 1; }
first=$(grep -m1 '"split":"train"' "$whole/metrics.jsonl" | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/')
test_loss=$(grep '"split":"test"' "$whole/metrics.jsonl" | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/')
awk -v a="$first" -v b="$test_loss" 'BEGIN { exit !(b < 0.8 * a) }' ||
  { echo "Lion did not train: first train loss $first, test loss $test_loss" >&2; exit 1; }
last() { grep '"split":"train"' "$1/metrics.jsonl" | tail -1 | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/'; }
[ "$(last "$whole")" = "$(last "$parts")" ] ||
  { echo "Lion resumed differently: last train loss $(last "$whole") whole, $(last "$parts") resumed" >&2; exit 1; }
echo "Lion (plugin): loss $first -> $test_loss; stopped at 15 and resumed, the same last train loss $(last "$whole")"

echo "== train_lm against the build tree"
quiet cmake -S "$src/examples" -B "$work/project-build-tree" -DKeystone_DIR="$build" "${args[@]}"
quiet cmake --build "$work/project-build-tree" --target train_lm
"$work/project-build-tree/train_lm" | tail -1
