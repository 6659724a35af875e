#!/usr/bin/env bash
# tests/tools/test_cli_tokenize.sh — `keystone tokenize` end to end on small
# generated text: the shards' bytes (byte tokenizer: each document is the
# end-of-text id 2 then its bytes + 4), gzip/xz/zstd inputs equal to their
# plain text, folders and globs, --doc-sep, the validation split, byte-identical
# shards at 1 and 2 threads, bpe:N, and every refusal: an error naming the
# problem, a non-zero exit and no shard (or temporary file) left behind.
# Each check: `expect CODE PATTERN -- command` (tests/tools/expect.sh).
source "$(dirname "$0")/expect.sh"
ks="$1"

# A corpus: paragraphs of lines, with some UTF-8, in three files and a subfolder.
mkdir -p "$tmp/corpus/sub"
for f in a b c; do
  for i in $(seq 1 300); do
    echo "Line $i of $f: the quick brown fox — naïve café $((i * 7 % 13)) jumps over the lazy dog."
    [ $((i % 9)) = 0 ] && echo
  done > "$tmp/corpus/$f.txt"
done
cp "$tmp/corpus/c.txt" "$tmp/corpus/sub/d.txt"
gzip -c "$tmp/corpus/a.txt" > "$tmp/a.txt.gz"
xz -c "$tmp/corpus/b.txt" > "$tmp/b.txt.xz"
command -v zstd >/dev/null && zstd -q -c "$tmp/corpus/c.txt" > "$tmp/c.txt.zst"

# What the shards hold, decoded for the byte tokenizer: every document "<2>" then its text.
decode() {  # decode DIR NAME SPLIT -> the split's ids as text, <eot> for 2
  python3 - "$@" <<'PY'
import glob, struct, sys
d, name, split = sys.argv[1:4]
out = bytearray()
for f in sorted(glob.glob(f"{d}/{name}_{split}_*.bin")):
    b = open(f, "rb").read()
    magic, version, n = struct.unpack("<3i", b[:12])
    assert (magic, version) == (20240520, 1) and len(b) == 1024 + 2 * n, f
    for t in struct.unpack(f"<{n}H", b[1024:]):
        out += b"<eot>" if t == 2 else bytes([t - 4])
sys.stdout.buffer.write(bytes(out))
PY
}

# --- 1. plain text, byte tokenizer: the exact ids; shards cut at --shard-tokens ---------------------------------------
expect 0 "tokenized 2 files .* 5 train shards \(47,390 tokens, 2 documents\)" -- "$ks" tokenize "$tmp/corpus/a.txt" "$tmp/corpus/b.txt" --out "$tmp/o1" --shard-tokens 10000 --quiet
want=$( { printf '<eot>'; cat "$tmp/corpus/a.txt"; printf '<eot>'; cat "$tmp/corpus/b.txt"; } | od -An -tx1)
got=$(decode "$tmp/o1" corpus train | od -An -tx1)
[ "$want" = "$got" ] || { echo "FAIL: the byte shards are not <eot>a.txt<eot>b.txt"; fails=$((fails + 1)); }
for f in 000000 000001 000002 000003; do
  [ "$(stat -c %s "$tmp/o1/corpus_train_$f.bin")" = 21024 ] || { echo "FAIL: shard $f is not 10000 tokens"; fails=$((fails + 1)); }
done
[ -f "$tmp/o1/corpus_manifest.json" ] && [ -f "$tmp/o1/corpus_tokenizer.json" ] || { echo "FAIL: no manifest or tokenizer"; fails=$((fails + 1)); }
grep -q '"type": "byte"' "$tmp/o1/corpus_tokenizer.json" || { echo "FAIL: the tokenizer file is not the byte tokenizer"; fails=$((fails + 1)); }

