#!/usr/bin/env bash
# tests/check_examples.sh BUILD SRC [CUDA_COMPILER] — the example project
# (examples/, its README the how-to) built as a user builds it: Keystone is
# installed from BUILD into a prefix that is then moved (so any path that is
# not relative to the prefix breaks), the project is configured against the
# moved prefix, built and run (its op test, its training program, and the
# installed `keystone` binary, which finds its library through its RPATH);
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
quiet "$work/prefix/bin/keystone" info --config "$src/tools/configs/copy.json"
echo "the installed keystone binary runs from the moved prefix"

echo "== train_lm against the build tree"
quiet cmake -S "$src/examples" -B "$work/project-build-tree" -DKeystone_DIR="$build" "${args[@]}"
quiet cmake --build "$work/project-build-tree" --target train_lm
"$work/project-build-tree/train_lm" | tail -1
