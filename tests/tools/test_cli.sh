#!/usr/bin/env bash
# tests/tools/test_cli.sh — the keystone binary's usage and error paths: exit
# 0 on success, 2 on a usage error, 1 on a runtime error, each with a message
# that names the problem; a tiny bench run printing its JSON fields; and the
# train -> eval / generate / translate / plot / analyze path on tiny runs, including a
# real Ctrl-C (SIGINT) and --resume reproducing the uninterrupted losses.
source "$(dirname "$0")/expect.sh"
ks="$1"
# A binary built with AddressSanitizer (the test command's second pass): GCC's
# runtime is libasan, clang's libclang_rt.asan.
sanitized=false
if ldd "$ks" 2>/dev/null | grep -q -E 'libasan|libclang_rt\.asan'; then sanitized=true; fi
expect 2 "usage: keystone" -- "$ks"
expect 0 "commands:" -- "$ks" --help
expect 2 "unknown command 'frobnicate'" -- "$ks" frobnicate
expect 0 "usage: keystone bench" -- "$ks" bench --help
expect 2 "unknown flag --bogus" -- "$ks" bench --bogus 1
expect 2 "flag --steps needs a value" -- "$ks" bench --steps
expect 2 "--steps: expected an integer, got 'ten'" -- "$ks" bench --steps ten
expect 2 "--batch: must be at least 1, got 0" -- "$ks" bench --batch 0
expect 2 "--dropout: expected a probability in \[0, 1\), got 1.5" -- "$ks" bench --dropout 1.5
expect 2 "--attention-dropout: expected a probability in \[0, 1\), got -0.1" -- "$ks" bench --attention-dropout -0.1
expect 2 "--dropout: expected a number, got 'x'" -- "$ks" bench --dropout x
# The block flags are model keys: a bad value is refused by the config's own check, naming the key.
expect 1 "config: norm: unknown norm 'bogus'" -- "$ks" bench --norm bogus
expect 1 "config: positions: expected alibi, learned, rope or sinusoidal, got 'bogus'" -- "$ks" bench --positions bogus
expect 1 "config: ff: unknown feed-forward 'bogus'" -- "$ks" bench --ff bogus
expect 1 "attention.kv_heads: 3 key/value heads do not divide 8 heads" -- "$ks" bench --kv-heads 3
expect 2 "--kv-heads: must be at least 1, got 0" -- "$ks" bench --kv-heads 0
expect 0 '"blocks":\{"bias":false,"ff":"swiglu","kv_heads":1,"norm":"rmsnorm","positions":"rope"\}' -- "$ks" bench --steps 1 \
  --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8 --norm rmsnorm --positions rope --ff swiglu \
  --kv-heads 1 --no-bias
expect 0 '"first_step_s":[0-9.]+.*"peak_tensor_mib":[0-9.]+.*"tokens_per_s"' -- "$ks" bench --steps 1 --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8 --dropout 0.3 --attention-dropout 0.1
# Each timed step's own time: min <= median <= max, and the mean between min and max.
expect 0 '^ordered$' -- bash -c '"$0" bench --steps 4 --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8 |
  /usr/bin/python3 -c "import json, sys; r = json.loads(sys.stdin.readline())
