#!/usr/bin/env bash
# tests/tools/test_cli_interop.sh — the keystone binary on import and export of Hugging Face folders: damaged configs and weights, model_type, head_dim, the --out folder
# (issue 51's regressions). Each check: `expect CODE PATTERN -- command`
# (tests/tools/expect.sh). Not here: the general usage and training paths
# (test_cli.sh).
set -u
PATH="/usr/bin:$PATH"
ks="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$(dirname "$0")/expect.sh"

finish "test_cli_interop.sh: all checks passed"
