#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then configures, builds and
# runs tests/install as an outside project would.
set -euo pipefail
build="$1"; src="$2"
prefix="$build/install-test/prefix"; consumer="$build/install-test/consumer"
rm -rf "$build/install-test"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/tests/install" -B "$consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$consumer" >/dev/null
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" "$consumer/consumer"
