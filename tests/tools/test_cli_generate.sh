#!/usr/bin/env bash
# tests/tools/test_cli_generate.sh — the keystone binary on generate and translate: output bytes, ids the tokenizer lacks, stop strings, numeric flags
# (issue 51's regressions). Each check: `expect CODE PATTERN -- command`
# (tests/tools/expect.sh). Not here: the general usage and training paths
# (test_cli.sh).
source "$(dirname "$0")/expect.sh"
ks="$1"

# --- Output bytes: a NUL byte is text, not the end of it ----------------------------------------
# A byte-level LM on lines "abcdefghijklm<NUL>" (a NUL in 15 bytes: text, not a binary file) continues
# "hij" with "klm", a NUL and the line's end: every byte reaches stdout (printf's %s stopped at the
# NUL and lost the rest of the line).
for i in $(seq 1 100); do printf 'abcdefghijklm\0\n'; done > "$tmp/nul.txt"
cat > "$tmp/nul.json" <<JSON
{"name": "nul-lm", "data": {"dataset": "text", "train": "$tmp/nul.txt", "seq_len": 32, "tokenizer": {"type": "byte"}},
 "model": {"d_model": 16, "layers": 1, "attention": {"type": "softmax", "heads": 2}},
 "schedule": {"type": "constant"}, "optimizer": {"lr": 0.01},
 "train": {"steps": 60, "batch_size": 8, "eval_every": 60, "threads": 1}}
JSON
expect 0 "finished 60 steps" -- "$ks" train --config "$tmp/nul.json" --out "$tmp/nul" --quiet
bytes() { od -An -c | tr -d ' \n'; }  # the output's bytes, \0 and \n spelled out
got=$("$ks" generate --run "$tmp/nul" --prompt hij --tokens 12 --greedy | bytes)
[ "$got" = 'hijklm\0\nabcdefg\n' ] || { echo "FAIL: generate lost bytes at a NUL: $got"; fails=$((fails + 1)); }

# --- Stop strings: escapes are read ("\n" is a newline), malformed ones refused by name ----------
# --stop "\n", as docs/training.md writes it, passes a backslash and an n: it ends at the line's end now.
got=$("$ks" generate --run "$tmp/nul" --prompt hij --tokens 12 --greedy --stop "\n" | bytes)
[ "$got" = 'hijklm\0\n' ] || { echo "FAIL: generate --stop \"\\n\" did not end at the line's end: $got"; fails=$((fails + 1)); }
got=$("$ks" generate --run "$tmp/nul" --prompt hij --tokens 12 --greedy --stop '\x00' | bytes)
[ "$got" = 'hijklm\n' ] || { echo "FAIL: generate --stop '\\x00' did not cut at the NUL: $got"; fails=$((fails + 1)); }
got=$("$ks" generate --run "$tmp/nul" --prompt hij --tokens 12 --greedy --stop 'zz' --stop '\u006c' | bytes)
[ "$got" = 'hijk\n' ] || { echo "FAIL: generate --stop '\\u006c' did not cut at the l: $got"; fails=$((fails + 1)); }
got=$("$ks" generate --run "$tmp/nul" --prompt hij --tokens 12 --greedy --stop '\\n' | bytes)
[ "$got" = 'hijklm\0\nabcdefg\n' ] || { echo "FAIL: generate --stop '\\\\n' (a backslash, an n) cut the text: $got"; fails=$((fails + 1)); }
expect 2 "--stop 'a\\\\q': unknown escape \\\\q at offset 1 \(known: " -- "$ks" generate --run "$tmp/nul" --stop 'a\q'
expect 2 "--stop 'x\\\\': a backslash ends the text at offset 1" -- "$ks" generate --run "$tmp/nul" --stop 'x\'
expect 2 "--stop '\\\\x4': escape \\\\x at offset 0 needs two hex digits" -- "$ks" generate --run "$tmp/nul" --stop '\x4'
expect 0 'Its escapes are read: \\n \\t' -- "$ks" generate --help

# --- A padded vocabulary: ids the tokenizer lacks print as nothing, with a note ------------------
# model.vocab_size 512 over the byte tokenizer's 260 ids: an untrained model emits ids 260..511 about
# half the time. Decoding them used to abort generate with no output.
expect 0 "finished 1 steps" -- "$ks" train --config "$tmp/nul.json" --out "$tmp/padded" --quiet \
  --set model.vocab_size=512 --set train.steps=1 --set train.eval_every=1
expect 0 "generate: note: skipped [0-9]+ generated ids that the tokenizer lacks \(it has 260 ids, the model's vocabulary 512\)" \
  -- "$ks" generate --run "$tmp/padded" --prompt a --tokens 20 --temperature 3 --seed 1