print(\"ordered\" if r[\"step_ms_min\"] <= r[\"step_ms_median\"] <= r[\"step_ms_max\"] and
      r[\"step_ms_min\"] <= r[\"step_ms\"] * (1 + 1e-9) and r[\"step_ms\"] <= r[\"step_ms_max\"] * (1 + 1e-9) else r)"' "$ks"
# --device cuda: without a usable GPU (no backend in this build, or no device
# or driver) it is a runtime error naming the reason; with one, a tiny run on it.
if nvidia-smi -L >/dev/null 2>&1; then
  expect 0 '"device":"cuda:0"' -- "$ks" bench --device cuda --steps 1 --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8
else
  expect 1 "--device: cuda: (this build has no CUDA backend|no CUDA device is available)" -- "$ks" bench --device cuda
fi
expect 2 "--device: expected cpu or cuda, got 'tpu'" -- "$ks" bench --device tpu
expect 1 "unknown family 'sparse'" -- "$ks" bench --attention sparse --steps 1 --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8
# FLOPs per token: the model's forward count (1,168 for this shape), three of them for a training step.
expect 0 '"flops_per_token":3504.0,.*"gflop_per_s":[0-9]' -- "$ks" bench --steps 1 --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8
expect 0 '"flops_per_token":1168.0,.*"gflop_per_s":[0-9]' -- "$ks" bench --steps 1 --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8 --forward-only
expect 0 '"tokens_per_s":' -- "$ks" bench --attention mgk --steps 1 --layers 1 --seq 8 --batch 2 --vocab 16 --d-model 8 --heads 2 --d-ff 16 --threads 1
expect 2 "--config FILE \(or --machine\) is required" -- "$ks" info
expect 0 '"bf16_gemm_path"' -- "$ks" info --machine
expect 0 '"cpu_vendor": "[A-Za-z ]+"' -- "$ks" info --machine
expect 0 '"commit": "([0-9a-f]{40}|unknown)"' -- "$ks" info --machine
OPENBLAS_CORETYPE=Haswell expect 0 '"float32_gemm_kernels": "OpenBLAS Haswell"' -- "$ks" info --machine
expect 0 '"cpu":"[^"]*","cpu_gemm":"(amx|avx512bf16|float32)"' -- "$ks" bench --steps 1 --layers 1 --seq 8 --batch 1 --vocab 16 --d-model 8 --heads 2 --d-ff 8
tiny=(--layers 1 --seq 8 --batch 2 --vocab 16 --d-model 8 --heads 2 --d-ff 8)
expect 0 '"mode":"model-forward"' -- "$ks" bench "${tiny[@]}" --steps 1 --forward-only
expect 0 '"state_dtype":"bf16"' -- "$ks" bench "${tiny[@]}" --steps 1 --state-dtype bf16
expect 2 "--state-dtype: expected float32 or bf16, got 'fp16'" -- "$ks" bench "${tiny[@]}" --state-dtype fp16
expect 0 '"checksum":[-0-9.e]+,.*"mode":"attention-train"' -- "$ks" bench "${tiny[@]}" --steps 1 --attention-only
expect 0 '"mode":"attention-forward"' -- "$ks" bench "${tiny[@]}" --steps 1 --attention-only --forward-only --bidirectional --attention mgk
expect 2 "--bidirectional needs --attention-only" -- "$ks" bench "${tiny[@]}" --bidirectional
expect 2 "--checkpoint-layers times training of the whole model" -- "$ks" bench "${tiny[@]}" --forward-only --checkpoint-layers
expect 2 "--fused-loss times training of the whole model" -- "$ks" bench "${tiny[@]}" --attention-only --fused-loss
expect 0 '"checksum":[0-9.e+]+,.*"mode":"decode",.*"new_tokens":3,.*"prefill_ms"' -- "$ks" bench "${tiny[@]}" --steps 1 --decode --prompt 4 --new-tokens 3
expect 2 "--decode times generation: not with --forward-only" -- "$ks" bench "${tiny[@]}" --decode --forward-only
# --preset gpt2-small: GPT-2 small's width, heads and d_ff unless a flag says otherwise (one layer,
# 8 positions and 64 ids here): 7,087,872 in the layer (4·768² + 4·768 attention, 2·768·3072 + 3072 +
# 768 feed-forward, two norms of 2·768), 49,152 + 6,144 tables, 1,536 final norm, a 768·64 head.
expect 0 '"params":7193856,.*"preset":"gpt2-small"' -- "$ks" bench --preset gpt2-small --layers 1 --seq 8 --batch 1 --vocab 64 --steps 1
expect 2 "--preset: expected reference or gpt2-small, got 'gpt3'" -- "$ks" bench --preset gpt3
# Checkpointed layers give the plain model's losses bit for bit, dropout on.
losses() { grep -oE '"(first_loss|loss)":[^,}]*' | tr '\n' ' '; }
plain=$("$ks" bench "${tiny[@]}" --steps 2 --dropout 0.3 --attention-dropout 0.1 | losses)
checkpointed=$("$ks" bench "${tiny[@]}" --steps 2 --dropout 0.3 --attention-dropout 0.1 --checkpoint-layers | losses)
if [[ -z "$plain" || "$plain" != "$checkpointed" ]]; then
  echo "FAIL: bench --checkpoint-layers changed the losses: '$plain' vs '$checkpointed'"
  exit 1
fi
expect 2 "--machine takes no --config" -- "$ks" info --machine --config x.json
KS_CPU_GEMM=tpu expect 1 "KS_CPU_GEMM: expected amx, avx512bf16 or float32, got 'tpu'" -- "$ks" info --machine
KS_CPU_GEMM=float32 expect 0 '"bf16_gemm_path": "float32"' -- "$ks" info --machine
KS_CPU_GEMM=float32 expect 0 '"bf16_matmuls": "float32: KS_CPU_GEMM chose the float32 path"' -- "$ks" info --machine
# KS_CPU_ISA caps the kernels' instruction sets (core/cpu_features.h); a bad value stops any command first.
KS_CPU_ISA=sse4 expect 1 "KS_CPU_ISA: expected avx2, avx512, avx512bf16 or amx, got 'sse4'" -- "$ks" info --machine
KS_CPU_ISA=sse4 expect 1 "KS_CPU_ISA: expected avx2, avx512, avx512bf16 or amx, got 'sse4'" -- "$ks" config --config "$root/tools/configs/default.json"
KS_CPU_ISA=avx2 expect 0 '"cpu_isa": "avx2( \(capped by KS_CPU_ISA; the CPU has [a-z0-9]+\))?"' -- "$ks" info --machine
KS_CPU_ISA=avx2 expect 0 '"bf16_gemm_path": "float32"' -- "$ks" info --machine
KS_CPU_ISA=avx2 KS_CPU_GEMM=avx512bf16 expect 1 "KS_CPU_GEMM=avx512bf16: (KS_CPU_ISA caps the kernels at avx2|this CPU \(or its OS\) has no AVX512-BF16)" -- "$ks" info --machine
expect 1 "config: file not found: $tmp/none.json" -- "$ks" info --config "$tmp/none.json"
echo '{"model": "decoder_lm", "vocab_size": 10,' > "$tmp/bad.json"
expect 1 "$tmp/bad.json: not valid JSON: line 2, column 1: syntax error" -- "$ks" info --config "$tmp/bad.json"
# Config files: only regular files (a FIFO would block, /dev/zero never end), nested at most 64 deep.
mkdir "$tmp/cfgdir"
expect 1 "config: $tmp/cfgdir is a directory, expected a file" -- "$ks" info --config "$tmp/cfgdir"
expect 1 "config: /dev/zero is not a regular file \(it is a character device\)" -- "$ks" info --config /dev/zero
mkfifo "$tmp/cfg.fifo"
expect 1 "config: $tmp/cfg.fifo is not a regular file \(it is a FIFO\)" -- timeout 20 "$ks" info --config "$tmp/cfg.fifo"
head -c 200000 /dev/zero | tr '\0' '[' > "$tmp/deep.json"
expect 1 "$tmp/deep.json: JSON nested deeper than 64 levels" -- "$ks" info --config "$tmp/deep.json"
echo '{"model": "decoder_lm", "vocab_size": 10, "layerz": 2}' > "$tmp/key.json"
expect 1 "config: layerz: unknown key" -- "$ks" info --config "$tmp/key.json"
echo '{"model": "decoder_lm", "vocab_size": 100, "d_model": 16, "layers": 1, "max_len": 32, "attention": {"heads": 2}}' > "$tmp/ok.json"
expect 0 '"params": [0-9]+' -- "$ks" info --config "$tmp/ok.json"
expect 0 '"forward_flops_per_token"' -- "$ks" info --config "$tmp/ok.json" --seq 16
cat > "$tmp/listops.json" <<JSON
{"data": {"dataset": "listops", "min_length": 5, "max_length": 40, "train_size": 20, "valid_size": 5, "test_size": 5,
          "cache_dir": "$tmp/listops-cache"},
 "model": {"d_model": 16, "layers": 1, "pooling": "cls", "attention": {"heads": 2}}}
JSON
expect 0 '"params": [0-9]+' -- "$ks" info --config "$tmp/listops.json"  # [CLS] takes a position of max_len
# A training config's memory is measured by two training steps on its first batch (tools/train/train_memory.h).
expect 0 '"peak_mib": \{' -- "$ks" info --config "$tmp/listops.json"
# On the float32 path bf16 holds float32's bytes, and says which path it measured; --set as train's.
KS_CPU_GEMM=float32 expect 0 '"peak_vs_float32": 1.0,' -- "$ks" info --config "$tmp/listops.json" --set train.precision=bf16
KS_CPU_GEMM=float32 expect 0 '"bf16_matmuls": "float32: KS_CPU_GEMM chose the float32 path"' -- \
  "$ks" info --config "$tmp/listops.json" --set train.precision=bf16
expect 0 '"batch_examples": 4,' -- "$ks" info --config "$tmp/listops.json" --set train.batch_size=4
expect 2 "--set train.batch_size: expected key=value" -- "$ks" info --config "$tmp/listops.json" --set train.batch_size
expect 1 "config: train.batch_sise: unknown key \(did you mean train.batch_size\?\)" -- \
  "$ks" info --config "$tmp/listops.json" --set train.batch_sise=4
expect 2 "--machine takes no --config, --set, --plugin or --loader-batches" -- "$ks" info --machine --set train.steps=1
# A step that does not fit is named, with the batch it was measured on (not under AddressSanitizer, as below).
if ! $sanitized; then
  expect 1 "measuring training memory \(two steps at float32 on a batch of 600 examples\): cpu allocator: out of memory" -- \
    bash -c "ulimit -v 1500000; exec \"\$0\" \"\$@\"" "$ks" info --config "$tmp/listops.json" \
    --set data.min_length=500 --set data.max_length=1000 --set data.train_size=600 --set train.batch_size=600
fi

# --- train and the commands that read its run folders ---------------------------
for c in train eval generate translate plot analyze; do expect 0 "usage: keystone $c" -- "$ks" $c --help; done
expect 2 "--config FILE is required" -- "$ks" train
# import/export (the GPT-2 checks themselves: tests/interop/test_gpt2.py)
for c in import export; do expect 0 "usage: keystone $c" -- "$ks" $c --help; done
expect 2 "--from hf or --from gguf is required" -- "$ks" import "$tmp" --from onnx --out "$tmp/imp" --data "$tmp/x"
expect 2 "the model folder \(DIR\) or GGUF file is required" -- "$ks" import --from hf --out "$tmp/imp" --data "$tmp/x"
expect 1 "has no config.json" -- "$ks" import "$tmp" --from hf --out "$tmp/imp" --data "$tmp/x"
expect 2 "--type goes with --to gguf" -- "$ks" export "$tmp" --to hf --out "$tmp/o" --type f16
expect 2 "--type: expected f32, f16, bf16 or q8_0, got .q4_k." -- "$ks" export "$tmp" --to gguf --out "$tmp/o.gguf" --type q4_k
expect 1 "is not a file" -- "$ks" import "$tmp" --from gguf --out "$tmp/imp" --data "$tmp/x"
expect 2 "--init-from starts a new run" -- "$ks" train --out "$tmp/imp" --resume --init-from "$tmp"
expect 2 "--resume needs --out DIR" -- "$ks" train --resume
expect 1 "config: file not found: $tmp/none.json" -- "$ks" train --config "$tmp/none.json"
cat > "$tmp/copy.json" <<'JSON'
{"name": "tiny-copy", "seed": 1,
 "data": {"dataset": "seq2seq", "task": "reverse", "max_length": 5, "train_size": 200, "valid_size": 20, "test_size": 20},
 "model": {"d_model": 16, "encoder_layers": 1, "decoder_layers": 1, "dropout": 0.1, "attention": {"heads": 2}},
 "schedule": {"type": "cosine", "warmup_steps": 2},
 "train": {"steps": 200, "batch_size": 8, "eval_every": 50, "log_every": 1, "decode_examples": 5, "threads": 1}}
JSON
# A size past its cap is refused by key before anything is allocated.
expect 1 "config: data.train_size: must be in \[1, 100000000\], got 10000000000000" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/oom" --set data.train_size=10000000000000
# Out of memory within the caps is named, not a bare std::bad_alloc (not under
# AddressSanitizer, which needs more address space than the limit leaves).
if ! $sanitized; then
  expect 1 "data set 'seq2seq': out of memory while building the splits" -- bash -c "ulimit -v 1500000; exec \"\$0\" \"\$@\"" \
    "$ks" train --config "$tmp/copy.json" --out "$tmp/oom" --set data.train_size=100000000 --set train.threads=1
fi
expect 2 "--set train.steps: expected key=value" -- "$ks" train --config "$tmp/copy.json" --set train.steps
expect 1 "config: train.stepz: unknown key" -- "$ks" train --config "$tmp/copy.json" --set train.stepz=3
# A --set value that is not UTF-8 is refused by key before the run folder exists (JSON holds only UTF-8).
expect 2 "--set name: the value is not valid UTF-8 \(byte 0xff at offset 1\)" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/utf8" --set name=a$'\xff'
expect 2 "--set train.device: the value is not valid UTF-8 \(byte 0xc3 at offset 0\)" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/utf8" --set train.device=$'\xc3'
[ -e "$tmp/utf8" ] && { echo "FAIL: a refused --set left $tmp/utf8 behind"; fails=$((fails + 1)); }
expect 1 "config: data.lenght: unknown key for dataset 'seq2seq'" -- "$ks" train --config "$tmp/copy.json" --set data.lenght=3
# Model keys are named with their section, and a near miss gets the key it misses.
expect 1 "config: model.d_modle: unknown key for model 'seq2seq' \(did you mean model.d_model\?\)" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/typo" --set model.d_modle=16
expect 1 "config: train.stpes: unknown key \(did you mean train.steps\?\)" -- "$ks" train --config "$tmp/copy.json" --set train.stpes=3
# Where bf16 GEMMs run is said at the start: without a bf16 unit they run in float32, and the run records it.
KS_CPU_GEMM=float32 expect 0 "train.precision bf16: KS_CPU_GEMM chose the float32 path: GEMMs run in float32, results equal float32's bit for bit" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/bf16" --set train.precision=bf16 --set train.steps=2
expect 0 '"bf16_matmuls":"float32: KS_CPU_GEMM chose the float32 path".*"matmul_precision":"bf16"' -- cat "$tmp/bf16/provenance.jsonl"
KS_CPU_GEMM=float32 expect 0 "train.precision auto: KS_CPU_GEMM chose the float32 path: GEMMs run in float32" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/auto" --set train.precision=auto --set train.steps=2
# ... bit for bit: bf16 and auto on the float32 path train to float32's loss (softmax and MGK's fused kernels).
for fam in softmax mgk; do
  tiny=(bench --attention $fam --steps 2 --layers 1 --seq 40 --batch 2 --vocab 64 --d-model 32 --heads 2 --d-ff 64)
  want=$("$ks" "${tiny[@]}" --precision float32 | grep -o '"loss":[^,]*')
  KS_CPU_GEMM=float32 expect 0 "\"bf16_matmuls\":\"float32: KS_CPU_GEMM chose the float32 path\".*$want" -- "$ks" "${tiny[@]}" --precision bf16
  KS_CPU_GEMM=float32 expect 0 "$want" -- "$ks" "${tiny[@]}" --precision auto
done
expect 1 "config: model.max_len: 3 is too small" -- "$ks" train --config "$tmp/copy.json" --set model.max_len=3 --out "$tmp/small"
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect 1 "train.device: cuda: (this build has no CUDA backend|no CUDA device is available)" -- "$ks" train --config "$tmp/copy.json" --device cuda --out "$tmp/cuda"
fi
expect 0 "plot: +$tmp/whole/plot.svg" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/whole" --quiet
for f in config.json metrics.jsonl latest.safetensors best.safetensors tokenizer.json plot.svg provenance.jsonl; do
  [ -s "$tmp/whole/$f" ] || { echo "FAIL: run folder lacks $f"; fails=$((fails + 1)); }
done
expect 1 "already holds a run; continue it with --resume" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/whole"
expect 2 "drop --config" -- "$ks" train --config "$tmp/copy.json" --out "$tmp/whole" --resume
expect 2 "may only change train.\* keys" -- "$ks" train --out "$tmp/whole" --resume --set model.d_model=8
# Resuming a finished run changes nothing: its test record stays, byte for byte.
cp "$tmp/whole/metrics.jsonl" "$tmp/whole.metrics"
expect 0 "already finished at step 200" -- "$ks" train --out "$tmp/whole" --resume
cmp -s "$tmp/whole.metrics" "$tmp/whole/metrics.jsonl" || { echo "FAIL: resuming a finished run changed its metrics.jsonl"; fails=$((fails + 1)); }
# One provenance line per training session (the finished resume above trained nothing).
expect 0 '^1 .*\{"bf16_gemm_path":"[a-z0-9]+","bf16_matmuls":"[^"]+","commit":"([0-9a-f]{40}|unknown)","cpu":.*"event":"start","matmul_precision":"float32","step":0,' -- \
  bash -c "wc -l < '$tmp/whole/provenance.jsonl' | tr '\n' ' '; cat '$tmp/whole/provenance.jsonl'"
expect 0 '"decode_sample":"seeded","decoded":5,"decoded_of":20,"exact_match".*"split":"test"' -- "$ks" eval --run "$tmp/whole" --decode 5
expect 0 '"split":"valid"' -- "$ks" eval --run "$tmp/whole" --split valid --checkpoint latest
expect 2 "--split: expected train, valid or test" -- "$ks" eval --run "$tmp/whole" --split dev
expect 1 "run folder $tmp/nowhere does not exist" -- "$ks" eval --run "$tmp/nowhere"
expect 0 "exact match: [0-9]+ of 4" -- "$ks" translate --run "$tmp/whole" --split test --limit 4 --beam 2
expect 0 "exact match: [0-9]+ of 20 \([0-9.]+%\) \| TER [0-9.]+% \| CER [0-9.]+%" -- "$ks" translate --run "$tmp/whole" --split test
expect 2 "--limit goes with --split" -- "$ks" translate --run "$tmp/whole" --input "123" --limit 3
expect 0 "^[0-9]*$" -- "$ks" translate --run "$tmp/whole" --input "123"
expect 1 "holds no moving average of the weights" -- "$ks" translate --run "$tmp/whole" --input "123" --weights ema
expect 0 "warning: --input: 3 of 4 tokens are unknown" -- "$ks" translate --run "$tmp/whole" --input "zzz1"
# --file decodes in batches of 32: 40 lines give 40 outputs, each the one --input gives.
for i in $(seq 1 40); do echo "$((i * 7919 % 100000))"; done > "$tmp/sources.txt"
"$ks" translate --run "$tmp/whole" --file "$tmp/sources.txt" > "$tmp/outputs.txt" 2>&1
for i in 1 33 40; do
  want=$("$ks" translate --run "$tmp/whole" --input "$(sed -n "${i}p" "$tmp/sources.txt")")
  if [ "$(wc -l < "$tmp/outputs.txt")" != 40 ] || [ "$(sed -n "${i}p" "$tmp/outputs.txt")" != "$want" ]; then
    echo "FAIL: translate --file line $i: $(sed -n "${i}p" "$tmp/outputs.txt") (want $want, of $(wc -l < "$tmp/outputs.txt") lines)"
    fails=$((fails + 1))
  fi
done
printf '12\n\n3\n' > "$tmp/blank.txt"
expect 1 "translate: $tmp/blank.txt:2: an empty source" -- "$ks" translate --run "$tmp/whole" --file "$tmp/blank.txt"
expect 2 "exactly one of --input, --file or --split" -- "$ks" translate --run "$tmp/whole"
expect 1 "needs a decoder_lm run" -- "$ks" generate --run "$tmp/whole"
expect 0 "wrote $tmp/both.svg" -- "$ks" plot "$tmp/whole" "$tmp/whole" --out "$tmp/both.svg"
expect 0 "wrote $tmp/labelled.svg" -- "$ks" plot "$tmp/whole" --log-y "$tmp/whole" --labels first,second --out "$tmp/labelled.svg"
grep -q ">second</text>" "$tmp/labelled.svg" || { echo "FAIL: plot --labels: no 'second' in the legend"; fails=$((fails + 1)); }
expect 2 "--labels: 1 labels for 2 run folders" -- "$ks" plot "$tmp/whole" "$tmp/whole" --labels one
expect 1 "no metrics.jsonl" -- "$ks" plot "$tmp"

# Ctrl-C: a real SIGINT saves and exits 130; --resume then reproduces the
# losses of the uninterrupted run above, record for record.
sigint_then_resume "$tmp/copy.json" "$tmp/split" 200
losses() { grep -v '"split":"test"' "$1/metrics.jsonl" | grep -o '"loss":[^,]*,'; }
if ! diff <(losses "$tmp/whole") <(losses "$tmp/split") > /dev/null; then
  echo "FAIL: the resumed run's losses differ from the uninterrupted run's (exit $rc before resuming)"; fails=$((fails + 1))
fi
# optimizer.state_dtype bf16 (Adam's moments in bfloat16, rounded stochastically): the checkpoint holds
# them in BF16, and Ctrl-C then --resume reproduces the uninterrupted run record for record; another
# dtype is refused by name.
sed 's/"schedule"/"optimizer": {"state_dtype": "bf16"}, "schedule"/' "$tmp/copy.json" > "$tmp/copy16.json"
expect 0 "finished 200 steps" -- "$ks" train --config "$tmp/copy16.json" --out "$tmp/whole16"
if ! head -c 200000 "$tmp/whole16/latest.safetensors" | grep -aq '"optimizer/0.0.exp_avg_sq":{"dtype":"BF16"'; then
  echo "FAIL: optimizer.state_dtype bf16: the checkpoint's moments are not BF16"; fails=$((fails + 1))
fi
sigint_then_resume "$tmp/copy16.json" "$tmp/split16" 200
if ! diff <(losses "$tmp/whole16") <(losses "$tmp/split16") > /dev/null; then
  echo "FAIL: bf16 moments: the resumed run's losses differ from the uninterrupted run's"; fails=$((fails + 1))
fi
expect 1 'config: optimizer.state_dtype: expected float32 or bf16, got "fp16"' -- \
  "$ks" train --config "$tmp/copy.json" --out "$tmp/sd16" --set optimizer.state_dtype=fp16

# A longer run after the fact: resume says what the schedule does.
expect 0 "note: train.steps 200 -> 240: the cosine schedule now ends at step 240" -- "$ks" train --out "$tmp/whole" --resume --set train.steps=240 --quiet
expect 1 "checkpoint $tmp is not a file" -- "$ks" eval --run "$tmp/whole" --checkpoint "$tmp"
# A changed time budget moves a schedule annealed to the clock: resume says where to.
"$ks" train --config "$tmp/copy.json" --out "$tmp/timed" --set train.steps=100000 --set train.max_time=1000 --quiet > "$tmp/timed.log" 2>&1 &
pid=$!
for _ in $(seq 1 500); do [ -s "$tmp/timed/metrics.jsonl" ] && break; sleep 0.01; done
kill -INT "$pid"; wait "$pid"
last=$(grep -o '"step":[0-9]*' "$tmp/timed/metrics.jsonl" | tail -1 | cut -d: -f2)
expect 0 "note: train.steps 100000 -> $((last + 2)), train.max_time 1000 -> 2000 s: the cosine schedule now ends at step $((last + 2)) or after 2000 s, whichever comes first; after [0-9.e+-]+ s it is at step $((last + 1)) of $((last + 2)) \(was [0-9]+ of 100000\), so the learning rate at step $((last + 1)) goes from" \
  -- "$ks" train --out "$tmp/timed" --resume --set train.steps=$((last + 2)) --set train.max_time=2000 --quiet

# A damaged run folder: errors name the file.
cp -r "$tmp/whole" "$tmp/damaged"
head -c 100 "$tmp/whole/latest.safetensors" > "$tmp/damaged/latest.safetensors"
expect 1 "$tmp/damaged/latest.safetensors" -- "$ks" train --out "$tmp/damaged" --resume --set train.steps=300
expect 1 "$tmp/damaged/latest.safetensors" -- "$ks" eval --run "$tmp/damaged" --checkpoint latest
rm "$tmp/damaged/config.json"
expect 1 "config: file not found: $tmp/damaged/config.json" -- "$ks" train --out "$tmp/damaged" --resume
expect 1 "$tmp/damaged is not a run folder \(no config.json\)" -- "$ks" eval --run "$tmp/damaged"
# A run's tokenizer files: each must be there and be the file the run recorded
# (data.fingerprints in config.json), or the commands that read the run stop.
cp -r "$tmp/whole" "$tmp/notok"
rm "$tmp/notok/tokenizer.json"
for c in "eval --run" "translate --input 123 --run" "train --resume --set train.steps=300 --out"; do
  expect 1 "run tokenizer $tmp/notok/tokenizer.json is missing" -- "$ks" $c "$tmp/notok"
done
expect 2 "run tokenizer $tmp/notok/tokenizer.json is missing" -- "$ks" analyze --run "$tmp/notok"  # analyze: 2 for a run it cannot read
cp -r "$tmp/whole" "$tmp/cuttok"
head -c 100 "$tmp/whole/tokenizer.json" > "$tmp/cuttok/tokenizer.json"
expect 1 "run tokenizer $tmp/cuttok/tokenizer.json is not the one the run was trained with: config.json records fnv1a64:[0-9a-f]{16}" -- "$ks" eval --run "$tmp/cuttok"
expect 1 "run tokenizer $tmp/cuttok/tokenizer.json is not the one" -- "$ks" train --out "$tmp/cuttok" --resume --set train.steps=300
# A run whose targets have their own tokenizer: without it, translate would decode with the source's.
for i in $(seq 1 100); do printf 'alpha beta %d\tbeta alpha %d\n' $((i % 5)) $((i % 5)); done > "$tmp/words.tsv"
cat > "$tmp/words.json" <<JSON
{"data": {"dataset": "tsv_seq2seq", "train": "$tmp/words.tsv", "tokenizer": {"type": "char"}, "target_tokenizer": {"type": "word"}},
 "model": {"d_model": 16, "encoder_layers": 1, "decoder_layers": 1, "attention": {"heads": 2}},
 "train": {"steps": 2, "batch_size": 8, "eval_every": 2, "threads": 1}}
JSON
expect 0 "finished 2 steps" -- "$ks" train --config "$tmp/words.json" --out "$tmp/words" --quiet
cp -r "$tmp/words" "$tmp/words-notarget"
rm "$tmp/words-notarget/target_tokenizer.json"
expect 1 "run tokenizer $tmp/words-notarget/target_tokenizer.json is missing" -- "$ks" translate --run "$tmp/words-notarget" --input "beta alpha"
expect 1 "run tokenizer $tmp/words-notarget/target_tokenizer.json is missing" -- "$ks" eval --run "$tmp/words-notarget"
# A data file that moved: refused at its old path with how to give the new one, accepted there
# (eval --set, train --resume --set) only with the content the run recorded.
mv "$tmp/words.tsv" "$tmp/words-moved.tsv"
expect 1 "config: data.train: $tmp/words.tsv does not exist .*give its new path with --set data.train=NEW" -- "$ks" eval --run "$tmp/words"
expect 0 "note: data.train: reading $tmp/words-moved.tsv in place of $tmp/words.tsv \(the same content, fnv1a64:" -- "$ks" eval --run "$tmp/words" --set data.train="$tmp/words-moved.tsv"
expect 1 "$tmp/sources.txt is not the file the run was trained on" -- "$ks" eval --run "$tmp/words" --set data.train="$tmp/sources.txt"
expect 2 "may only be given the new path of a data file that moved" -- "$ks" eval --run "$tmp/words" --set data.header=true
expect 0 "finished 4 steps" -- "$ks" train --out "$tmp/words" --resume --set train.steps=4 --set data.train="$tmp/words-moved.tsv" --quiet
expect 0 '"split":"test"' -- "$ks" eval --run "$tmp/words"  # config.json now names the new path

# Weights that are NaN or infinite (a diverged or damaged run) are refused by
# tensor, not evaluated to a loss of null with exit 0.
cp -r "$tmp/whole" "$tmp/nan"
nan_tensor=$(python3 - "$tmp/nan/latest.safetensors" <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
header = json.loads(b[8:8 + n])
name = next(k for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32" and not k.startswith("optimizer/"))
at = 8 + n + header[name]["data_offsets"][0]
b[at:at + 4] = struct.pack("<f", float("nan"))
open(sys.argv[1], "wb").write(b)
print(name)
PY
)
expect 1 "checkpoint $tmp/nan/latest.safetensors: tensor '$nan_tensor' holds 1 NaN or infinite values" -- "$ks" eval --run "$tmp/nan" --checkpoint latest
expect 1 "tensor '$nan_tensor' holds 1 NaN or infinite values" -- "$ks" translate --run "$tmp/nan" --checkpoint latest --input 12
expect 1 "tensor '$nan_tensor' holds 1 NaN or infinite values" -- "$ks" train --out "$tmp/nan" --resume --set train.steps=300
# A key given twice in a config: the second would win silently.
sed 's/"seed": 1,/"seed": 1, "seed": 2,/' "$tmp/copy.json" > "$tmp/twice.json"
expect 1 "$tmp/twice.json: key seed appears twice" -- "$ks" train --config "$tmp/twice.json" --out "$tmp/twice"
# Files a user names are read only when regular: /dev/zero would never end, a FIFO would block.
mkfifo "$tmp/sources.fifo"
expect 1 "translate: /dev/zero is not a regular file \(it is a character device\)" -- timeout 20 "$ks" translate --run "$tmp/whole" --file /dev/zero
expect 1 "translate: $tmp/sources.fifo is not a regular file \(it is a FIFO\)" -- timeout 20 "$ks" translate --run "$tmp/whole" --file "$tmp/sources.fifo"
expect 1 "translate: file not found: $tmp/none.txt" -- "$ks" translate --run "$tmp/whole" --file "$tmp/none.txt"
mkdir "$tmp/fifo-run"; mkfifo "$tmp/fifo-run/metrics.jsonl"
expect 1 "plot: $tmp/fifo-run/metrics.jsonl is not a regular file \(it is a FIFO\)" -- timeout 20 "$ks" plot "$tmp/fifo-run" --out "$tmp/fifo.svg"
mkfifo "$tmp/eval.fifo"
expect 1 "checkpoint $tmp/eval.fifo is not a file" -- timeout 20 "$ks" eval --run "$tmp/whole" --checkpoint "$tmp/eval.fifo"

# A language model on a user's text file, for generate.
for i in $(seq 1 200); do echo "the cat sat on the mat $((i % 5))"; done > "$tmp/lines.txt"
cat > "$tmp/lm.json" <<JSON
{"name": "tiny-lm", "data": {"dataset": "text", "train": "$tmp/lines.txt", "seq_len": 16, "tokenizer": {"type": "word"}},
 "model": {"d_model": 16, "layers": 1, "attention": {"type": "linear", "heads": 2}},
 "schedule": {"type": "constant"}, "train": {"steps": 20, "batch_size": 8, "eval_every": 10, "threads": 1}}
JSON
expect 0 "finished 20 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm" --quiet
expect 0 "^the cat" -- "$ks" generate --run "$tmp/lm" --prompt "the cat" --tokens 5 --top-k 3 --samples 2
expect 0 '"bpb":[0-9.]+,"bytes":[0-9]+' -- "$ks" eval --run "$tmp/lm"
# train.ema_decay: the evaluation lines show the moving average's metrics beside the weights', and
# eval / generate --weights ema read the average; a run without one is refused by name.
expect 0 "step 20: valid loss [0-9.]+ .*\|\| ema loss [0-9.]+ \| ppl" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-ema" --set train.ema_decay=0.9
expect 0 '"loss":[0-9.]+.*"weights":"ema"' -- "$ks" eval --run "$tmp/lm-ema" --weights ema
# --dtype: the model cast after loading; its test loss within 1% of float32's, the output saying so.
loss32=$("$ks" eval --run "$tmp/lm" | sed -E 's/.*"loss":([0-9.e+-]+).*/\1/')
for dt in bf16 fp16; do
  out=$("$ks" eval --run "$tmp/lm" --dtype "$dt")
  loss16=$(echo "$out" | sed -E 's/.*"loss":([0-9.e+-]+).*/\1/')
  echo "$out" | grep -q "\"dtype\":\"$dt\"" ||
    { echo "FAIL: eval --dtype $dt: the output does not say so: $out"; fails=$((fails + 1)); }
  awk -v a="$loss32" -v b="$loss16" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * a) }' ||
    { echo "FAIL: eval --dtype $dt: loss $loss16, float32's $loss32"; fails=$((fails + 1)); }
done
expect 0 '"dtype":"bf16".*"tokens":[0-9]+' -- "$ks" eval --run "$tmp/lm" --file "$tmp/lines.txt" --dtype bf16
expect 2 "--dtype: expected float32, bf16, fp16 or q8_0, got 'int4'" -- "$ks" eval --run "$tmp/lm" --dtype int4
expect 0 "^the cat" -- "$ks" generate --run "$tmp/lm-ema" --prompt "the cat" --tokens 5 --greedy --weights ema
expect 2 "--weights: expected raw or ema, got 'avg'" -- "$ks" generate --run "$tmp/lm-ema" --weights avg
# --precision: the GEMMs' operands; greedy text at bf16 is still text, a word outside the list a usage error.
expect 0 "^the cat" -- "$ks" generate --run "$tmp/lm-ema" --prompt "the cat" --tokens 5 --greedy --precision bf16
expect 2 "--precision: expected float32, bf16, fp16 or auto, got 'int8'" -- "$ks" generate --run "$tmp/lm" --precision int8
# --dtype: the model cast after loading (bf16 weights, activations and cache); not with --precision.
expect 0 "^the cat" -- "$ks" generate --run "$tmp/lm-ema" --prompt "the cat" --tokens 5 --greedy --dtype bf16
expect 0 "^the cat" -- "$ks" generate --run "$tmp/lm-ema" --prompt "the cat" --tokens 5 --greedy --dtype fp16
expect 2 "--dtype: expected float32, bf16, fp16 or q8_0, got 'int8'" -- "$ks" generate --run "$tmp/lm" --dtype int8
expect 2 "--precision: not with --dtype bf16" -- "$ks" generate --run "$tmp/lm" --dtype bf16 --precision bf16
# --dtype q8_0: weight-only int8 (rows of 64: every linear layer and the table in Q8_0 blocks): the test loss
# within 2% of float32's, the output saying so; greedy text still the run's text.
expect 0 "finished 20 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm64" --quiet --set model.d_model=64
loss32=$("$ks" eval --run "$tmp/lm64" | sed -E 's/.*"loss":([0-9.e+-]+).*/\1/')
out=$("$ks" eval --run "$tmp/lm64" --dtype q8_0)
lossq=$(echo "$out" | sed -E 's/.*"loss":([0-9.e+-]+).*/\1/')
echo "$out" | grep -q '"dtype":"q8_0"' || { echo "FAIL: eval --dtype q8_0: the output does not say so: $out"; fails=$((fails + 1)); }
awk -v a="$loss32" -v b="$lossq" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.02 * a) }' ||
  { echo "FAIL: eval --dtype q8_0: loss $lossq, float32's $loss32"; fails=$((fails + 1)); }
