#!/usr/bin/env bash
# tests/tools/test_cli_data.sh — the keystone binary on the readers of user-named data files: encodings, TSV lines, files that are no regular file
# (issue 51's regressions). Each check: `expect CODE PATTERN -- command`
# (tests/tools/expect.sh). Not here: the general usage and training paths
# (test_cli.sh).
source "$(dirname "$0")/expect.sh"
ks="$1"

# The runs the checks read: a word-level LM on a text file, a char-level seq2seq on a TSV.
for i in $(seq 1 120); do echo "the cat sat on the mat $((i % 5))"; done > "$tmp/lines.txt"
cat > "$tmp/lm.json" <<JSON
{"name": "tiny-lm", "data": {"dataset": "text", "train": "$tmp/lines.txt", "seq_len": 8, "tokenizer": {"type": "word"}},
 "model": {"d_model": 16, "layers": 1, "attention": {"heads": 2}},
 "schedule": {"type": "constant"}, "train": {"steps": 2, "batch_size": 4, "eval_every": 2, "threads": 1}}
JSON
for i in $(seq 1 40); do printf 'ab%s\t%sba\n' "$((i % 7))" "$((i % 7))"; done > "$tmp/pairs.tsv"
cat > "$tmp/s2s.json" <<JSON
{"name": "tiny-s2s", "data": {"dataset": "tsv_seq2seq", "train": "$tmp/pairs.tsv", "tokenizer": {"type": "char"}},
 "model": {"d_model": 16, "encoder_layers": 1, "decoder_layers": 1, "attention": {"heads": 2}},
 "schedule": {"type": "constant"}, "train": {"steps": 2, "batch_size": 4, "eval_every": 2, "threads": 1}}
JSON
expect 0 "finished 2 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm" --quiet
expect 0 "finished 2 steps" -- "$ks" train --config "$tmp/s2s.json" --out "$tmp/s2s" --quiet

# --- 1. A file in UTF-16 or UTF-32 is refused, naming the file and the encoding it looks like ---------------------
# lines.txt re-encoded (iconv is Debian's libc-bin): without the check each trained, on NULs between the characters.
wide() { { printf "$1"; iconv -f UTF-8 -t "$2" "$tmp/lines.txt"; } > "$tmp/$3"; }
wide '\xff\xfe' UTF-16LE utf16le-bom.txt
wide '\xfe\xff' UTF-16BE utf16be-bom.txt
wide '' UTF-16LE utf16le.txt
wide '\xff\xfe\0\0' UTF-32LE utf32le-bom.txt
wide '' UTF-32BE utf32be.txt
lm_on() { "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-bad-${1##*/}" --set data.train="$1"; }
expect 1 "text data: $tmp/utf16le-bom.txt looks like UTF-16 LE \(byte-order mark FF FE\), not UTF-8: convert it first, e.g. iconv -f UTF-16 -t UTF-8 $tmp/utf16le-bom.txt" -- lm_on "$tmp/utf16le-bom.txt"
expect 1 "text data: $tmp/utf16be-bom.txt looks like UTF-16 BE \(byte-order mark FE FF\)" -- lm_on "$tmp/utf16be-bom.txt"
expect 1 "text data: $tmp/utf16le.txt looks like UTF-16 LE \(2048 of its first 4096 bytes are NUL, nearly all at odd offsets\).*iconv -f UTF-16LE" -- lm_on "$tmp/utf16le.txt"
expect 1 "text data: $tmp/utf32le-bom.txt looks like UTF-32 LE \(byte-order mark FF FE 00 00\)" -- lm_on "$tmp/utf32le-bom.txt"
expect 1 "text data: $tmp/utf32be.txt looks like UTF-32 BE" -- lm_on "$tmp/utf32be.txt"
ls "$tmp"/lm-bad-*/best.safetensors >/dev/null 2>&1 && { echo "FAIL: a run trained on a UTF-16/32 file"; fails=$((fails + 1)); }
expect 1 "tsv seq2seq: $tmp/utf16le-bom.txt looks like UTF-16 LE" -- "$ks" train --config "$tmp/s2s.json" --out "$tmp/s2s-bad" --set data.valid="$tmp/utf16le-bom.txt"
expect 1 "\-\-prompts: $tmp/utf16le.txt looks like UTF-16 LE" -- "$ks" generate --run "$tmp/lm" --prompts "$tmp/utf16le.txt" --tokens 2
# UTF-8, its byte-order mark too, still trains.
printf '\xef\xbb\xbfthe cat\nsat on the mat\nthe mat\n' > "$tmp/utf8-bom.txt"
expect 0 "finished 1 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-utf8" --quiet --set data.train="$tmp/utf8-bom.txt" --set train.steps=1 --set data.valid="$tmp/utf8-bom.txt" --set data.test="$tmp/utf8-bom.txt"

