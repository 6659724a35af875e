#!/usr/bin/env bash
# tools/bench/bench_distributed.sh [STEPS] [PRECISION] — data parallel against
# threads on this machine: the Brown LM (tools/configs/brown_lm_softmax8.json)
# trained for STEPS steps (default 60) of a global batch of 32 sequences,
#   A: 1 process x 2 threads, train.batch_size 32
#   B: mpirun -np 2, 1 thread per rank, train.batch_size 16 each
# printing each one's median tokens/s over the train records after the first
# 10 steps, and for B the share of the time rank 0 waited for gradient
# all-reduces after its backward (allreduce_wait_s). Needs a quiet machine
# and a Release build with MPI (build/keystone). Figures: docs/distributed.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps="${1:-60}"
precision="${2:-float32}"
ks="${KS_BIN:-build/keystone}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
common=(--config tools/configs/brown_lm_softmax8.json --set train.steps="$steps" --set train.eval_every=100000
        --set train.eval_batches=1 --set train.log_every=5 --set train.precision="$precision" --quiet)
summary() {  # run folder, label
  python3 - "$1" "$2" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if '"split":"train"' in l]
steady = [r for r in recs if r["step"] > 10]
rate = statistics.median(r["tokens_per_s"] for r in steady)
wait = sum(r.get("allreduce_wait_s", 0) for r in steady)
span = steady[-1]["elapsed_s"] - recs[[r["step"] for r in recs].index(steady[0]["step"]) - 1]["elapsed_s"]
print(f"{sys.argv[2]}: {rate:8.0f} tokens/s (median of {len(steady)} records)"
      + (f", all-reduce wait {wait:.2f} s of {span:.1f} s ({100 * wait / span:.1f}%)" if wait else ""))
PY
}
"$ks" train "${common[@]}" --set train.batch_size=32 --set train.threads=2 --out "$out/threads"
summary "$out/threads" "1 process x 2 threads"
mpirun --oversubscribe -np 2 "$ks" train "${common[@]}" --set train.batch_size=16 --set train.threads=1 --out "$out/ranks"
summary "$out/ranks" "2 ranks x 1 thread   "