expect 0 "^the cat" -- "$ks" generate --run "$tmp/lm64" --prompt "the cat" --tokens 5 --greedy --dtype q8_0
# A model with no row of a multiple of 32 values (d 16, d_ff 48) has nothing to quantize, and says so.
expect 0 "finished 2 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-narrow" --quiet --set train.steps=2 \
  --set model.d_ff=48
expect 0 "note: --dtype q8_0: no weight of $tmp/lm-narrow has rows of a multiple of 32 values, so none is Q8_0" -- \
  "$ks" generate --run "$tmp/lm-narrow" --prompt "the cat" --tokens 2 --greedy --dtype q8_0
# --device: cpu as before; a word outside the two a usage error; Q8_0 weights stay on the CPU; cuda refused by
# name where this build or machine has no GPU (skipped where one is).
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/lm" --device cpu
expect 2 "--device: expected cpu or cuda, got 'tpu'" -- "$ks" eval --run "$tmp/lm" --device tpu
expect 1 "--device cuda: Q8_0 weights \(--dtype q8_0\) run on the CPU only" -- "$ks" generate --run "$tmp/lm64" --dtype q8_0 --device cuda
if ! (command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1); then
  expect 1 "--device: cuda: (this build has no CUDA backend|no CUDA device is available)" -- "$ks" generate --run "$tmp/lm" --prompt "the" --tokens 2 --device cuda
  expect 1 "--device: cuda: (this build has no CUDA backend|no CUDA device is available)" -- "$ks" eval --run "$tmp/lm" --device cuda