# --- 2. TSV: an empty side is refused; every bad line is named in one error (the first 20, then a count) -----------
s2s_on() { "$ks" train --config "$tmp/s2s.json" --out "$tmp/s2s-bad-${1##*/}" --set data.train="$1"; }
# Among good lines (without the check, each trained: a target of <eos> alone, a source of nothing).
{ head -1 "$tmp/pairs.tsv"; printf 'word\t\n'; tail -n +2 "$tmp/pairs.tsv"; } > "$tmp/empty-target.tsv"
expect 1 "tsv seq2seq: $tmp/empty-target.tsv:2: empty target" -- s2s_on "$tmp/empty-target.tsv"
{ head -1 "$tmp/pairs.tsv"; printf '\tword\n'; tail -n +2 "$tmp/pairs.tsv"; } > "$tmp/empty-source.tsv"
expect 1 "tsv seq2seq: $tmp/empty-source.tsv:2: empty source" -- s2s_on "$tmp/empty-source.tsv"
for i in $(seq 1 25); do printf 'ok\tko\nbad %s\t\n' "$i"; done > "$tmp/many-bad.tsv"
printf 'no tab\n' >> "$tmp/many-bad.tsv"
expect 1 "tsv seq2seq: 26 bad lines:" -- s2s_on "$tmp/many-bad.tsv"
expect 1 "^  $tmp/many-bad.tsv:2: empty target$" -- s2s_on "$tmp/many-bad.tsv"
expect 1 "^  $tmp/many-bad.tsv:40: empty target$" -- s2s_on "$tmp/many-bad.tsv"
expect 1 "^  and 6 more$" -- s2s_on "$tmp/many-bad.tsv"
out=$(s2s_on "$tmp/many-bad.tsv" 2>&1)
[ "$(grep -c 'empty target$' <<<"$out")" = 20 ] || { echo "FAIL: want 20 bad lines named, got: $out"; fails=$((fails + 1)); }
printf 'good\tpos\nno tab\nbad\tneg\nmeh\t\n' > "$tmp/bad.tsv"
cat > "$tmp/cls.json" <<JSON
{"name": "tiny-cls", "data": {"dataset": "tsv_classification", "train": "$tmp/bad.tsv", "tokenizer": {"type": "char"}},
 "model": {"d_model": 16, "layers": 1, "attention": {"heads": 2}}, "train": {"steps": 1, "batch_size": 2, "threads": 1}}
JSON
expect 1 "tsv classification: 2 bad lines:" -- "$ks" train --config "$tmp/cls.json" --out "$tmp/cls-bad"
expect 1 "^  $tmp/bad.tsv:4: empty label$" -- "$ks" train --config "$tmp/cls.json" --out "$tmp/cls-bad"

