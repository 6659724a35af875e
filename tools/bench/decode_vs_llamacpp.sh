#!/usr/bin/env bash
# tools/bench/decode_vs_llamacpp.sh — cached greedy decoding at batch 1 of the
# same Llama-style weights in Keystone and in llama.cpp (npm node-llama-cpp,
# its prebuilt CPU binaries), side by side, each run in turn: a random model of
# GPT-2-small size (tools/bench/random_llama.py: d 768, 12 layers, 12 heads,
# SwiGLU 2048, vocabulary 32,000) imported into a Keystone run and exported
# to GGUF as F32, BF16 and Q8_0 (keystone export --to gguf); a prompt of
# PROMPT tokens (ASCII characters, one byte token each in both engines), NEW
# new tokens, THREADS threads. Both count from the prompt's evaluation to the
# last new token (Keystone: generate --timing). Keystone's columns: float32;
# bf16 GEMM operands on float32 weights (generate --precision bf16); and the
# model in bf16 (generate --dtype bf16: bf16 weights, activations and cache,
# as llama.cpp's BF16 file holds its weights); and weight-only int8
# (generate --dtype q8_0: the weights quantized to Q8_0 blocks as they load,
# the same blocks as the Q8_0 file llama.cpp reads; activations float32,
# rounded to int16 blocks within each product, where llama.cpp rounds them
# to int8 blocks).
#   bash tools/bench/decode_vs_llamacpp.sh [ROUNDS (default 2)]
# Environment: THREADS (default "1 2"), PROMPT (128), NEW (128), SPLIT (1: a
# second table, Q8_0's prompt seconds and per-step milliseconds in both
# engines, from runs of 1 and NEW new tokens), SHAPE (extra
# random_llama.py flags, e.g. "--hidden 256 --layers 2" for a quick look),
# WORK (the folder for the model files, default a temporary one, removed).
# Needs build/keystone, Debian's python3-torch, node and npm (the package is
# installed once into KS_NPM_CACHE, ~/.cache/keystone/npm by default, as the
# GGUF test does: tests/interop/npm_package.py).
# Not a test: it prints figures; docs/performance.md has a run and its reading.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-2}"
. tools/bench/args.sh
counts ROUNDS "$rounds"
# shellcheck disable=SC2086
counts THREADS ${THREADS:-1 2}
counts PROMPT "${PROMPT:-128}"
counts NEW "${NEW:-128}"
needs_keystone
command -v node >/dev/null && command -v npm >/dev/null || { echo "needs node and npm" >&2; exit 2; }
# node-llama-cpp from the folder the GGUF test installs it into (tests/interop/npm_package.py), once per machine.
modules=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, 'tests/interop'); import npm_package
print(npm_package.llama_cpp_modules(sys.argv[1]) or '')" "${KS_NPM_CACHE:-$HOME/.cache/keystone/npm}")
[ -n "$modules" ] || { echo "cannot install node-llama-cpp" >&2; exit 2; }
work="${WORK:-$(mktemp -d)}"
[ -z "${WORK:-}" ] && trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086
/usr/bin/python3 tools/bench/random_llama.py "$work/hf" ${SHAPE:-} >&2
prompt_file="$work/prompt.txt"
/usr/bin/python3 -c "import sys; n = int(sys.argv[1]); s = 'the quick brown fox jumps over a lazy dog, ' * (n // 40 + 1); open(sys.argv[2], 'w').write(s[:n])" "${PROMPT:-128}" "$prompt_file"
rm -rf "$work/run"
build/keystone import --from hf "$work/hf" --out "$work/run" --data "$prompt_file" --seq-len 64 >&2
for type in f32 bf16 q8_0; do
  build/keystone export --to gguf "$work/run" --out "$work/model.$type.gguf" --type "$type" --replace >&2