fi
expect 1 "best.safetensors holds no moving average of the weights \(the run was trained without train.ema_decay\)" -- "$ks" generate --run "$tmp/lm" --weights ema
# export --weights ema writes the average: a Llama-style run's two exports differ, and the raw one is the weights.
expect 0 "finished 4 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-llama" --quiet --set train.steps=4 \
  --set train.ema_decay=0.5 --set model.attention.type=softmax --set model.norm=rmsnorm --set model.positions=rope \
  --set model.ff=swiglu --set model.bias=false --set model.attention.kv_heads=1
expect 0 "LlamaForCausalLM" -- "$ks" export --to hf "$tmp/lm-llama" --out "$tmp/hf-raw"
expect 0 "LlamaForCausalLM" -- "$ks" export --to hf "$tmp/lm-llama" --out "$tmp/hf-ema" --weights ema
cmp -s "$tmp/hf-raw/model.safetensors" "$tmp/hf-ema/model.safetensors" && { echo "FAIL: export --weights ema wrote the raw weights"; fails=$((fails + 1)); }
expect 1 "holds no moving average of the weights" -- "$ks" export --to hf "$tmp/lm" --out "$tmp/hf-none" --weights ema
expect 2 "--tokens: at most 15" -- "$ks" generate --run "$tmp/lm" --tokens 16
expect 2 "--temperature: must be positive" -- "$ks" generate --run "$tmp/lm" --temperature 0
# Top-p, repetition penalty, stop strings and beam search: their flags and errors.
expect 0 "^the cat" -- "$ks" generate --run "$tmp/lm" --prompt "the cat" --tokens 5 --top-k 3 --top-p 0.9 --repetition-penalty 1.3
expect 0 "^the cat" -- "$ks" generate --run "$tmp/lm" --prompt "the cat" --tokens 6 --beam 3 --length-penalty 0.6
out=$("$ks" generate --run "$tmp/lm" --prompt "the cat" --tokens 12 --greedy --stop "mat" --stop "zzz" 2>&1)
full=$("$ks" generate --run "$tmp/lm" --prompt "the cat" --tokens 12 --greedy 2>&1)
if [ "$out" != "${full%%mat*}" ]; then
  echo "FAIL: generate --stop mat: output not cut before the first 'mat': $out"; fails=$((fails + 1))
