#!/usr/bin/env bash
# tools/bench/tokenize_vs_tiktoken.sh — `keystone tokenize` at one and two
# threads against OpenAI's tiktoken (npm `tiktoken`: its Rust core as
# WebAssembly, one thread; tools/bench/tiktoken_encode.mjs) on the same text
# with the same tokenizer, GPT-2's (written as a Hugging Face tokenizer.json
# from tiktoken's own ranks by tools/bench/tiktoken_to_hf.py), each run in
# turn, after checking that both give the same ids.
#   bash tools/bench/tokenize_vs_tiktoken.sh [MB (default 1024)] [ROUNDS (default 2)]
# The text: the plain-text licences Debian installs (/usr/share/common-licenses
# and every /usr/share/doc/*/copyright, sorted), repeated whole until at least MB
# megabytes, one file, every line a document (--doc-sep line). Work files go to
# runs/bench/tokenize (the corpus stays for the next run; delete it after).
# Needs build/keystone, node and npm (tiktoken is fetched with `npm pack`
# once). Not a test: it prints figures; docs/data.md has a run and its reading.
set -euo pipefail
cd "$(dirname "$0")/../.."
mb="${1:-1024}"
rounds="${2:-2}"
. tools/bench/args.sh
counts MB "$mb"
counts ROUNDS "$rounds"
needs_keystone
command -v node >/dev/null || { echo "node not found: apt-get install nodejs npm" >&2; exit 2; }
work=runs/bench/tokenize
mkdir -p "$work"
if [ ! -f "$work/package/tiktoken.cjs" ]; then
  (cd "$work" && rm -f tiktoken-*.tgz && npm pack tiktoken --silent >/dev/null && tar xzf tiktoken-*.tgz)
fi
python3 tools/bench/tiktoken_to_hf.py "$work/package/encoders/gpt2.json" "$work/gpt2_tokenizer.json" >/dev/null
corpus="$work/corpus_${mb}MB.txt"
if [ ! -f "$corpus" ]; then
  base="$work/base.txt"
  find /usr/share/common-licenses /usr/share/doc -maxdepth 2 \( -path '/usr/share/common-licenses/*' -o -name copyright \) \
    -type f -print0 | sort -z | xargs -0 cat > "$base"
  [ -s "$base" ] || { echo "no licence texts found under /usr/share" >&2; exit 2; }
  : > "$corpus.partial"
  while [ "$(stat -c %s "$corpus.partial")" -lt $((mb * 1000000)) ]; do cat "$base" >> "$corpus.partial"; done
  mv "$corpus.partial" "$corpus"
fi
bytes=$(stat -c %s "$corpus")
# Same ids: the first 20 MB (whole lines) through both.
sample="$work/sample.txt"
head -c 20000000 "$corpus" | head -n -1 > "$sample"
rm -rf "$work/check"
./build/keystone tokenize "$sample" --tokenizer "$work/gpt2_tokenizer.json" --doc-sep line --shard-tokens 1000000000 \
  --out "$work/check" --quiet >/dev/null
node tools/bench/tiktoken_encode.mjs "$work/package" "$sample" "$work/check/tiktoken.ids" >/dev/null
if tail -c +1025 "$work/check/corpus_train_000000.bin" | cmp -s - "$work/check/tiktoken.ids"; then
  same="same ids on the first $(($(stat -c %s "$sample") / 1000000)) MB"
else
  echo "keystone and tiktoken give different ids on $sample (see $work/check)" >&2
  exit 1
fi
cpu=$(keystone_cpu)
echo "# $cpu, $(nproc) cores, $(date -u +%F), $(git rev-parse --short HEAD), $((bytes / 1000000)) MB of text, GPT-2 BPE, $same"
printf "%5s %-22s %8s %8s %10s %12s\n" round engine wall_s MB/s Mtokens cpu_s
for r in $(seq 1 "$rounds"); do
  for t in 1 2; do
    rm -rf "$work/out"
    # /usr/bin/time's %e/%U/%S: wall and CPU seconds of the whole command.
    stats=$( { /usr/bin/time -f '%e %U %S' ./build/keystone tokenize "$corpus" --tokenizer "$work/gpt2_tokenizer.json" \
      --doc-sep line --threads "$t" --out "$work/out" --quiet >/dev/null; } 2>&1 | tail -1)
    read -r wall user sys <<<"$stats"
    tokens=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["splits"]["train"]["tokens"])' \
      "$work/out/corpus_manifest.json")
    awk -v r="$r" -v t="$t" -v w="$wall" -v u="$user" -v s="$sys" -v b="$bytes" -v n="$tokens" \
      'BEGIN { printf "%5d %-22s %8.1f %8.1f %10.1f %12.1f\n", r, "keystone " t " thread" (t > 1 ? "s" : ""), w, b / 1e6 / w, n / 1e6, u + s }'
  done
  stats=$( { /usr/bin/time -f '%e %U %S' node tools/bench/tiktoken_encode.mjs "$work/package" "$corpus"; } 2>&1)
  tokens=$(echo "$stats" | sed -n 's/.*"tokens":\([0-9]*\).*/\1/p')
  read -r wall user sys <<<"$(echo "$stats" | tail -1)"
  awk -v r="$r" -v w="$wall" -v u="$user" -v s="$sys" -v b="$bytes" -v n="$tokens" \
    'BEGIN { printf "%5d %-22s %8.1f %8.1f %10.1f %12.1f\n", r, "tiktoken (wasm, 1)", w, b / 1e6 / w, n / 1e6, u + s }'
done
rm -rf "$work/out"
