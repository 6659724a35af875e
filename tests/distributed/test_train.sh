#!/usr/bin/env bash
# tests/distributed/test_train.sh KEYSTONE — data-parallel `keystone train`
# under Open MPI's mpirun, two ranks of one thread each:
#   - 2 ranks x batch B give the losses of 1 rank x batch 2B, step by step, to
#     float32 reduction-order tolerance, for 50 steps of a decoder LM and of a
#     seq2seq model (variable lengths: the per-rank loss weighting), dropout
#     off; with train.zero (ZeRO-1) the same, and equal to plain DDP bitwise;
#     the LM keeps a moving average of its weights (train.ema_decay), whose
#     valid losses agree the same ways (each rank's average is the same one);
#   - a 2-rank run stopped by SIGTERM and resumed equals the uninterrupted one
#     (dropout on: each rank's own stream is saved and restored), its moving
#     average's valid losses included;
#   - a killed rank ends the job non-zero within the stated bound, with the
#     rank named, and the last checkpoint still loads; a stopped (hung) rank
#     is named by the other after train.collective_timeout;
#   - bad launches: more ranks than the batch allows, configs that differ
#     between ranks, resuming with another number of ranks;
#   - a streamed token_shards data set: 2 ranks x B windows equal 1 rank x 2B
#     (each rank takes its half of the same global batch), and a 2-rank
#     SIGTERM + resume equals the uninterrupted run.
# Exit 77 (ctest's skip) when mpirun is missing.
set -u
ks="$1"
command -v mpirun >/dev/null || { echo "skipped: no mpirun (apt-get install openmpi-bin)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
export OMPI_MCA_btl_vader_single_copy_mechanism=none               # containers forbid CMA
export OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'pkill -KILL -f "$tmp/" 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run2() { mpirun --oversubscribe -np 2 "$@"; }
# The pids of the ranks (not mpirun) whose command line holds PATTERN; with
# RANK, only that rank's.
ranks_of() {
  pgrep -f -- "$1" | while read -r p; do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=${2:-[0-9]*}" && echo "$p"
  done
}

# The train records' losses of a run, one per line.
losses() { grep '"split":"train"' "$1/metrics.jsonl" | sed -E 's/.*"loss":([^,]+),.*/\1/'; }
# The valid records' losses of the moving average (train.ema_decay), one per line.
ema_losses() { grep '"split":"valid"' "$1/metrics.jsonl" | sed -nE 's/.*"loss_ema":([^,]+),.*/\1/p'; }
# close A B TOL: every line of A within TOL (relative) of B's.
close() {
  paste "$1" "$2" | awk -v tol="$3" '{ d = $1 - $2; if (d < 0) d = -d; s = $2 < 0 ? -$2 : $2;
    if (d > tol * (s > 1 ? s : 1)) { bad++; if (bad < 4) print "  step " NR ": " $1 " vs " $2 } n++ }
    END { if (n == 0) { print "  no losses"; exit 1 } exit bad > 0 }'
}

for i in $(seq 1 300); do echo "the cat sat on the mat number $((i % 7)) and the dog ran $((i % 3)) times"; done > "$tmp/lines.txt"
cat > "$tmp/lm.json" <<JSON
{"name": "dp-lm", "seed": 3,
 "data": {"dataset": "text", "train": "$tmp/lines.txt", "seq_len": 16, "tokenizer": {"type": "word"}},
 "model": {"d_model": 32, "layers": 2, "dropout": 0, "attention": {"heads": 4}},
 "schedule": {"type": "cosine", "warmup_steps": 5},
 "train": {"steps": 50, "batch_size": 8, "eval_every": 25, "log_every": 1, "threads": 1, "bucket_mb": 0.01,
           "ema_decay": 0.9}}
JSON
cat > "$tmp/s2s.json" <<JSON
{"name": "dp-s2s", "seed": 5,
 "data": {"dataset": "seq2seq", "task": "reverse", "max_length": 9, "train_size": 400, "valid_size": 20, "test_size": 20},
 "model": {"d_model": 32, "encoder_layers": 1, "decoder_layers": 1, "dropout": 0, "attention": {"heads": 2}},
 "schedule": {"type": "cosine", "warmup_steps": 5},
 "train": {"steps": 50, "batch_size": 8, "eval_every": 25, "log_every": 1, "decode_examples": 6, "threads": 1}}