# --- 3. Every reader of a user-named file refuses /dev/zero and a FIFO at once (timeout: a hang fails) -------------
mkfifo "$tmp/in.fifo"
mkdir -p "$tmp/hf-fifo" "$tmp/hf-zero"
mkfifo "$tmp/hf-fifo/config.json"
ln -s /dev/zero "$tmp/hf-zero/config.json"
cp -r "$tmp/lm" "$tmp/lm-tok-fifo" && rm "$tmp/lm-tok-fifo/tokenizer.json" && mkfifo "$tmp/lm-tok-fifo/tokenizer.json"
for bad in /dev/zero "$tmp/in.fifo"; do
  if [ "$bad" = /dev/zero ]; then kind="a character device"; hf="$tmp/hf-zero"; else kind="a FIFO"; hf="$tmp/hf-fifo"; fi
  not="is not a regular file \(it is $kind\)"
  expect 1 "text data: $bad $not" -- timeout 10 "$ks" train --config "$tmp/lm.json" --out "$tmp/dev" --set data.train="$bad"
  expect 1 "tsv seq2seq: $bad $not" -- timeout 10 "$ks" train --config "$tmp/s2s.json" --out "$tmp/dev" --set data.test="$bad"
  expect 1 "config: $bad $not" -- timeout 10 "$ks" train --config "$bad" --out "$tmp/dev"
  expect 1 "config: $bad $not" -- timeout 10 "$ks" config --config "$bad"
  expect 1 "\-\-prompts: $bad $not" -- timeout 10 "$ks" generate --run "$tmp/lm" --prompts "$bad"
  expect 1 "translate: $bad $not" -- timeout 10 "$ks" translate --run "$tmp/s2s" --file "$bad"
  expect 1 "\-\-set data.train=$bad: $bad $not" -- timeout 10 "$ks" eval --run "$tmp/lm" --set data.train="$bad"
  expect 1 "$hf/config.json $not" -- timeout 10 "$ks" import --from hf "$hf" --out "$tmp/imp" --data "$tmp/lines.txt"
  expect 1 "plugin $bad: not a regular file" -- timeout 10 "$ks" info --plugin "$bad"
  expect 1 "$bad is not a (regular )?file" -- timeout 10 "$ks" eval --run "$tmp/lm" --checkpoint "$bad"
done
expect 1 "$tmp/lm-tok-fifo/tokenizer.json is not a regular file \(it is a FIFO\)" -- timeout 10 "$ks" eval --run "$tmp/lm-tok-fifo"
# translate's sources are user text too: a UTF-16 file is refused by its encoding.
expect 1 "translate: $tmp/utf16le-bom.txt looks like UTF-16 LE" -- "$ks" translate --run "$tmp/s2s" --file "$tmp/utf16le-bom.txt"
expect 1 "$tmp/lm-tok-fifo/tokenizer.json is not a regular file \(it is a FIFO\)" -- timeout 10 "$ks" generate --run "$tmp/lm-tok-fifo" --prompt the

# --- 4. data.holdout: random (the default) or last (the file's last lines are valid, then test) --------------------
expect 0 '"holdout": "random", +// which lines are cut: random \(drawn by split_seed\) \| last' -- "$ks" config --defaults --dataset text
expect 0 '"holdout": "last"' -- "$ks" config --config "$tmp/lm.json" --set data.holdout=last
expect 1 'config: data.holdout: expected random or last, got "tail"' -- "$ks" config --config "$tmp/lm.json" --set data.holdout=tail
# The last 12 lines (10% valid, 10% test of 120) hold the only "9"s: with holdout last, train never sees one.
for i in $(seq 1 108); do echo "the cat sat on the mat $((i % 5))"; done > "$tmp/ordered.txt"
for i in $(seq 1 12); do echo "the cat sat on the mat 9"; done >> "$tmp/ordered.txt"
expect 0 "finished 1 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-last" --quiet --set data.train="$tmp/ordered.txt" --set data.holdout=last --set train.steps=1
grep -q '"9"' "$tmp/lm-last/tokenizer.json" && { echo "FAIL: holdout last: the tokenizer saw the held-out lines"; fails=$((fails + 1)); }
expect 0 "finished 1 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-random" --quiet --set data.train="$tmp/ordered.txt" --set train.steps=1
grep -q '"9"' "$tmp/lm-random/tokenizer.json" || { echo "FAIL: holdout random: no held-out line was drawn from the end"; fails=$((fails + 1)); }
# A run folder from before the key (no holdout in its config.json) cut at random: its checkpoints, which record
# holdout "random", still load; another holdout in config.json than the checkpoint's is refused.
cp -r "$tmp/lm-random" "$tmp/lm-old"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); del c["data"]["holdout"]; json.dump(c, open(sys.argv[1], "w"))' "$tmp/lm-old/config.json"
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/lm-old"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["data"]["holdout"]="last"; json.dump(c, open(sys.argv[1], "w"))' "$tmp/lm-old/config.json"
expect 1 "was trained with another config than config.json: data.holdout differ" -- "$ks" eval --run "$tmp/lm-old"

finish "test_cli_data.sh: all checks passed"