done
prompt=$(cat "$prompt_file")
ks() {  # THREADS FLAG VALUE (--precision or --dtype) -> new tokens per second
  KS_NUM_THREADS="$1" build/keystone generate --run "$work/run" --prompt "$prompt" --tokens "${NEW:-128}" --greedy \
    --timing "$2" "$3" 2>&1 >/dev/null | sed -n 's/.*: \([0-9.]*\) tokens\/s.*/\1/p'
}
lc() {  # THREADS TYPE -> new tokens per second
  node tools/bench/llamacpp_decode.mjs "$modules" "$work/model.$2.gguf" "$prompt_file" "${NEW:-128}" "$1" |
    /usr/bin/python3 -c "import json, sys; print(round(json.load(sys.stdin)['tokens_per_s'], 1))"
}
echo "# $(keystone_cpu), $(date -u +%F), $(git rev-parse --short HEAD), prompt ${PROMPT:-128}, new ${NEW:-128}, batch 1; tokens/s"
printf "%5s %7s %8s %11s %10s %9s %9s %10s %10s %9s %9s %9s\n" round threads ks_f32 ks_bf16_ops ks_bf16_dt ks_q8_0 \
  lcpp_f32 lcpp_bf16 lcpp_q8_0 f32_ratio bf16_ratio q8_ratio
for r in $(seq 1 "$rounds"); do
  for t in ${THREADS:-1 2}; do
    a=$(ks "$t" --precision float32) b=$(ks "$t" --precision bf16) w=$(ks "$t" --dtype bf16) q=$(ks "$t" --dtype q8_0)
    c=$(lc "$t" f32) d=$(lc "$t" bf16) e=$(lc "$t" q8_0)
    printf "%5s %7s %8s %11s %10s %9s %9s %10s %10s %8.2fx %8.2fx %8.2fx\n" "$r" "$t" "$a" "$b" "$w" "$q" "$c" "$d" \
      "$e" "$(echo "$a / $c" | bc -l)" "$(echo "$w / $d" | bc -l)" "$(echo "$q / $e" | bc -l)"
  done
done
# SPLIT=1: where Q8_0's time goes, Keystone's against llama.cpp's: each timed for one new token (the prompt's
# evaluation and the first token) and for NEW, in turn: the prompt's seconds, and each later step's milliseconds.
if [ "${SPLIT:-0}" = 1 ]; then
  [ "${NEW:-128}" -ge 2 ] || { echo "SPLIT=1 needs NEW >= 2" >&2; exit 2; }
  kss() {  # THREADS TOKENS -> seconds
    KS_NUM_THREADS="$1" build/keystone generate --run "$work/run" --prompt "$prompt" --tokens "$2" --greedy --timing \
      --dtype q8_0 2>&1 >/dev/null | sed -n 's/.* in \([0-9.]*\) s:.*/\1/p'
  }
  lcs() {  # THREADS TOKENS -> seconds
    node tools/bench/llamacpp_decode.mjs "$modules" "$work/model.q8_0.gguf" "$prompt_file" "$2" "$1" |
      /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['seconds'])"
  }
  echo "# Q8_0 split: the prompt's seconds (1 new token) and each later step's ms ((NEW tokens - 1 token) / (NEW - 1))"
  printf "%5s %7s %12s %11s %14s %13s\n" round threads ks_prompt_s ks_step_ms lcpp_prompt_s lcpp_step_ms
  for r in $(seq 1 "$rounds"); do
    for t in ${THREADS:-1 2}; do
      a1=$(kss "$t" 1) an=$(kss "$t" "${NEW:-128}") b1=$(lcs "$t" 1) bn=$(lcs "$t" "${NEW:-128}")
      printf "%5s %7s %12.3f %11.2f %14.3f %13.2f\n" "$r" "$t" "$a1" "$(echo "($an - $a1) * 1000 / (${NEW:-128} - 1)" | bc -l)" \
        "$b1" "$(echo "($bn - $b1) * 1000 / (${NEW:-128} - 1)" | bc -l)"
    done
  done
fi
