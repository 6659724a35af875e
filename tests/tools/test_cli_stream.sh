#!/usr/bin/env bash
# tests/tools/test_cli_stream.sh — the streamed "token_shards" data set end to
# end through the keystone binary: `keystone tokenize` writes shards, `keystone
# train` trains a decoder LM on them, a real Ctrl-C (SIGINT) and a kill -9
# mid-shard followed by --resume reproduce the uninterrupted run's losses
# record for record, eval and generate read the run, keystone info reports
# the data, a mixture of two shard sets trains with per-source counts and
# resumes exactly after SIGINT, a shard cut short under a running job stops
# it naming the file, and a changed or truncated shard is refused naming it.
# Not here: the data set's windows and fingerprints in detail
# (tests/tools/test_token_shards_data.cpp), the loader's permutation
# (tests/datasets/test_loader.cpp).
source "$(dirname "$0")/expect.sh"
ks="$1"

# A small corpus: lines of words, byte-tokenized into shards of 20,000 ids, a tenth of the lines held out.
for i in $(seq 1 3000); do echo "line $i: the cat $((i % 7)) sat on the mat $((i * 13 % 11)) and looked at the dog."; done > "$tmp/corpus.txt"
expect 0 "train shards" -- "$ks" tokenize "$tmp/corpus.txt" --out "$tmp/shards" --name tiny --doc-sep line \
  --valid-fraction 0.1 --shard-tokens 20000 --quiet
ls "$tmp/shards"/tiny_train_000002.bin > /dev/null || { echo "FAIL: fewer than 3 train shards"; fails=$((fails + 1)); }

cat > "$tmp/stream.json" <<JSON
{"name": "stream", "data": {"dataset": "token_shards", "dir": "$tmp/shards", "name": "tiny", "seq_len": 32,
  "valid_windows": 16, "test_windows": 16},
 "model": {"d_model": 16, "layers": 1, "attention": {"type": "softmax", "heads": 2}},
 "schedule": {"type": "constant"},
 "train": {"steps": 300, "batch_size": 8, "eval_every": 50, "checkpoint_every": 10, "threads": 1, "prefetch": 2}}
JSON
expect 0 "\"valid_windows\": 16" -- "$ks" config --config "$tmp/stream.json"
"$ks" train --config "$tmp/stream.json" --out "$tmp/whole" --quiet > "$tmp/whole.log" 2>&1 &&
  grep -q "finished 300 steps" "$tmp/whole.log" &&
  grep -qE "start-up: +[0-9.]+ s from the process's start to the end of its first step" "$tmp/whole.log" ||
  { echo "FAIL: the uninterrupted run: $(cat "$tmp/whole.log")"; fails=$((fails + 1)); }
loss_only() { grep -v '"split":"test"' "$1/metrics.jsonl" | grep -o '"loss":[^,]*,'; }
[ "$(loss_only "$tmp/whole" | wc -l)" -ge 30 ] || { echo "FAIL: the run wrote too few loss records"; fails=$((fails + 1)); }

# Ctrl-C: a real SIGINT saves and exits 130; --resume reproduces the losses.
sigint_then_resume "$tmp/stream.json" "$tmp/int" 300
diff <(loss_only "$tmp/whole") <(loss_only "$tmp/int") > /dev/null \
  || { echo "FAIL: SIGINT + resume: losses differ from the uninterrupted run's"; fails=$((fails + 1)); }

# kill -9 once a checkpoint exists: resume from it gives the same losses.
"$ks" train --config "$tmp/stream.json" --out "$tmp/kill" --quiet > "$tmp/kill.log" 2>&1 &
pid=$!
for _ in $(seq 1 500); do [ -f "$tmp/kill/latest.safetensors" ] && break; sleep 0.01; done
sleep 0.2
kill -KILL "$pid"; wait "$pid" 2>/dev/null; rc=$?
[ "$rc" = 137 ] || echo "note: kill -9 came after the run ended (exit $rc); the resume below is then trivial"
expect 0 "finished 300 steps" -- "$ks" train --out "$tmp/kill" --resume --quiet
diff <(loss_only "$tmp/whole") <(loss_only "$tmp/kill") > /dev/null \
  || { echo "FAIL: kill -9 + resume: losses differ from the uninterrupted run's"; fails=$((fails + 1)); }

# The run reads back: eval on the fixed valid and test windows, generate decodes with the shards' tokenizer.
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/whole" --split valid
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/whole"
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/whole" --split train --batches 3
expect 0 "^line" -- "$ks" generate --run "$tmp/whole" --prompt "line" --tokens 5 --top-k 3

# keystone info reports the shard set's data: tokens, the manifest's documents, the epochs the steps make.
expect 0 '"documents": [0-9]+' -- "$ks" info --config "$tmp/stream.json"
expect 0 '"epochs": [0-9.]+' -- "$ks" info --config "$tmp/stream.json"
# --loader-batches times the training loader alone: 50 batches of 8 windows of 32 ids; 2,000 go past the
# epoch's end (641 batches) into the next, as training does.
expect 0 '"tokens": 12800' -- "$ks" info --config "$tmp/stream.json" --loader-batches 50
expect 0 '"batches": 2000' -- "$ks" info --config "$tmp/stream.json" --loader-batches 2000
echo '{"d_model": 16, "layers": 1, "vocab_size": 64, "attention": {"type": "softmax", "heads": 2}}' > "$tmp/model_only.json"
expect 2 "needs a training config" -- "$ks" info --config "$tmp/model_only.json" --loader-batches 5
expect 2 "loader-batches" -- "$ks" info --config "$tmp/stream.json" --loader-batches -1