fi
expect 2 "--top-p: expected a number in \(0, 1\], got 0" -- "$ks" generate --run "$tmp/lm" --top-p 0
expect 2 "--top-p: expected a number in \(0, 1\], got 1.5" -- "$ks" generate --run "$tmp/lm" --top-p 1.5
expect 2 "--top-p: expected a number, got 'x'" -- "$ks" generate --run "$tmp/lm" --top-p x
expect 2 "--repetition-penalty: expected a positive number, got -1" -- "$ks" generate --run "$tmp/lm" --repetition-penalty -1
expect 2 "--beam: must be at least 1, got 0" -- "$ks" generate --run "$tmp/lm" --beam 0
expect 2 "--beam: cannot be combined with --top-p" -- "$ks" generate --run "$tmp/lm" --beam 2 --top-p 0.5
expect 2 "--length-penalty: needs --beam" -- "$ks" generate --run "$tmp/lm" --length-penalty 1
expect 2 "--stop: a stop string must not be empty" -- "$ks" generate --run "$tmp/lm" --stop ""
# Batched generation (--prompts, --batch): each prompt's text is its unbatched text, greedy or sampled with
# row i's seed --seed + i, stop strings per row; prompts of different lengths (an empty one too), in batches of 2.
printf 'the cat\non the mat 3 the\n\nsat\n' > "$tmp/prompts.txt"
for mode in "--greedy" "--top-k 3 --seed 4 --stop mat"; do
  # shellcheck disable=SC2086
  got=$("$ks" generate --run "$tmp/lm" --prompts "$tmp/prompts.txt" --batch 2 --tokens 7 $mode 2>&1)
  want=""; i=0
  while IFS= read -r line; do
    mine=${mode/--seed 4/--seed $((4 + i))}
    # shellcheck disable=SC2086
    want+="--- prompt $((i + 1))"$'\n'"$("$ks" generate --run "$tmp/lm" --prompt "$line" --tokens 7 $mine 2>&1)"$'\n'
    i=$((i + 1))
  done < "$tmp/prompts.txt"
  if [ "$got"$'\n' != "$want" ]; then
    echo "FAIL: generate --prompts $mode differs from generate per prompt: $got (want $want)"; fails=$((fails + 1))
  fi
