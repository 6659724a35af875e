#!/usr/bin/env bash
# tests/fuzz/replay.sh HARNESS_BINARY NAME — makes the seed corpora
# (make_seeds.py) and replays NAME's through a harness built with
# replay_main.cpp; the ctest "fuzz: ..." cases call it.
set -euo pipefail
bin="$1" name="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 "$(dirname "$0")/make_seeds.py" "$tmp"
"$bin" "$tmp/$name"