# --- 2. compressed inputs give the shards of their plain text ----------------------------------------------------------
expect 0 "tokenized 2 files" -- "$ks" tokenize "$tmp/a.txt.gz" "$tmp/b.txt.xz" --out "$tmp/o2" --shard-tokens 10000 --quiet
cmp -s <(cat "$tmp"/o1/corpus_train_*.bin) <(cat "$tmp"/o2/corpus_train_*.bin) || { echo "FAIL: gzip/xz shards differ from plain"; fails=$((fails + 1)); }
grep -q '"compression": "xz"' "$tmp/o2/corpus_manifest.json" || { echo "FAIL: manifest lacks the xz input"; fails=$((fails + 1)); }
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert m['splits']['train']['tokens']==sum(i['tokens']['train'] for i in m['inputs'])" "$tmp/o2/corpus_manifest.json" \
  || { echo "FAIL: manifest token counts do not add up"; fails=$((fails + 1)); }
if [ -f "$tmp/c.txt.zst" ]; then
  expect 0 "tokenized 1 file" -- "$ks" tokenize "$tmp/c.txt.zst" --out "$tmp/o2z" --quiet
  expect 0 "tokenized 1 file" -- "$ks" tokenize "$tmp/corpus/c.txt" --out "$tmp/o2p" --quiet
  cmp -s "$tmp/o2z/corpus_train_000000.bin" "$tmp/o2p/corpus_train_000000.bin" || { echo "FAIL: zstd shard differs from plain"; fails=$((fails + 1)); }
fi

# --- 3. determinism: 1 thread and 2 threads, small chunks, every split mode, a folder and a glob ---------------------
# (--doc-sep file has 4 documents here: too few to hold a fifth of them out.)
for sep in file blank-line line; do
  valid=(--valid-fraction 0.2 --seed 3)
  [ $sep = file ] && valid=()
  for t in 1 2; do
    expect 0 "tokenized 4 files" -- "$ks" tokenize "$tmp/corpus" --out "$tmp/det-$sep-$t" --threads $t --chunk-bytes 4096 \
      --doc-sep $sep "${valid[@]}" --shard-tokens 5000 --quiet
  done
  a=$(cd "$tmp/det-$sep-1" && md5sum *.bin) b=$(cd "$tmp/det-$sep-2" && md5sum *.bin)
  [ "$a" = "$b" ] && [ -n "$a" ] || { echo "FAIL: --doc-sep $sep: 1 and 2 threads give different shards"; fails=$((fails + 1)); }
done
# Documents per mode: file 4, blank-line 4 × 34 paragraphs, line 4 × 300.
docs() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['splits']['train']['documents']+m['splits']['val']['documents'])" "$1/corpus_manifest.json"; }
[ "$(docs "$tmp/det-file-1")" = 4 ] || { echo "FAIL: --doc-sep file: want 4 documents, got $(docs "$tmp/det-file-1")"; fails=$((fails + 1)); }
[ "$(docs "$tmp/det-blank-line-1")" = 136 ] || { echo "FAIL: --doc-sep blank-line: want 136, got $(docs "$tmp/det-blank-line-1")"; fails=$((fails + 1)); }
[ "$(docs "$tmp/det-line-1")" = 1200 ] || { echo "FAIL: --doc-sep line: want 1200, got $(docs "$tmp/det-line-1")"; fails=$((fails + 1)); }
ls "$tmp"/det-line-1/corpus_val_000000.bin >/dev/null || { echo "FAIL: no val shard"; fails=$((fails + 1)); }
# Line mode: every line is a document of its own, newline dropped; train and val hold every line once.
python3 - "$tmp" <<'PY' || { echo "FAIL: --doc-sep line does not hold each line once"; fails=$((fails + 1)); }
import glob, struct, sys
t = sys.argv[1]
docs = []
for split in ("train", "val"):
    ids = []
    for f in sorted(glob.glob(f"{t}/det-line-1/corpus_{split}_*.bin")):
        b = open(f, "rb").read(); n = struct.unpack("<i", b[8:12])[0]; ids += struct.unpack(f"<{n}H", b[1024:])
    docs += bytes(i - 4 if i != 2 else 0 for i in ids).split(b"\0")[1:]
