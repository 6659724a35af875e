#!/usr/bin/env bash
# tools/bench/big_corpus.sh — the data path on a corpus larger than memory:
# makes token shards of real text at any size, then measures what training on
# them costs in start-up, memory and loader throughput beside the step's rate.
#   bash tools/bench/big_corpus.sh [TOKENS (default 10750000000: 21.5 GB of uint16 ids)] [STEPS (default 40)]
# 1. `keystone tokenize` encodes the plain-text licences Debian installs
#    (/usr/share/common-licenses, /usr/share/doc/*/copyright: about 20 MB of
#    English) with a BPE of 8,192 ids it learns from them, paragraphs as
#    documents, 1% held out for validation;
# 2. tools/bench/grow_shards.py writes TOKENS tokens of train shards (100 M
#    ids, 200 MB each) whose documents are the base's in a fresh seeded order
#    per pass (real text, repeated: a corpus to time the loader on, not to
#    learn from);
# 3. with the page cache dropped where the user may (root), `keystone info
#    --loader-batches` times the loader alone on the reference LM's batches
#    (16 windows of 256 tokens, shuffled over the whole corpus), and
#    `keystone train` runs STEPS steps of the reference LM (d 256, 4 layers,
#    softmax 8x32) on it under /usr/bin/time: start-up (process start to the
#    end of step 1), peak RSS beside the model's own state, tokens/s.
# The corpus stays in runs/bench/big/corpus (delete it after: it is the size
# asked for). Not a test: it prints figures; docs/data.md has a run.
set -euo pipefail
cd "$(dirname "$0")/../.."
tokens="${1:-10750000000}"
steps="${2:-40}"
case "$tokens$steps" in *[!0-9]*) echo "TOKENS and STEPS must be whole numbers" >&2; exit 2 ;; esac
[ -x build/keystone ] || { echo "build/keystone not found: build it first" >&2; exit 2; }
work=runs/bench/big
mkdir -p "$work"
need=$((tokens * 2 / 1000000000 + 2))
have=$(df -BG --output=avail "$work" | tail -1 | tr -dc 0-9)
if [ ! -f "$work/corpus/big_train_000000.bin" ] && [ "$have" -lt "$need" ]; then
  echo "$work: $have GB free, the corpus needs about $need GB" >&2
  exit 2
fi
if [ ! -f "$work/base/base_tokenizer.json" ]; then
  find /usr/share/common-licenses /usr/share/doc -maxdepth 2 \( -path '/usr/share/common-licenses/*' -o -name copyright \) \
    -type f -print0 | sort -z | xargs -0 cat > "$work/base.txt"
  ./build/keystone tokenize "$work/base.txt" --tokenizer bpe:8192 --doc-sep blank-line --valid-fraction 0.01 \
    --out "$work/base" --name base --overwrite --quiet
fi
want=$(printf '%s\n' "$tokens")
have_tokens=$(python3 - "$work/corpus" <<'PY' 2>/dev/null || echo 0
import glob, os, sys
print(sum((os.path.getsize(p) - 1024) // 2 for p in glob.glob(os.path.join(sys.argv[1], "big_train_*.bin"))))
PY
)
if [ "$have_tokens" != "$want" ]; then
  rm -rf "$work/corpus"
  python3 tools/bench/grow_shards.py "$work/base" base "$work/corpus" big "$tokens"
fi
cat > "$work/big_lm.json" <<JSON
{
  "name": "big_corpus_lm",
  "seed": 0,
  "data": {"dataset": "token_shards", "dir": "$work/corpus", "name": "big", "seq_len": 256, "valid_windows": 64},
  "model": {"model": "decoder_lm", "d_model": 256, "d_ff": 1024, "layers": 4, "dropout": 0.0,
            "attention": {"type": "softmax", "heads": 8}},
  "optimizer": {"type": "adamw", "lr": 1e-3, "weight_decay": 0.1},
  "schedule": {"type": "cosine", "warmup_steps": 10},
  "train": {"steps": $steps, "batch_size": 16, "eval_every": $steps, "log_every": 10}
}
JSON
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && echo "(page cache dropped)" || echo "(page cache not dropped: not root)"; }
echo "# $(./build/keystone info --machine | sed -n 's/.*"cpu": *"\([^"]*\)".*/\1/p' | head -1), $(nproc) cores, $(date -u +%F), $(git rev-parse --short HEAD)"
du -sh --apparent-size "$work/corpus" | sed 's/^/corpus on disk: /'
for cache in cold warm; do
  [ "$cache" = cold ] && drop_caches
  echo "== loader alone, $cache cache: keystone info --config $work/big_lm.json --loader-batches 2000"
  /usr/bin/time -f 'wall %e s, peak RSS %M KB' ./build/keystone info --config "$work/big_lm.json" --loader-batches 2000 \
    2> "$work/info.time" > "$work/info.json" || { cat "$work/info.time" >&2; exit 1; }
  python3 - "$work/info.json" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))["loader"]
print(f"loader: {l['batches']} batches in {l['seconds']:.2f} s: {l['tokens_per_s']:,.0f} tokens/s")
PY
  tail -1 "$work/info.time"
done
drop_caches
echo "== training, cold cache: keystone train --config $work/big_lm.json ($steps steps)"
rm -rf "$work/run"
/usr/bin/time -f 'wall %e s, peak RSS %M KB' ./build/keystone train --config "$work/big_lm.json" --out "$work/run" \
  > "$work/train.log" 2> "$work/train.time" || { cat "$work/train.log" "$work/train.time" >&2; exit 1; }
grep -h -m1 "^  train " "$work/train.time" || true
grep -h "start-up\|peak tensor" "$work/train.log" || true
tail -1 "$work/train.time"
python3 - "$work/run" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if l.strip()]
steps = [r for r in recs if r.get("split", r.get("kind")) in (None, "train") and "tokens_per_s" in r]
if steps:
    rates = [r["tokens_per_s"] for r in steps]
    print(f"training: {len(steps)} interval records, tokens/s {min(rates):,.0f} to {max(rates):,.0f}")
PY
python3 - "$work/info.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"model state (weights, gradients, AdamW moments): {j['train_state_mib']:.0f} MiB; "
      f"measured peak of a training step (tensors): {j['training_memory']['peak_mib']['plain']:.0f} MiB")
PY
