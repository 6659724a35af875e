#!/usr/bin/env bash
# tests/tools/test_cli_data.sh — the keystone binary on the readers of user-named data files: encodings, TSV lines, files that are no regular file
# (issue 51's regressions). Each check: `expect CODE PATTERN -- command`
# (tests/tools/expect.sh). Not here: the general usage and training paths
# (test_cli.sh).
set -u
PATH="/usr/bin:$PATH"
ks="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$(dirname "$0")/expect.sh"

finish "test_cli_data.sh: all checks passed"