lines = [l for f in sorted(glob.glob(f"{t}/corpus/**/*.txt", recursive=True)) for l in open(f, "rb").read().split(b"\n") if l]
assert sorted(docs) == sorted(lines), (len(docs), len(lines))
PY
# A glob, and --valid naming held-out files.
expect 0 "1 val shard" -- "$ks" tokenize "$tmp/corpus/[ab].txt" --valid "$tmp/corpus/c.txt" --out "$tmp/o3" --quiet
[ "$(decode "$tmp/o3" corpus val | od -An -tx1)" = "$( { printf '<eot>'; cat "$tmp/corpus/c.txt"; } | od -An -tx1)" ] || { echo "FAIL: --valid c.txt is not the val shard"; fails=$((fails + 1)); }

# --- 4. tokenizers: a trained BPE, a run folder's / a saved tokenizer.json -------------------------------------------
# Trained on one thread, then the saved file on two, with chunks small enough that documents are cut.
expect 0 "tokenized 4 files" -- "$ks" tokenize "$tmp/corpus" --tokenizer bpe:300 --out "$tmp/o4" --quiet --threads 1 --chunk-bytes 4096
grep -q '"type": "bpe"' "$tmp/o4/corpus_tokenizer.json" || { echo "FAIL: bpe:300 did not save a bpe tokenizer"; fails=$((fails + 1)); }
expect 0 "tokenized 4 files" -- "$ks" tokenize "$tmp/corpus" --tokenizer "$tmp/o4/corpus_tokenizer.json" --out "$tmp/o5" --quiet --threads 2 --chunk-bytes 4096
cmp -s "$tmp/o4/corpus_train_000000.bin" "$tmp/o5/corpus_train_000000.bin" || { echo "FAIL: the saved bpe tokenizer gives other shards"; fails=$((fails + 1)); }
mkdir -p "$tmp/run" && cp "$tmp/o4/corpus_tokenizer.json" "$tmp/run/tokenizer.json"
expect 0 "tokenized 4 files" -- "$ks" tokenize "$tmp/corpus" --tokenizer "$tmp/run" --out "$tmp/o6" --quiet --eot none
# With --eot none no id 2 appears in a shard of text without <eos>.
python3 -c "import struct,sys; b=open(sys.argv[1],'rb').read(); n=struct.unpack('<i',b[8:12])[0]; sys.exit(2 in struct.unpack(f'<{n}H', b[1024:]))" "$tmp/o6/corpus_train_000000.bin" \
  || { echo "FAIL: --eot none still wrote id 2"; fails=$((fails + 1)); }

# Hugging Face tokenizer.json files (tests/fuzz/make_seeds.py's), whose <|endoftext|> (263) separates
# documents. Llama 3's pre-tokenizer: cutting the files into 4 KB chunks on 2 threads gives the ids of
# encoding each whole (1 MiB chunks) on 1: the cuts fall where the pre-tokenizer cuts anyway. The GPT-2
# seed has add_prefix_space, which puts a space before every piece: warned, and still deterministic.
python3 "$(dirname "$0")/../fuzz/make_seeds.py" "$tmp/seeds"
hf="$tmp/seeds/tokenizer/hf_llama3"
expect 0 "tokenized 4 files" -- "$ks" tokenize "$tmp/corpus" --tokenizer "$hf" --out "$tmp/hf-whole" --quiet --threads 1
expect 0 "tokenized 4 files" -- "$ks" tokenize "$tmp/corpus" --tokenizer "$hf" --out "$tmp/hf-cut" --quiet --threads 2 --chunk-bytes 4096
cmp -s "$tmp/hf-whole/corpus_train_000000.bin" "$tmp/hf-cut/corpus_train_000000.bin" \
  || { echo "FAIL: hf llama3: 4 KB chunks on 2 threads change the ids"; fails=$((fails + 1)); }
