#!/usr/bin/env bash
# tools/experiments/analyze.sh [CLAIM...] — claim 6 of docs/RESULTS.md:
# `keystone analyze` on every finished run of the given claims (default 1 and
# 5) that has no RUN/analysis/analysis.json yet, one after another, so it
# may be stopped and started again like run.sh. The table over seeds is then
#   python3 tools/experiments/report.py --analysis [CLAIM...]
# Environment: KS_EXPERIMENTS (default runs/experiments), KEYSTONE (default
# build/keystone), ANALYZE_FLAGS (default: the analysis defaults, 8
# validation batches).
set -euo pipefail
cd "$(dirname "$0")/../.."
root="${KS_EXPERIMENTS:-runs/experiments}"
ks="${KEYSTONE:-build/keystone}"
[ -x "$ks" ] || { echo "analyze.sh: $ks is not an executable keystone binary (build first, or set KEYSTONE)" >&2; exit 2; }
claims=("$@")
[ ${#claims[@]} -eq 0 ] && claims=(1 5)
for claim in "${claims[@]}"; do
  [ -d "$root/claim$claim" ] || continue
  for dir in "$root/claim$claim"/*-seed*; do
    [ -d "$dir" ] || continue
    grep -q '"split": *"test"' "$dir/metrics.jsonl" 2>/dev/null || continue  # not finished
    [ -f "$dir/analysis/analysis.json" ] && continue                         # done
    echo "$(date -u +%FT%TZ) analyze $dir"
    # shellcheck disable=SC2086
    "$ks" analyze --run "$dir" ${ANALYZE_FLAGS:-} > "$dir.analysis.log" 2>&1 \
      || { echo "analyze.sh: $dir failed, see $dir.analysis.log" >&2; exit 1; }
  done
done