done
got=$("$ks" generate --run "$tmp/lm" --prompt "the" --tokens 6 --top-k 3 --seed 8 --samples 3 --batch 3 2>&1)
want=$("$ks" generate --run "$tmp/lm" --prompt "the" --tokens 6 --top-k 3 --seed 10)
if [ "$(tail -n 1 <<<"$got")" != "$want" ]; then
  echo "FAIL: generate --samples 3 --batch 3: sample 3 is not seed 8 + 2's: $got (want $want)"; fails=$((fails + 1))
fi
expect 0 "tokens/s \(batch 2\)" -- "$ks" generate --run "$tmp/lm" --prompts "$tmp/prompts.txt" --batch 2 --tokens 3 --timing
: > "$tmp/no-prompts.txt"
expect 2 "--prompts: $tmp/no-prompts.txt holds no prompts" -- "$ks" generate --run "$tmp/lm" --prompts "$tmp/no-prompts.txt"
expect 2 "--prompts: cannot read $tmp/absent.txt" -- "$ks" generate --run "$tmp/lm" --prompts "$tmp/absent.txt"
expect 2 "--batch: must be at least 1, got 0" -- "$ks" generate --run "$tmp/lm" --batch 0
expect 2 "--beam: cannot be combined with --batch" -- "$ks" generate --run "$tmp/lm" --beam 2 --batch 2
expect 2 "--beam: cannot be combined with --prompts" -- "$ks" generate --run "$tmp/lm" --beam 2 --prompts "$tmp/prompts.txt"
expect 2 "--prompts: not with --prompt" -- "$ks" generate --run "$tmp/lm" --prompt "x" --prompts "$tmp/prompts.txt"
expect 2 "--samples: not with --prompts" -- "$ks" generate --run "$tmp/lm" --samples 2 --prompts "$tmp/prompts.txt"
expect 1 "needs a seq2seq run" -- "$ks" translate --run "$tmp/lm" --input "x"
# keystone average: one run averaged is that run (same eval); two seeds average into a run
# that eval and generate read; another architecture, a missing run and a bad --out are refused.
expect 0 "averaged 1 checkpoints" -- "$ks" average "$tmp/lm" --out "$tmp/avg1"
strip='s/,?"(checkpoint|step)":("[^"]*"|[0-9]+)//g'
if [ "$("$ks" eval --run "$tmp/lm" | sed -E "$strip")" != "$("$ks" eval --run "$tmp/avg1" | sed -E "$strip")" ]; then
  echo "FAIL: average of one run evaluates differently from the run"; fails=$((fails + 1))
fi
expect 0 "finished 20 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-seed2" --set seed=2 --quiet
expect 0 "averaged 2 checkpoints" -- "$ks" average "$tmp/lm" "$tmp/lm-seed2" --out "$tmp/avg2" --checkpoint latest
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/avg2"
expect 0 "^the cat" -- "$ks" generate --run "$tmp/avg2" --prompt "the cat" --tokens 4
expect 0 "finished 2 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-wide" --set model.d_model=24 --set train.steps=2 --quiet
expect 1 "average: $tmp/lm-wide is another architecture than $tmp/lm: .*model.d_model \(24 vs 16\)" -- "$ks" average "$tmp/lm" "$tmp/lm-wide" --out "$tmp/avg3"
expect 1 "run folder $tmp/nowhere does not exist" -- "$ks" average "$tmp/lm" "$tmp/nowhere" --out "$tmp/avg4"
expect 2 "--out $tmp/avg2: the folder exists and is not empty" -- "$ks" average "$tmp/lm" --out "$tmp/avg2"
expect 2 "--out DIR is required" -- "$ks" average "$tmp/lm"
expect 2 "name at least one run folder" -- "$ks" average --out "$tmp/avg5"
expect 0 '"split":"valid"' -- env -C / "$ks" eval --run "$tmp/lm" --split valid  # paths stored absolute
expect 0 "batches per epoch, [0-9.]+ epochs" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/lm-summary" --set train.steps=2
cp "$tmp/lines.txt" "$tmp/lines.orig"
echo "a line added later" >> "$tmp/lines.txt"
expect 0 "warning: data.train: $tmp/lines.txt changed since the run recorded it" -- "$ks" eval --run "$tmp/lm" --split valid
mv "$tmp/lines.orig" "$tmp/lines.txt"

# keystone analyze on the seq2seq run (encoder self-, decoder self- and cross-attention)
# and the linear-attention LM (whose attention matrix is built explicitly); eval --mask-heads.
expect 0 "usage: keystone analyze" -- "$ks" analyze --help
expect 2 "--run DIR is required" -- "$ks" analyze
expect 2 "--run $tmp/nowhere: no such run folder" -- "$ks" analyze --run "$tmp/nowhere"
expect 2 "--split: expected train, valid or test, got 'dev'" -- "$ks" analyze --run "$tmp/lm" --split dev
expect 2 "--tolerance: expected a number in \(0, 1\)" -- "$ks" analyze --run "$tmp/lm" --tolerance 2
expect 0 "decoder.0.cross_attn +2 " -- "$ks" analyze --run "$tmp/whole" --batches 2
for f in analysis.json attention_maps.safetensors maps_example0.svg maps_example1.svg redundancy_js.svg \
         redundancy_cosine.svg pruning.svg spectra.svg; do
  [ -s "$tmp/whole/analysis/$f" ] || { echo "FAIL: analyze wrote no $f"; fails=$((fails + 1)); }