grep -q '"eot_id": 263' "$tmp/hf-whole/corpus_manifest.json" || { echo "FAIL: hf: <|endoftext|> (263) is not the eot"; fails=$((fails + 1)); }
hf="$tmp/seeds/tokenizer/hf_gpt2"
for t in 1 2; do
  expect 0 "warning: this tokenizer adds a space before each text it encodes" -- "$ks" tokenize "$tmp/corpus" --tokenizer "$hf" --out "$tmp/hf2-$t" --quiet --threads $t --chunk-bytes 4096
done
cmp -s "$tmp/hf2-1/corpus_train_000000.bin" "$tmp/hf2-2/corpus_train_000000.bin" || { echo "FAIL: hf gpt2: 1 and 2 threads differ"; fails=$((fails + 1)); }
expect 0 "tokenized 4 files" -- "$ks" tokenize "$tmp/corpus" --tokenizer bpe:300 --out "$tmp/o4-whole" --quiet --threads 1
cmp -s "$tmp/o4/corpus_train_000000.bin" "$tmp/o4-whole/corpus_train_000000.bin" || { echo "FAIL: bpe: 4 KB chunks change the ids"; fails=$((fails + 1)); }

# --- 5. refusals: named, exit non-zero, nothing left --------------------------------------------------------------------
none_left() {  # none_left DIR: no shard and no temporary file in DIR
  if ls -A "$1" 2>/dev/null | grep -qE '\.bin|tmp-'; then echo "FAIL: $1 holds shards after an error: $(ls -A "$1")"; fails=$((fails + 1)); fi
}
ok="$tmp/corpus/a.txt"
expect 1 "tokenize: file not found: $tmp/nope.txt" -- "$ks" tokenize "$ok" "$tmp/nope.txt" --out "$tmp/e1"
none_left "$tmp/e1"
expect 1 "the pattern $tmp/corpus/\*.md matches no file" -- "$ks" tokenize "$tmp/corpus/*.md" --out "$tmp/e2"
mkdir -p "$tmp/empty"
expect 1 "the folder $tmp/empty has no files in it" -- "$ks" tokenize "$tmp/empty" --out "$tmp/e2"
bzip2 -c "$ok" > "$tmp/a.txt.bz2" 2>/dev/null || printf 'BZh91AY&SY' > "$tmp/a.txt.bz2"
expect 1 "$tmp/a.txt.bz2 is compressed with bzip2 \(bunzip2 -k first\); keystone tokenize reads plain text, gzip, xz and zstd" -- "$ks" tokenize "$ok" "$tmp/a.txt.bz2" --out "$tmp/e3"
none_left "$tmp/e3"
# A corrupt gzip (bytes flipped in the middle) after a good file: the good one's shard is not left behind.
cp "$tmp/a.txt.gz" "$tmp/bad.gz" && printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$tmp/bad.gz" bs=1 seek=200 conv=notrunc 2>/dev/null
expect 1 "tokenize: $tmp/bad.gz: corrupt gzip data \(zlib: " -- "$ks" tokenize "$ok" "$tmp/bad.gz" --out "$tmp/e4" --shard-tokens 1000
none_left "$tmp/e4"
head -c 300 "$tmp/a.txt.gz" > "$tmp/cut.gz"
expect 1 "$tmp/cut.gz: truncated gzip data" -- "$ks" tokenize "$tmp/cut.gz" --out "$tmp/e5"
head -c 300 "$tmp/b.txt.xz" > "$tmp/cut.xz"
expect 1 "$tmp/cut.xz: truncated xz data" -- "$ks" tokenize "$tmp/cut.xz" --out "$tmp/e5"
if [ -f "$tmp/c.txt.zst" ]; then
  head -c 300 "$tmp/c.txt.zst" > "$tmp/cut.zst"
  expect 1 "$tmp/cut.zst: truncated zstd data" -- "$ks" tokenize "$tmp/cut.zst" --out "$tmp/e5"