JSON

# --- 1. two ranks equal one rank on the global batch ---------------------------
for m in lm s2s; do
  "$ks" train --config "$tmp/$m.json" --set train.batch_size=16 --out "$tmp/$m-1" --quiet > "$tmp/$m-1.log" 2>&1 \
    || fail "$m: 1 rank: $(tail -3 "$tmp/$m-1.log")"
  run2 "$ks" train --config "$tmp/$m.json" --out "$tmp/$m-2" --quiet > "$tmp/$m-2.log" 2>&1 \
    || fail "$m: 2 ranks: $(tail -5 "$tmp/$m-2.log")"
  run2 "$ks" train --config "$tmp/$m.json" --set train.zero=true --out "$tmp/$m-z" --quiet > "$tmp/$m-z.log" 2>&1 \
    || fail "$m: 2 ranks, ZeRO-1: $(tail -5 "$tmp/$m-z.log")"
  losses "$tmp/$m-1" > "$tmp/$m-1.loss"; losses "$tmp/$m-2" > "$tmp/$m-2.loss"; losses "$tmp/$m-z" > "$tmp/$m-z.loss"
  [ "$(wc -l < "$tmp/$m-2.loss")" = 50 ] || fail "$m: 2 ranks logged $(wc -l < "$tmp/$m-2.loss") train records, want 50"
  close "$tmp/$m-2.loss" "$tmp/$m-1.loss" 2e-5 || fail "$m: 2-rank losses differ from the 1-rank run on the global batch"
  cmp -s "$tmp/$m-z.loss" "$tmp/$m-2.loss" || fail "$m: ZeRO-1 losses differ from plain data parallel"
  # Evaluation is split over the ranks and summed: the same numbers as one rank's, to summation order.
  v1=$(grep '"split":"test"' "$tmp/$m-1/metrics.jsonl" | sed -E 's/.*"predictions":([0-9]+).*/\1/')
  v2=$(grep '"split":"test"' "$tmp/$m-2/metrics.jsonl" | sed -E 's/.*"predictions":([0-9]+).*/\1/')
  [ -n "$v1" ] && [ "$v1" = "$v2" ] || fail "$m: test predictions $v2 on 2 ranks, $v1 on one"
  [ -f "$tmp/$m-2/latest.safetensors" ] && [ -f "$tmp/$m-2/plot.svg" ] || fail "$m: rank 0 wrote no checkpoint or plot"
done
grep -q "data parallel: 2 ranks (mpi)" "$tmp/lm-2.log" || true  # --quiet hides the summary line
for r in 1 2 z; do ema_losses "$tmp/lm-$r" > "$tmp/lm-$r.ema"; done
[ "$(wc -l < "$tmp/lm-2.ema")" = 2 ] || fail "lm: 2 ranks logged $(wc -l < "$tmp/lm-2.ema") valid loss_ema, want 2"
close "$tmp/lm-2.ema" "$tmp/lm-1.ema" 1e-4 || fail "lm: the 2-rank moving average's losses differ from the 1-rank run's"
cmp -s "$tmp/lm-z.ema" "$tmp/lm-2.ema" || fail "lm: ZeRO-1's moving average's losses differ from plain data parallel's"

# --- 2. stop (SIGTERM to both ranks) and resume: the uninterrupted losses -------
sed -e 's/"dropout": 0,/"dropout": 0.1,/' -e 's/"steps": 50/"steps": 60/' "$tmp/lm.json" > "$tmp/lmd.json"
run2 "$ks" train --config "$tmp/lmd.json" --out "$tmp/whole" --quiet > /dev/null 2>&1 || fail "resume: the uninterrupted run failed"
run2 "$ks" train --config "$tmp/lmd.json" --set train.checkpoint_every=1 --out "$tmp/cut" --quiet > "$tmp/cut.log" 2>&1 &
for _ in $(seq 1 300); do
  [ "$(grep -c '"split":"train"' "$tmp/cut/metrics.jsonl" 2>/dev/null)" -ge 15 ] 2>/dev/null && break; sleep 0.1