# A mixture: a second source (code-like lines) at weight 0.3; the train records carry each source's
# windows, valid records each source's loss; SIGINT + resume reproduces losses and counts exactly.
for i in $(seq 1 800); do echo "int f$i(int x) { return x * $((i % 9)) + $((i % 5)); }"; done > "$tmp/code.txt"
expect 0 "train shard" -- "$ks" tokenize "$tmp/code.txt" --out "$tmp/shards" --name code --doc-sep line \
  --valid-fraction 0.1 --quiet
cat > "$tmp/mix.json" <<JSON
{"name": "mix", "data": {"dataset": "token_shards", "seq_len": 32, "valid_windows": 16, "test_windows": 16,
  "sources": [{"dir": "$tmp/shards", "name": "tiny", "weight": 0.7, "label": "text"},
              {"dir": "$tmp/shards", "name": "code", "weight": 0.3}]},
 "model": {"d_model": 16, "layers": 1, "attention": {"type": "softmax", "heads": 2}},
 "schedule": {"type": "constant"},
 "train": {"steps": 200, "batch_size": 8, "eval_every": 50, "log_every": 10, "checkpoint_every": 10, "threads": 1,
           "prefetch": 2}}
JSON
expect 0 "source code: weight 0.300" -- "$ks" train --config "$tmp/mix.json" --out "$tmp/mix_whole"
counts() { grep '"split":"train"' "$1/metrics.jsonl" | grep -o '"source_windows":{[^}]*}'; }
[ "$(counts "$tmp/mix_whole" | wc -l)" = 20 ] || { echo "FAIL: mixture train records lack source_windows"; fails=$((fails + 1)); }
# Over the 1,600 windows of 200 steps, code's share is within 0.05 of its weight 0.3.
share=$(counts "$tmp/mix_whole" | awk -F'[:,}]' '{c += $3; t += $5} END {printf "%.3f", c / (c + t)}')
awk -v s="$share" 'BEGIN {exit !(s > 0.25 && s < 0.35)}' || { echo "FAIL: code's realised share $share"; fails=$((fails + 1)); }
grep -q '"sources":{"code":{"loss".*"split":"valid"' "$tmp/mix_whole/metrics.jsonl" \
  || { echo "FAIL: the mixture's valid records carry no per-source loss"; fails=$((fails + 1)); }
sigint_then_resume "$tmp/mix.json" "$tmp/mix_int" 200
diff <(loss_only "$tmp/mix_whole") <(loss_only "$tmp/mix_int") > /dev/null \
  || { echo "FAIL: mixture SIGINT + resume: losses differ"; fails=$((fails + 1)); }
diff <(counts "$tmp/mix_whole") <(counts "$tmp/mix_int") > /dev/null \
  || { echo "FAIL: mixture SIGINT + resume: source counts differ"; fails=$((fails + 1)); }
expect 0 '"sources":\{"code":\{"loss"' -- "$ks" eval --run "$tmp/mix_whole" --split valid
sed 's/"weight": 0.3/"weight": -1/' "$tmp/mix.json" > "$tmp/mix_bad.json"
expect 1 "data.sources\[1\].weight: must be a finite number > 0" -- "$ks" train --config "$tmp/mix_bad.json" \
  --out "$tmp/mix_bad" --quiet

# A shard cut short while a job reads it: the job stops with an error naming the file, not a SIGBUS.
cp "$tmp/shards/tiny_train_000002.bin" "$tmp/keep.bin"
"$ks" train --config "$tmp/stream.json" --out "$tmp/cut" --set train.steps=100000 --quiet > "$tmp/cut.log" 2>&1 &
pid=$!
for _ in $(seq 1 500); do [ -s "$tmp/cut/metrics.jsonl" ] && break; sleep 0.01; done
truncate -s 2048 "$tmp/shards/tiny_train_000002.bin"
wait "$pid"; rc=$?
if [ "$rc" != 1 ] || ! grep -q "tiny_train_000002.bin: read .* bytes at offset .*truncated or rewritten while the job ran" "$tmp/cut.log"; then
  echo "FAIL: a shard cut under a running job -> exit $rc (want 1 naming the file): $(tail -3 "$tmp/cut.log")"
  fails=$((fails + 1))
fi
cp "$tmp/keep.bin" "$tmp/shards/tiny_train_000002.bin"

# A shard that changed since the run recorded it stops a resume, naming it; so does a truncated one.
printf '\x05' | dd of="$tmp/shards/tiny_train_000001.bin" bs=1 seek=2000 conv=notrunc status=none
expect 1 "shard $tmp/shards/tiny_train_000001.bin changed since the run recorded it" -- \
  "$ks" train --out "$tmp/whole" --resume --set train.steps=310 --quiet
head -c 5000 "$tmp/shards/tiny_train_000001.bin" > "$tmp/cut.bin" && mv "$tmp/cut.bin" "$tmp/shards/tiny_train_000001.bin"
expect 1 "$tmp/shards/tiny_train_000001.bin" -- "$ks" train --config "$tmp/stream.json" --out "$tmp/fresh" --quiet
rm "$tmp/shards/tiny_train_000001.bin"
expect 1 "shard $tmp/shards/tiny_train_000001.bin is missing" -- "$ks" eval --run "$tmp/whole"

finish "token_shards: tokenize -> train, exact resume after SIGINT and kill -9, mixtures, changed shards refused"