done
python3 -c "import sys, xml.dom.minidom as m; [m.parse(f) for f in sys.argv[1:]]" "$tmp"/whole/analysis/*.svg ||
  { echo "FAIL: analyze's figures are not well-formed XML"; fails=$((fails + 1)); }
grep -q '"schema": "keystone.analysis/1"' "$tmp/whole/analysis/analysis.json" || { echo "FAIL: analysis.json schema"; fails=$((fails + 1)); }
# an encoder classifier (ListOps, a [CLS] position first), analysed on its test split
expect 0 "finished 4 steps" -- "$ks" train --config "$tmp/listops.json" --out "$tmp/listops-run" --quiet \
  --set train.steps=4 --set train.batch_size=4 --set train.eval_every=4 --set train.threads=1
expect 0 "layers.0.attn +2 " -- "$ks" analyze --run "$tmp/listops-run" --split test --batches 1
grep -q '"metric": "accuracy"' "$tmp/listops-run/analysis/analysis.json" || { echo "FAIL: a classifier's pruning metric is accuracy"; fails=$((fails + 1)); }
expect 0 "pruning \(by importance\): loss" -- "$ks" analyze --run "$tmp/lm" --batches 2 --examples 1 --out "$tmp/lm-analysis"
expect 0 "wrote .*compare_pruning.svg" -- "$ks" analyze --compare "$tmp/whole" "$tmp/lm-analysis" --labels s2s,lm --out "$tmp/cmp"
[ -s "$tmp/cmp/compare_sites.svg" ] || { echo "FAIL: analyze --compare wrote no compare_sites.svg"; fails=$((fails + 1)); }
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs']; assert [x['label'] for x in r]==['s2s','lm'] and all('js' in x and 'maskable' in x for x in r)" "$tmp/cmp/compare.json" \
  || { echo "FAIL: analyze --compare wrote no compare.json with a row per analysis"; fails=$((fails + 1)); }
expect 0 "^softmax 2x8 \(whole\) " -- "$ks" analyze --compare "$tmp/whole" "$tmp/lm-analysis" --out "$tmp/cmp-unlabelled"
expect 2 "--compare needs at least two" -- "$ks" analyze --compare "$tmp/whole"
expect 2 "--compare: $tmp/lm: no analysis found" -- "$ks" analyze --compare "$tmp/whole" "$tmp/lm"
expect 2 "--labels: 1 labels for 2 analyses" -- "$ks" analyze --compare "$tmp/whole" "$tmp/lm-analysis" --labels x
# --compare reads a user's analysis.json like any user file: bounded depth (100,000
# levels crashed it), each key checked and named.
mkdir -p "$tmp/cmp-bad"
python3 -c "import sys; sys.stdout.write('{\"schema\": \"keystone.analysis/1\", \"pruning\": {}, \"sites\": ' + '[' * 100000 + ']' * 100000 + '}')" > "$tmp/cmp-bad/deep.json"
expect 2 "--compare: $tmp/cmp-bad/deep.json: JSON nested deeper than 64 levels" -- "$ks" analyze --compare "$tmp/cmp-bad/deep.json" "$tmp/lm-analysis"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); del a['pruning']['points'][0]['loss']; json.dump(a, open(sys.argv[2],'w'))" \
  "$tmp/lm-analysis/analysis.json" "$tmp/cmp-bad/noloss.json"
expect 2 "--compare: $tmp/cmp-bad/noloss.json: pruning.points\[0\].loss: missing" -- "$ks" analyze --compare "$tmp/cmp-bad/noloss.json" "$tmp/lm-analysis"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); a['model']['heads']='two'; json.dump(a, open(sys.argv[2],'w'))" \
  "$tmp/lm-analysis/analysis.json" "$tmp/cmp-bad/heads.json"
expect 2 "--compare: $tmp/cmp-bad/heads.json: model.heads: expected an integer, got \"two\"" -- "$ks" analyze --compare "$tmp/cmp-bad/heads.json" "$tmp/lm-analysis"
mkfifo "$tmp/cmp-bad/fifo.json"
expect 2 "--compare: $tmp/cmp-bad/fifo.json is not a regular file \(it is a FIFO\)" -- timeout 20 "$ks" analyze --compare "$tmp/cmp-bad/fifo.json" "$tmp/lm-analysis"
cp -r "$tmp/lm" "$tmp/lm-edited"
python3 -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); c['model']['activation']='relu'; json.dump(c, open(p,'w'))" \
  "$tmp/lm-edited/config.json"
expect 2 "was trained with another config than config.json: model.activation differ" -- "$ks" analyze --run "$tmp/lm-edited"
# (the data builders never leave a split empty; analyze still refuses one by name)
expect 0 '"masked_heads":\[\{"head":1,"site":"layers.0.self_attn"\}\]' -- "$ks" eval --run "$tmp/lm" --split valid --mask-heads 0:1
expect 0 '"masked_heads"' -- "$ks" eval --run "$tmp/whole" --split valid --mask-heads decoder.0.cross_attn:0,0:1
expect 2 "--mask-heads: entry '0-1' is not SITE:HEAD" -- "$ks" eval --run "$tmp/lm" --mask-heads 0-1
expect 2 "--mask-heads: entry '0:5': head '5' is not one of site 0's 2 heads" -- "$ks" eval --run "$tmp/lm" --mask-heads 0:5
expect 2 "--mask-heads: entry '9:0': site 9 does not exist" -- "$ks" eval --run "$tmp/lm" --mask-heads 9:0

# keystone config: every key explicit, for every data set and the shipped configs for one's own data.
expect 0 "usage: keystone config" -- "$ks" config --help
expect 2 "exactly one of --config FILE or --defaults" -- "$ks" config
for d in seq2seq listops brown_lm brown_genre fashion_mnist text token_shards tsv_classification tsv_seq2seq; do
  expect 0 '"warmup_steps": 0' -- "$ks" config --defaults --dataset "$d"
done
expect 0 '"train": "<required: a file path>"' -- "$ks" config --defaults --dataset tsv_seq2seq
expect 0 '"vocab_size": "<from the data>"' -- "$ks" config --defaults --dataset text --set model.attention.type=mgk
expect 1 "unknown data set 'imagenet'" -- "$ks" config --defaults --dataset imagenet
# --defaults prints every key's meaning beside it, from the table its reader checks keys against.
expect 0 '"steps": 1000, +// optimizer steps in the whole run' -- "$ks" config --defaults
expect 0 '"d_model": 256, +// the width of every token.s vector' -- "$ks" config --defaults --dataset text
for d in seq2seq listops fashion_mnist tsv_seq2seq; do
  more=(); [ "$d" = tsv_seq2seq ] && more=(--set 'data.target_tokenizer={}')
  bare=$("$ks" config --defaults --dataset "$d" "${more[@]}" 2>&1 | grep -E '^ *"[a-z0-9_]+": ' | grep -v ' // ')
  [ -z "$bare" ] || { echo "FAIL: config --defaults --dataset $d: keys without a meaning: $bare"; fails=$((fails + 1)); }
done
expect 1 'config: model.model: "seq2seq" cannot be trained on a classification data set \(use "encoder_classifier"\)' -- "$ks" config --defaults --dataset fashion_mnist --model seq2seq
expect 0 '"fingerprints"' -- "$ks" config --config "$tmp/lm.json"
for i in $(seq 1 120); do echo -e "good day number $i\tpos"; echo -e "bad night number $i\tneg"; done > "$tmp/cls.tsv"
for i in $(seq 1 200); do echo -e "abc$((i % 9))\tcba$((i % 9))"; done > "$tmp/pairs.tsv"
expect 0 '"num_classes": 2' -- "$ks" config --config $root/tools/configs/my_tsv_classifier.json --set data.train="$tmp/cls.tsv"
expect 0 '"tgt_vocab_size"' -- "$ks" config --config $root/tools/configs/my_tsv_seq2seq.json --set data.train="$tmp/pairs.tsv"
# A user's file with lines that are not UTF-8 loads with one warning naming the first such line.
{ head -n 20 "$tmp/pairs.tsv"; printf 'caf\xe9\t\xe9fac\n'; head -n 30 "$tmp/pairs.tsv"; printf '\xff\tz\n'; } > "$tmp/latin1.tsv"
for tok in char bpe byte; do
  expect 0 "warning: data set 'tsv_seq2seq': tsv seq2seq: $tmp/latin1.tsv:21: not valid UTF-8, and so is 1 more line" -- \
    "$ks" config --config $root/tools/configs/my_tsv_seq2seq.json --set data.train="$tmp/latin1.tsv" --set data.tokenizer.type=$tok --set data.tokenizer.vocab_size=300
done
expect 1 "tsv classification: classes: \"pos\" is listed twice" -- "$ks" config --config $root/tools/configs/my_tsv_classifier.json \
  --set data.train="$tmp/cls.tsv" --set 'data.classes=["pos", "neg", "pos"]'

if [ -r /usr/share/common-licenses/GPL-3 ]; then
  expect 0 '"vocab_size": 1024' -- "$ks" config --config $root/tools/configs/my_text_lm.json
  expect 0 '"kv_heads": 2' -- "$ks" config --config $root/tools/configs/my_text_llama.json
fi

# The experiment tools (tools/experiments/: run.py, report.py, heads_figure.py)
# are Python around the keystone commands checked above; under
# AddressSanitizer they would only repeat those commands, ten times slower.
if $sanitized; then
  echo "skipped under AddressSanitizer: the tools/experiments checks (the Release pass runs them)"
elif ! command -v python3 >/dev/null; then
  echo "skipped: the tools/experiments checks (no python3)"
else
  # tools/experiments/run.py with the real trainer (tests/tools/test_runner.py has
  # its queue, signals and failures with a stand-in): stopped mid-run it resumes the
  # run; a finished run is analysed (claim 1 is in ANALYZE_CLAIMS) and its results
  # kept, and a kept run is skipped even when its run folder is gone (a fresh machine).
  runner=(python3 "$root/tools/experiments/run.py")
  printf '1 tiny %s train.steps=300 train.eval_every=100 train.threads=1\n' "$tmp/copy.json" > "$tmp/claims.txt"
  exp_env=(env CLAIMS="$tmp/claims.txt" SEEDS="0 1" KS_EXPERIMENTS="$tmp/exp" KS_RESULTS="$tmp/results" ANALYZE_CLAIMS=1
           ANALYZE_FLAGS="--batches 1" KEYSTONE="$ks")
  "${exp_env[@]}" "${runner[@]}" > "$tmp/exp1.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1000); do [ -s "$tmp/exp/claim1/tiny-seed0/metrics.jsonl" ] && break; sleep 0.01; done
  kill -TERM "$pid"; wait "$pid"
  if [ -f "$tmp/exp/claim1/tiny-seed0/latest.safetensors" ]; then
    expect 0 "resume $tmp/exp/claim1/tiny-seed0" -- "${exp_env[@]}" "${runner[@]}"
  else
    expect 0 "start  $tmp/exp/claim1/tiny-seed0" -- "${exp_env[@]}" "${runner[@]}"
  fi
  for f in config.json metrics.jsonl machine.json analysis/analysis.json; do
    [ -s "$tmp/results/claim1/tiny-seed0/$f" ] || { echo "FAIL: run.py did not keep $f"; fails=$((fails + 1)); }
  done
  grep -q '"seed": 0' "$tmp/results/claim1/tiny-seed0/config.json" || { echo "FAIL: run.py did not set the seed"; fails=$((fails + 1)); }
  rm -rf "$tmp/exp"
  expect 0 "every run is finished" -- "${exp_env[@]}" "${runner[@]}"
  [ -d "$tmp/exp/claim1/tiny-seed0" ] && { echo "FAIL: run.py trained a run whose results were kept"; fails=$((fails + 1)); }

  # report.py and heads_figure.py, from the kept results alone (two seeds: a mean ± std).
  rep=(python3 "$root/tools/experiments/report.py" --runs "$tmp/results" --claims "$tmp/claims.txt" --keystone "$ks")
  expect 0 "^\| tiny \| 2 \| .* \| [0-9.]+ ± [0-9.]+ \| [0-9.]+ ± [0-9.]+ \| [0-9]+ min \| (amx|avx512bf16|float32) \|$" -- "${rep[@]}" 1
  expect 0 "^\| tiny \| 2 \| [0-9.]+ ± [0-9.]+ \|" -- "${rep[@]}" --analysis 1
  rm -rf "$tmp/results/claim1/tiny-seed1/metrics.jsonl"  # unfinished: counted as missing
  expect 0 "^\| tiny \| 1 \| .*\(one seed\)" -- "${rep[@]}" 1
  # A damaged kept file stops it with one line naming the file and line (tests/tools/test_report.py has each damage).
  cp "$tmp/results/claim1/tiny-seed0/metrics.jsonl" "$tmp/whole.jsonl"
  printf '{"split": "test", "st' >> "$tmp/results/claim1/tiny-seed0/metrics.jsonl"
  expect 1 "tiny-seed0/metrics.jsonl:[0-9]+: not JSON: .* \(a truncated last line\?\)$" -- "${rep[@]}" 1
  mv "$tmp/whole.jsonl" "$tmp/results/claim1/tiny-seed0/metrics.jsonl"
  python3 - "$tmp/heads" <<'PY'
import json, os, sys
root = sys.argv[1]
def run(claim, name, seed, heads, ppl):
    d = f"{root}/claim{claim}/{name}-seed{seed}"
    os.makedirs(d)
    json.dump({"model": {"attention": {"heads": heads}}}, open(d + "/config.json", "w"))
    json.dump({"bf16_gemm_path": "amx"}, open(d + "/machine.json", "w"))
    with open(d + "/metrics.jsonl", "w") as f:
        f.write(json.dumps({"split": "valid", "ppl": ppl + 1, "loss": 5, "step": 1, "elapsed_s": 1}) + "\n")
        f.write(json.dumps({"split": "test", "ppl": ppl, "loss": 5, "step": 1, "elapsed_s": 2}) + "\n")
for seed in (0, 1):
    run(3, "h1-softmax", seed, 1, 150 + 2 * seed)
    run(3, "h2-fixed32", seed, 2, 160 + 4 * seed)
    run(1, "softmax8x32", seed, 8, 140)
PY
  # The #vs comparisons: Welch's interval and its reading, on made-up test perplexities.
  python3 - "$tmp/vs" "$tmp/results/claim1/tiny-seed0/config.json" <<'PY'
import json, os, shutil, sys
root, config = sys.argv[1], sys.argv[2]
runs = {"a": [100, 101, 102], "b": [110, 111, 112], "a2": [100.5, 101, 101.5],
        "c": [100.0, 100.1, 100.2], "c2": [100.05, 100.1, 100.15], "one": [100]}
with open(f"{root}.claims", "w") as claims:
    for name, ppls in runs.items():
        claims.write(f"1 {name} x\n")
        for seed, ppl in enumerate(ppls):
            d = f"{root}/claim1/{name}-seed{seed}"
            os.makedirs(d)
            shutil.copy(config, d + "/config.json")
            json.dump({"bf16_gemm_path": "amx"}, open(d + "/machine.json", "w"))
            with open(d + "/metrics.jsonl", "w") as f:
                f.write(json.dumps({"split": "train", "loss": 5, "tokens_per_s": 1000, "step": 1, "elapsed_s": 1}) + "\n")
                f.write(json.dumps({"split": "test", "ppl": ppl, "loss": 5, "step": 1, "elapsed_s": 2}) + "\n")
    claims.write("#vs 1 a b\n#vs 1 b a\n#vs 1 a a2\n#vs 1 c c2\n#vs 1 one a\n")
PY
  vs=(python3 "$root/tools/experiments/report.py" --runs "$tmp/vs" --claims "$tmp/vs.claims" --keystone "$ks" 1)
  # Then the p-value, Holm's reading across the 4 tests with an interval, and no two-stage reading (no more_seeds rows).
  vs+=(--more-seeds "$tmp/none")
  expect 0 "^\| a \| b \| 3, 3 \| -10.00 \| \[-12.27, -7.73\] \| A better \| < 0.001 \| A better \(0.001\) \| — \|$" -- "${vs[@]}"
  expect 0 "^\| b \| a \| 3, 3 \| \+10.00 \| \[\+7.73, \+12.27\] \| A worse \| < 0.001 \| A worse \(0.001\) \| — \|$" -- "${vs[@]}"
  expect 0 "^\| a \| a2 \| 3, 3 \| \+0.00 \| \[-2.78, \+2.78\] \| not distinguishable \| 1.000 \| not distinguishable \(1.000\) \| — \|$" -- "${vs[@]}"
  expect 0 "^\| c \| c2 \| 3, 3 \| \+0.00 \| \[-0.28, \+0.28\] \| equal within 1% \| 1.000 \| not distinguishable \(1.000\) \| — \|$" -- "${vs[@]}"
  expect 0 "^\| one \| a \| 1, 3 \| \| \| needs two seeds a side \| \| \| \|$" -- "${vs[@]}"
  echo "#vs 1 a" >> "$tmp/vs.claims"
  expect 1 "expected '#vs CLAIM A B', got '#vs 1 a'" -- "${vs[@]}"
  echo "#vs 1 a nosuch" > "$tmp/vs2.claims"; echo "1 a x" >> "$tmp/vs2.claims"
  expect 1 "names nosuch, which is no run of the list" -- python3 "$root/tools/experiments/report.py" --runs "$tmp/vs" --claims "$tmp/vs2.claims" --keystone "$ks" 1
  # --steps: each seed's validation metric at the steps asked for ("—" where it has no record), then its test metric.
  printf '3 h1-softmax x\n' > "$tmp/heads.claims"
  st=(python3 "$root/tools/experiments/report.py" --runs "$tmp/heads" --claims "$tmp/heads.claims" --keystone "$ks")
  expect 0 "^\| h1-softmax seed 1 \| 153.0, — \| 152.0 \|$" -- "${st[@]}" --steps 1,2 3
  expect 1 "--steps 1,x: expected steps separated by commas" -- "${st[@]}" --steps 1,x 3
  expect 1 "--steps needs the claims to tabulate" -- "${st[@]}" --steps 1
  hf=(python3 "$root/tools/experiments/heads_figure.py" --runs "$tmp/heads" --out "$tmp/heads.svg")
  expect 0 "p = d/h \(softmax\): h 1 151.0 ± 1.4 \(2\), h 8 140.0 ± 0.0 \(2\)" -- "${hf[@]}"
  expect 0 "no finished seed of claim 3's h16-fixed32: left out" -- "${hf[@]}"
  [ "$(grep -c '<circle' "$tmp/heads.svg")" = 4 ] || { echo "FAIL: heads_figure.py drew $(grep -c '<circle' "$tmp/heads.svg") points, want 4"; fails=$((fails + 1)); }
  expect 1 "no finished run of the head-count curve" -- python3 "$root/tools/experiments/heads_figure.py" --runs "$tmp/none" --out "$tmp/none.svg"
  expect 2 "is not an executable keystone binary" -- env KEYSTONE="$tmp/none" "${runner[@]}"

  # Two runners on one run folder before its first checkpoint (config.json, no
  # latest.safetensors yet): the second one's trainer finds the folder locked
  # and fails naming the lock; the first trains on in its folder, untouched.
  printf '1 long %s train.steps=100000 train.eval_every=100000 train.threads=1\n' "$tmp/copy.json" > "$tmp/claims-long.txt"
  long_env=(env CLAIMS="$tmp/claims-long.txt" SEEDS=0 KS_EXPERIMENTS="$tmp/exp-long" KS_RESULTS="$tmp/results-long"
            KEYSTONE="$ks")
  long="$tmp/exp-long/claim1/long-seed0"
  "${long_env[@]}" "${runner[@]}" > "$tmp/exp-long.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1000); do [ -s "$long/config.json" ] && break; sleep 0.01; done
  expect 1 "is in use by another keystone train \(pid [0-9]+\)" -- timeout 30 "${long_env[@]}" "${runner[@]}"
  if [ ! -s "$long/config.json" ] || [ -f "$long/latest.safetensors" ]; then
    echo "FAIL: a second run.py changed $long: $(ls -A "$long" 2>&1)"; fails=$((fails + 1))
  fi
  kill -TERM "$pid"; wait "$pid"
  [ -f "$long/latest.safetensors" ] || { echo "FAIL: the first run.py's run did not save on SIGTERM: $(cat "$long.log")"; fails=$((fails + 1)); }
fi

# One train per run folder: a second one (or a --resume) on a folder in training is refused.
"$ks" train --config "$tmp/copy.json" --out "$tmp/locked" --set train.steps=100000 --quiet > "$tmp/locked.log" 2>&1 &
pid=$!
for _ in $(seq 1 500); do [ -s "$tmp/locked/config.json" ] && break; sleep 0.01; done
expect 1 "is in use by another keystone train \(pid $pid\)" -- "$ks" train --out "$tmp/locked" --resume
kill -INT "$pid"; wait "$pid"

finish "all keystone CLI checks passed"
