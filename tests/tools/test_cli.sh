#!/usr/bin/env bash
# tests/tools/test_cli.sh — the keystone binary's usage and error paths: exit
# 0 on success, 2 on a usage error, 1 on a runtime error, each with a message
# that names the problem; and a tiny bench run printing its JSON fields.
set -u
ks="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() {  # expect CODE PATTERN -- command...
  local code="$1" pattern="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $* -> exit $rc (want $code), output: $out (want /$pattern/)"
    fails=$((fails + 1))
  fi
}
expect 2 "usage: keystone" -- "$ks"
expect 0 "commands:" -- "$ks" --help
expect 2 "unknown command 'frobnicate'" -- "$ks" frobnicate
expect 0 "usage: keystone bench" -- "$ks" bench --help
expect 2 "unknown flag --bogus" -- "$ks" bench --bogus 1
expect 2 "flag --steps needs a value" -- "$ks" bench --steps
expect 2 "--steps: expected an integer, got 'ten'" -- "$ks" bench --steps ten
expect 2 "--batch: must be at least 1, got 0" -- "$ks" bench --batch 0
expect 2 "--device: only cpu" -- "$ks" bench --device cuda
expect 1 "unknown family 'sparse'" -- "$ks" bench --attention sparse --steps 1 --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8
expect 0 '"tokens_per_s":' -- "$ks" bench --attention mgk --steps 1 --layers 1 --seq 8 --batch 2 --vocab 16 --d-model 8 --heads 2 --d-ff 16 --threads 1
expect 2 "--config FILE is required" -- "$ks" info
expect 1 "cannot open config $tmp/none.json" -- "$ks" info --config "$tmp/none.json"
echo '{"model": "decoder_lm", "vocab_size": 10,' > "$tmp/bad.json"
expect 1 "is not valid JSON" -- "$ks" info --config "$tmp/bad.json"
echo '{"model": "decoder_lm", "vocab_size": 10, "layerz": 2}' > "$tmp/key.json"
expect 1 "config: layerz: unknown key" -- "$ks" info --config "$tmp/key.json"
echo '{"model": "decoder_lm", "vocab_size": 100, "d_model": 16, "layers": 1, "max_len": 32, "attention": {"heads": 2}}' > "$tmp/ok.json"
expect 0 '"params": [0-9]+' -- "$ks" info --config "$tmp/ok.json"
expect 0 '"forward_flops_per_token"' -- "$ks" info --config "$tmp/ok.json" --seq 16
if [ "$fails" -ne 0 ]; then echo "$fails checks failed"; exit 1; fi
echo "all keystone CLI checks passed"
