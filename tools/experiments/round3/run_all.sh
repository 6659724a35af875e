#!/usr/bin/env bash
# tools/experiments/round3/run_all.sh — trains round 3's stages B, C and D
# (stage_b.txt, stage_c.txt, stage_d.txt beside this file) one after the
# other with the pre-registered binary, at the lowest priority; resumable like
# run.py itself: started again, it skips finished runs and resumes the
# stopped one. Run from the repository root, in the background:
#   nohup bash tools/experiments/round3/run_all.sh > runs/experiments/round3.log 2>&1 &
# Not here: stage A (bracket.txt, finished), the report (report.py).
set -uo pipefail
cd "$(dirname "$0")/../../.."
export ANALYZE_CLAIMS=" " KEYSTONE=runs/experiments/keystone-round3
SEEDS="0 1 2 3 4" CLAIMS=tools/experiments/round3/stage_b.txt nice -n 19 python3 tools/experiments/run.py || exit $?
SEEDS="0 1 2" CLAIMS=tools/experiments/round3/stage_c.txt nice -n 19 python3 tools/experiments/run.py || exit $?
SEEDS="0 1 2" CLAIMS=tools/experiments/round3/stage_d.txt nice -n 19 python3 tools/experiments/run.py
