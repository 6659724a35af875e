#!/usr/bin/env bash
# tools/run.sh — the two things a fresh Debian 12 machine needs, as root:
#   bash tools/run.sh train   install what is missing, build (Release), train the default model
#   bash tools/run.sh test    install what is missing (Open MPI too, for the data-parallel
#                             tests under mpirun), build, run every test (Release, then
#                             AddressSanitizer + UndefinedBehaviorSanitizer in Debug)
# Options through the environment: KS_JOBS (parallel build jobs, default: cores),
# KS_CCACHE=0 (compile without ccache; by default every build folder, of this
# checkout or of a fresh clone on the same machine, shares ccache's cache),
# KS_SKIP_SANITIZE=1 (test: skip the sanitizer pass), KS_BUILD_DIR (default: build),
# KS_CONFIG (train: the config, default tools/configs/default.json), KS_CUDA (the
# CMake switch: AUTO for test, OFF for train, whose default model runs on the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
case "$mode" in
  train|test|build) ;;
  *) echo "usage: bash tools/run.sh train|test|build" >&2; exit 2 ;;
esac

jobs="${KS_JOBS:-$(nproc)}"
build="${KS_BUILD_DIR:-build}"

# --- 1. Debian packages ------------------------------------------------------
# zlib, liblzma and libzstd: the compressed inputs of `keystone tokenize`.
packages=(build-essential cmake ninja-build ccache libopenblas-dev libtbb-dev doctest-dev nlohmann-json3-dev
          zlib1g-dev liblzma-dev libzstd-dev)
# Data-parallel training (KS_MPI) and its tests under mpirun need Open MPI;
# the format check (tests/check_format.sh) needs clang-format; clang builds
# the sanitizer pass; doxygen builds the API reference, which a test keeps
# free of warnings (docs/Doxyfile.in; about 10 s on 2 cores).
[ "$mode" = test ] && packages+=(openmpi-bin libopenmpi-dev clang-format clang doxygen)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: packages missing (${missing[*]}) and not running as root to install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The test command also wants Debian's PyTorch (tests open our checkpoints in
# it, and the benchmarks compare against it), Fashion-MNIST (the IDX
# reader's test on the real files), numpy (llm.c's shard writer,
# reimplemented in tests/datasets/test_token_shards.cpp) and SentencePiece
# (python3-sentencepiece: tests/interop/test_unigram.py trains unigram models
# with it and compares its ids with hf_unigram's). Best effort: those tests
# skip without them.
if [ "$mode" = test ] && [ "$(id -u)" -eq 0 ]; then
  optional=()
  for p in python3-torch dataset-fashion-mnist python3-numpy python3-sentencepiece; do
    dpkg -s "$p" >/dev/null 2>&1 || optional+=("$p")
  done
  if ((${#optional[@]})); then
    echo "== installing (optional): ${optional[*]}"
    apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null \
      || echo "warning: could not install ${optional[*]}; the tests that need them will say they are skipped"
  fi
fi

# --- 2. build -----------------------------------------------------------------
configure_and_build() {  # dir, extra cmake args...
  local dir="$1"; shift
  # Ninja, because it compiles a layer's files while the layer beneath is
  # still compiling, where make waits and idles a core (the CUDA Release build
  # alone on 2 cores: 620 s against 646 s). A folder configured before keeps
  # its generator: CMake cannot switch.
  local generator=()
  [ -f "$dir/CMakeCache.txt" ] || generator=(-G Ninja)
  # ccache: a compile whose preprocessed source and flags were seen before, in
  # any folder, is a cache hit, so a fresh clone on a machine that built
  # before, or a build after a one-file change, compiles only what changed.
  # Ninja names sources relative to the build folder; base_dir rewrites the
  # absolute paths left (the folder itself) and no hash_dir keeps debug builds'
  # folder out of the key, so two checkouts share their entries.
  local launcher=()
  if [ "${KS_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
    # The test suites compile through a precompiled header (tests/CMakeLists.txt):
    # ccache caches those compiles only with pch_defines and time_macros; and
    # a fresh clone's headers are all new, which the mtime/ctime checks would
    # take for files still being written.
    export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}" \
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  else
    launcher=(-UCMAKE_C_COMPILER_LAUNCHER -UCMAKE_CXX_COMPILER_LAUNCHER -UCMAKE_CUDA_COMPILER_LAUNCHER)
  fi
  cmake -S . -B "$dir" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" ${target:+--target "$target"}
}
echo "== building (Release) in $build"
target=""
cuda="${KS_CUDA:-AUTO}"
if [ "$mode" = train ]; then
  target=keystone_cli          # training needs only the binary,
  cuda="${KS_CUDA:-OFF}"       # and the default model trains on the CPU
fi
configure_and_build "$build" -DKS_CUDA="$cuda"
target=""

# --- 3. the job ---------------------------------------------------------------
case "$mode" in
  build) ;;
  train)
    # A new run folder each time: runs/default, then runs/default-2, ...
    config="${KS_CONFIG:-tools/configs/default.json}"
    out="runs/$(basename "$config" .json)"
    n=1
    while [ -e "$out" ]; do n=$((n + 1)); out="runs/$(basename "$config" .json)-$n"; done
    echo "== training $config into $out"
    "$build/keystone" train --config "$config" --out "$out"
    ;;
  test)
    echo "== tests (Release)"
    (cd "$build" && ctest --output-on-failure -j "$jobs")
    if [ "${KS_SKIP_SANITIZE:-0}" != 1 ]; then
      echo "== tests (Debug, AddressSanitizer + UndefinedBehaviorSanitizer)"
      # Built by clang: it compiles this pass about twice as fast as GCC (the
      # same checks). CC and CXX count only where the folder is configured
      # for the first time; one configured before keeps its compiler.
      CC=clang CXX=clang++ configure_and_build "$build-asan" -DCMAKE_BUILD_TYPE=Debug -DKS_SANITIZE=ON -DKS_CUDA=OFF
      (cd "$build-asan" && KS_CPU_CACHE=0 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --output-on-failure -j "$jobs" -LE slow)
    fi
    ;;
esac