done
kill -TERM $(ranks_of "--out $tmp/cut --quiet") 2>/dev/null  # both ranks, as a job scheduler would
wait
grep -q "stopped at step" "$tmp/cut.log" || fail "resume: the ranks did not stop cleanly: $(tail -5 "$tmp/cut.log")"
run2 "$ks" train --out "$tmp/cut" --resume --set train.checkpoint_every=0 --quiet > "$tmp/resume.log" 2>&1 \
  || fail "resume: $(tail -5 "$tmp/resume.log")"
losses "$tmp/whole" > "$tmp/whole.loss"; losses "$tmp/cut" > "$tmp/cut.loss"
# Every rank's dropout stream is in the checkpoint, and the two differ.
streams=$(head -c 100000 "$tmp/whole/latest.safetensors" | tr -d '\0' | grep -ao '"keystone.rank_rng":"[^"]*"' | head -1)
seeds=$(sed -E 's/.*\[\[([0-9]+),[0-9]+\],\[([0-9]+),[0-9]+\]\].*/\1 \2/' <<<"$streams")
read -r s0 s1 <<<"$seeds"
[ -n "$s0" ] && [ -n "$s1" ] && [ "$s0" != "$s1" ] || fail "resume: the checkpoint's rank streams are not two distinct ones: $streams"
cmp -s "$tmp/whole.loss" "$tmp/cut.loss" || fail "resume: the resumed 2-rank run's losses differ from the uninterrupted one"
ema_losses "$tmp/whole" > "$tmp/whole.ema"; ema_losses "$tmp/cut" > "$tmp/cut.ema"
[ -s "$tmp/whole.ema" ] && cmp -s "$tmp/whole.ema" "$tmp/cut.ema" \
  || fail "resume: the resumed 2-rank run's moving average differs from the uninterrupted one's"
expect_out() {  # expect_out CODE PATTERN LOG
  [ "$1" = "$4" ] && grep -qE -- "$2" "$3" || fail "want exit $1 and /$2/, got exit $4: $(tail -6 "$3")"
}
"$ks" train --out "$tmp/cut" --resume --set train.steps=70 > "$tmp/one.log" 2>&1; rc=$?
expect_out 1 "written by a run of 2 rank\(s\), and this one has 1; resume it with mpirun -np 2" "$tmp/one.log" $rc

# --- 3. a killed rank, a hung rank ---------------------------------------------
sed -e 's/"steps": 50/"steps": 100000/' "$tmp/lm.json" > "$tmp/long.json"
start=$(date +%s)
run2 "$ks" train --config "$tmp/long.json" --set train.eval_every=20 --out "$tmp/killed" --quiet > "$tmp/killed.log" 2>&1 &
mp=$!
for _ in $(seq 1 300); do [ -f "$tmp/killed/latest.safetensors" ] && break; sleep 0.1; done
victim=$(ranks_of "--out $tmp/killed --quiet" 1 | head -1)
[ -n "$victim" ] && kill -KILL "$victim"
wait $mp; rc=$?; took=$(( $(date +%s) - start ))
[ "$rc" != 0 ] && [ "$took" -lt 60 ] || fail "killed rank: mpirun exited $rc after ${took}s (want non-zero, < 60 s)"
grep -qE "rank 1 .*(exited on signal 9|Killed)|process rank 1" "$tmp/killed.log" || fail "killed rank: no message naming rank 1: $(tail -8 "$tmp/killed.log")"
"$ks" eval --run "$tmp/killed" --checkpoint latest > "$tmp/killed-eval.log" 2>&1 || fail "killed rank: the last checkpoint does not load: $(tail -3 "$tmp/killed-eval.log")"
pgrep -f -- "--out $tmp/killed" >/dev/null && fail "killed rank: processes left running"