fi
printf 'plain text' > "$tmp/fake.gz"
expect 1 "$tmp/fake.gz is named .gz but is not gzip data \(it starts with 70 6C 61 69 6E 20\)" -- "$ks" tokenize "$tmp/fake.gz" --out "$tmp/e5"
none_left "$tmp/e5"
{ printf '\xff\xfe'; iconv -f UTF-8 -t UTF-16LE "$ok"; } > "$tmp/utf16.txt"
expect 1 "tokenize: $tmp/utf16.txt looks like UTF-16 LE \(byte-order mark FF FE\), not UTF-8" -- "$ks" tokenize "$tmp/utf16.txt" --out "$tmp/e6"
iconv -f UTF-8 -t UTF-16LE "$ok" | gzip > "$tmp/utf16.txt.gz"
expect 1 "$tmp/utf16.txt.gz looks like UTF-16 LE" -- "$ks" tokenize "$tmp/utf16.txt.gz" --out "$tmp/e6"
none_left "$tmp/e6"
mkfifo "$tmp/fifo"
expect 1 "is not a regular file \(it is a FIFO\)" -- timeout 10 "$ks" tokenize "$tmp/fifo" --out "$tmp/e7"
: > "$tmp/empty.txt"
expect 1 "the training inputs hold no text" -- "$ks" tokenize "$tmp/empty.txt" --out "$tmp/e7"
none_left "$tmp/e7"
# Bad flags: usage errors (exit 2).
expect 2 "--out DIR is required" -- "$ks" tokenize "$ok"
expect 2 "no input: name text files" -- "$ks" tokenize --out "$tmp/e8"
expect 2 "unknown flag --shards" -- "$ks" tokenize "$ok" --out "$tmp/e8" --shards 5
expect 2 "--shard-tokens: must be at least 1, got 0" -- "$ks" tokenize "$ok" --out "$tmp/e8" --shard-tokens 0
expect 2 "--shard-tokens: must be at most 2147483647" -- "$ks" tokenize "$ok" --out "$tmp/e8" --shard-tokens 3000000000
expect 2 "--valid-fraction: must be in \[0, 1\), got 1.5" -- "$ks" tokenize "$ok" --out "$tmp/e8" --valid-fraction 1.5
expect 2 "--doc-sep: expected file, blank-line or line, got 'para'" -- "$ks" tokenize "$ok" --out "$tmp/e8" --doc-sep para
expect 2 "give one way of holding out" -- "$ks" tokenize "$ok" --out "$tmp/e8" --valid "$tmp/corpus/b.txt" --valid-fraction 0.1
expect 2 "--tokenizer bpe:N: N must be an integer in \[260" -- "$ks" tokenize "$ok" --out "$tmp/e8" --tokenizer bpe:10
expect 2 "--eot: expected an id of the tokenizer \(0..259\) or none, got '999'" -- "$ks" tokenize "$ok" --out "$tmp/e8" --eot 999
expect 1 "--tokenizer $tmp/nope.json: not byte, bpe:N, a tokenizer.json or a run folder" -- "$ks" tokenize "$ok" --out "$tmp/e8" --tokenizer "$tmp/nope.json"
expect 1 "is both an input and a --valid input" -- "$ks" tokenize "$ok" --out "$tmp/e8" --valid "$ok"
expect 1 "no document was held out for validation" -- "$ks" tokenize "$ok" --out "$tmp/e8" --valid-fraction 0.01
none_left "$tmp/e8"
# An earlier run of the name: refused, then replaced with --overwrite (its extra shards removed).
expect 1 "already holds shards named corpus .*give --overwrite" -- "$ks" tokenize "$ok" --out "$tmp/o1"
expect 0 "1 train shard " -- "$ks" tokenize "$ok" --out "$tmp/o1" --overwrite --quiet
[ "$(ls "$tmp"/o1/*.bin | wc -l)" = 1 ] || { echo "FAIL: --overwrite left stale shards: $(ls "$tmp/o1")"; fails=$((fails + 1)); }
expect 0 "usage: keystone tokenize INPUT" -- "$ks" tokenize --help

finish "keystone tokenize: shards, determinism and refusals as documented"