expect 0 "^a" -- "$ks" generate --run "$tmp/padded" --prompt a --tokens 20 --temperature 3 --seed 1
expect 0 "generate: note: skipped" -- "$ks" generate --run "$tmp/padded" --prompt a --tokens 20 --temperature 3 --samples 3 --batch 3
expect 0 "^a" -- "$ks" generate --run "$tmp/padded" --prompt a --tokens 20 --beam 2
# translate, with a seq2seq model whose target vocabulary is padded past its tokenizer's.
cat > "$tmp/s2s.json" <<'JSON'
{"name": "tiny-reverse", "seed": 1,
 "data": {"dataset": "seq2seq", "task": "reverse", "max_length": 5, "train_size": 50, "valid_size": 10, "test_size": 10},
 "model": {"d_model": 16, "encoder_layers": 1, "decoder_layers": 1, "attention": {"heads": 2}},
 "train": {"steps": 1, "batch_size": 8, "eval_every": 1, "threads": 1}}
JSON
expect 0 "finished 1 steps" -- "$ks" train --config "$tmp/s2s.json" --out "$tmp/s2s-padded" --quiet --set model.tgt_vocab_size=200
expect 0 "translate: note: skipped [0-9]+ output ids that the target tokenizer lacks" \
  -- "$ks" translate --run "$tmp/s2s-padded" --input 123
expect 0 "exact match: [0-9]+ of 10" -- "$ks" translate --run "$tmp/s2s-padded" --split test

# --- Numeric flags: subnormals are numbers, overflows and oversized sizes are refused by name -----
# 1e-320 was "expected a number". Keystone flushes denormals to zero by default, so a subnormal is
# refused as such; with KS_FLUSH_DENORMALS=0 it is taken, and each flag's own range applies.
for flag in temperature repetition-penalty; do
  expect 2 "--$flag: 1e-320 is a subnormal number \(below 2.2e-308\), which Keystone's math reads as 0" \
    -- "$ks" generate --run "$tmp/nul" --prompt hij --tokens 3 --$flag 1e-320
  KS_FLUSH_DENORMALS=0 expect 0 "^hij" -- "$ks" generate --run "$tmp/nul" --prompt hij --tokens 3 --$flag 1e-320
done
expect 2 "--tolerance: 1e-320 is a subnormal number" -- "$ks" analyze --run "$tmp/none" --tolerance 1e-320
KS_FLUSH_DENORMALS=0 expect 2 "--run $tmp/none: no such run folder" -- "$ks" analyze --run "$tmp/none" --tolerance 1e-320
expect 2 "--tolerance: expected a number in \(0, 1\)" -- "$ks" analyze --run "$tmp/none" --tolerance 0
KS_FLUSH_DENORMALS=0 expect 2 "--temperature: must be positive and finite, got -9.99989e-321" \
  -- "$ks" generate --run "$tmp/nul" --temperature -1e-320
expect 2 "--temperature: 1e999 is out of range \(a number here lies within \+-1.8e308\)" -- "$ks" generate --run "$tmp/nul" --temperature 1e999
expect 2 "--temperature: must be positive and finite, got inf" -- "$ks" generate --run "$tmp/nul" --temperature inf
expect 2 "--seed: 99999999999999999999 is out of range \(an integer here lies within \+-2\^63\)" \
  -- "$ks" generate --run "$tmp/nul" --seed 99999999999999999999
expect 2 "--tokens: expected an integer, got '1e3'" -- "$ks" generate --run "$tmp/nul" --tokens 1e3
expect 2 "--tokens: expected an integer, got ' 3'" -- "$ks" generate --run "$tmp/nul" --tokens " 3"
# Sizes are bounded before anything is allocated (--beam 100000000 asked translate for 19 GB).
expect 2 "--beam: must be at most 256, got 100000000" -- "$ks" translate --run "$tmp/s2s-padded" --input 1 --beam 100000000
expect 2 "--beam: must be at most 256, got 100000000" -- "$ks" generate --run "$tmp/nul" --beam 100000000
expect 2 "--batch: must be at most 4096, got 1000000000000" -- "$ks" generate --run "$tmp/nul" --batch 1000000000000
expect 2 "--samples: must be at most 1000000, got 100000000" -- "$ks" generate --run "$tmp/nul" --samples 100000000
expect 2 "--alpha: expected a finite number, got nan" -- "$ks" translate --run "$tmp/s2s-padded" --input 1 --alpha nan

# --- Newcomer text -------------------------------------------------------------------------------
expect 0 "import +a Hugging Face model folder \(GPT-2 or Llama" -- "$ks" --help
expect 0 '"target_tokenizer": "<absent>",? +// the targets. own tokenizer' -- "$ks" config --defaults --dataset tsv_seq2seq

finish "test_cli_generate.sh: all checks passed"