run2 "$ks" train --config "$tmp/long.json" --set train.collective_timeout=3 --out "$tmp/hung" --quiet > "$tmp/hung.log" 2>&1 &
mp=$!
for _ in $(seq 1 300); do [ "$(grep -c '"split":"train"' "$tmp/hung/metrics.jsonl" 2>/dev/null)" -ge 3 ] 2>/dev/null && break; sleep 0.1; done
victim=$(ranks_of "--out $tmp/hung --quiet" 1 | head -1)
start=$(date +%s)
[ -n "$victim" ] && kill -STOP "$victim"
wait $mp; rc=$?; took=$(( $(date +%s) - start ))
[ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null
[ "$rc" != 0 ] && [ "$took" -lt 40 ] || fail "hung rank: mpirun exited $rc after ${took}s (want non-zero, < 40 s)"
grep -q "rank 1 does not respond" "$tmp/hung.log" || fail "hung rank: rank 0 did not name rank 1: $(tail -8 "$tmp/hung.log")"

# --- 4. bad launches -------------------------------------------------------------
run2 "$ks" train --config "$tmp/s2s.json" --set train.batch_size=300 --out "$tmp/big" --quiet > "$tmp/big.log" 2>&1; rc=$?
expect_out 1 "2 ranks x train.batch_size 300 = 600 examples per step, but the training split has only" "$tmp/big.log" $rc
mpirun --oversubscribe -np 1 "$ks" train --config "$tmp/lm.json" --out "$tmp/mix" --quiet : \
  -np 1 "$ks" train --config "$tmp/lm.json" --set model.d_ff=40 --out "$tmp/mix" --quiet > "$tmp/mix.log" 2>&1; rc=$?
expect_out 1 "the config of rank\(s\) 1 differs from rank 0's \(model.d_ff\)" "$tmp/mix.log" $rc

# --- 5. a streamed token_shards data set -------------------------------------------
# Each rank computes the same global batch of windows from (seed, epoch, position) and
# takes its half: 2 ranks x 4 windows give the losses of 1 rank x 8, and a SIGTERM +
# resume on 2 ranks gives the uninterrupted 2-rank losses exactly.
"$ks" tokenize "$tmp/lines.txt" --out "$tmp/shards" --name lines --doc-sep line --valid-fraction 0.2 \
  --shard-tokens 3000 --quiet > /dev/null 2>&1 || fail "shards: keystone tokenize failed"
cat > "$tmp/shards.json" <<JSON
{"name": "dp-shards", "seed": 4,
 "data": {"dataset": "token_shards", "dir": "$tmp/shards", "name": "lines", "seq_len": 24, "valid_windows": 8,
          "test_windows": 8},
 "model": {"d_model": 32, "layers": 1, "dropout": 0, "attention": {"heads": 2}},
 "schedule": {"type": "constant"},
 "train": {"steps": 40, "batch_size": 4, "eval_every": 20, "log_every": 1, "threads": 1}}
JSON
"$ks" train --config "$tmp/shards.json" --set train.batch_size=8 --out "$tmp/sh-1" --quiet > "$tmp/sh-1.log" 2>&1 \
  || fail "shards: 1 rank: $(tail -3 "$tmp/sh-1.log")"
run2 "$ks" train --config "$tmp/shards.json" --out "$tmp/sh-2" --quiet > "$tmp/sh-2.log" 2>&1 \
  || fail "shards: 2 ranks: $(tail -5 "$tmp/sh-2.log")"
losses "$tmp/sh-1" > "$tmp/sh-1.loss"; losses "$tmp/sh-2" > "$tmp/sh-2.loss"
[ "$(wc -l < "$tmp/sh-2.loss")" = 40 ] || fail "shards: 2 ranks logged $(wc -l < "$tmp/sh-2.loss") train records, want 40"
close "$tmp/sh-2.loss" "$tmp/sh-1.loss" 2e-5 || fail "shards: 2-rank losses differ from the 1-rank run on the global batch"
run2 "$ks" train --config "$tmp/shards.json" --set train.checkpoint_every=1 --out "$tmp/sh-cut" --quiet > "$tmp/sh-cut.log" 2>&1 &
for _ in $(seq 1 300); do
  [ "$(grep -c '"split":"train"' "$tmp/sh-cut/metrics.jsonl" 2>/dev/null)" -ge 15 ] 2>/dev/null && break; sleep 0.1
done
kill -TERM $(ranks_of "--out $tmp/sh-cut --quiet") 2>/dev/null
wait
run2 "$ks" train --out "$tmp/sh-cut" --resume --set train.checkpoint_every=0 --quiet > "$tmp/sh-resume.log" 2>&1 \
  || fail "shards: resume: $(tail -5 "$tmp/sh-resume.log")"
losses "$tmp/sh-cut" > "$tmp/sh-cut.loss"
cmp -s "$tmp/sh-2.loss" "$tmp/sh-cut.loss" || fail "shards: the resumed 2-rank run's losses differ from the uninterrupted one"

if [ "$fails" -gt 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "all distributed training checks passed"
