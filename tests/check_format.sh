#!/usr/bin/env bash
# tests/check_format.sh ROOT — fails when a C++ or CUDA source file that git
# tracks under ROOT differs from what clang-format makes of it with the
# repository's .clang-format; lists the files and the command that fixes them.
# Formatting differs between clang-format versions, so the check runs with
# version 14 (Debian 12's, which tools/run.sh installs for the tests) and
# skips (exit 77) where there is none. Not a linter: layout only.
set -euo pipefail
root="${1:?usage: check_format.sh ROOT}"
fmt=""
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null && "$c" --version | grep -q 'version 14\.'; then fmt="$c"; break; fi
done
if [ -z "$fmt" ]; then
  echo "skipped: no clang-format 14 here (apt-get install clang-format on Debian 12)"
  exit 77
fi
cd "$root"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "skipped: $root is not a git checkout (the check reads the tracked files)"
  exit 77
fi
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
present=()
for f in "${files[@]}"; do [ -f "$f" ] && present+=("$f"); done  # not deleted in the working tree
# One process for all files (one per file costs a minute on 2 cores): each
# difference is a "FILE:LINE:COL: warning" line.
mapfile -t bad < <("$fmt" --dry-run "${present[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning:.*/\1/p' | sort -u)
if ((${#bad[@]})); then
  echo "${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
  printf '  %s\n' "${bad[@]}"
  echo "fix: $fmt -i ${bad[*]}"
  exit 1
fi
echo "format ok: ${#files[@]} files"
