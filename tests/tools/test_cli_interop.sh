#!/usr/bin/env bash
# tests/tools/test_cli_interop.sh — the keystone binary on import and export of Hugging Face folders: damaged configs and weights, model_type, head_dim, the --out folder
# (issue 51's regressions), and LoRA fine-tuning's merged and PEFT exports of both. Each check: `expect CODE PATTERN -- command`
# (tests/tools/expect.sh). Not here: the general usage and training paths
# (test_cli.sh).
source "$(dirname "$0")/expect.sh"
ks="$1"

# The folders: a tiny GPT-2 and a Llama whose head_dim (6) is not hidden_size / heads (12 / 4 = 3),
# written by hf.py (below: plain Python, no torch) with random weights and a byte-level tokenizer.json
# of the 256 byte tokens and <|endoftext|>. `hf.py KIND DIR [--set FILE:dotted.key=JSON] [--raw FILE=TEXT]
# [--nan TENSOR] [--inf TENSOR] [--big TENSOR] [--sharded]` (--big: one value 1e5, finite but beyond fp16).
cat > "$tmp/hf.py" <<'PY'
import json, os, random, struct, sys
kind, d = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
rng = random.Random(7)
V, P = 257, 16
def b2u():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, map(chr, cs)))
tok = {"version": "1.0", "truncation": None, "padding": None,
       "added_tokens": [{"id": 256, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                         "rstrip": False, "normalized": False, "special": True}],
       "normalizer": None, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                             "use_regex": True},
       "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                           "use_regex": True},
       "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                 "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                 "vocab": {c: b for b, c in sorted(b2u().items())}, "merges": []}}
def r(*shape, mean=0.0):
    n = 1
    for s in shape: n *= s
    return (list(shape), [rng.gauss(mean, 0.3) for _ in range(n)])
if kind == "gpt2":
    e = 8
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": V, "n_positions": P,
           "n_embd": e, "n_layer": 1, "n_head": 2, "n_inner": None, "activation_function": "gelu_new",
           "eos_token_id": 256, "bos_token_id": 256}
    h = "transformer.h.0."
    sd = {"transformer.wte.weight": r(V, e), "transformer.wpe.weight": r(P, e),
          h + "ln_1.weight": r(e, mean=1), h + "ln_1.bias": r(e), h + "attn.c_attn.weight": r(e, 3 * e),
          h + "attn.c_attn.bias": r(3 * e), h + "attn.c_proj.weight": r(e, e), h + "attn.c_proj.bias": r(e),
          h + "ln_2.weight": r(e, mean=1), h + "ln_2.bias": r(e), h + "mlp.c_fc.weight": r(e, 4 * e),
          h + "mlp.c_fc.bias": r(4 * e), h + "mlp.c_proj.weight": r(4 * e, e), h + "mlp.c_proj.bias": r(e),
          "transformer.ln_f.weight": r(e, mean=1), "transformer.ln_f.bias": r(e)}
else:
    e, H, G, p, f = 12, 4, 2, 6, 20
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V, "hidden_size": e,
           "intermediate_size": f, "num_hidden_layers": 1, "num_attention_heads": H, "num_key_value_heads": G,
           "head_dim": p, "max_position_embeddings": P, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "tie_word_embeddings": False, "eos_token_id": 256, "bos_token_id": 256}
    l = "model.layers.0."
    sd = {"model.embed_tokens.weight": r(V, e), l + "input_layernorm.weight": r(e, mean=1),
          l + "self_attn.q_proj.weight": r(H * p, e), l + "self_attn.k_proj.weight": r(G * p, e),
          l + "self_attn.v_proj.weight": r(G * p, e), l + "self_attn.o_proj.weight": r(e, H * p),
          l + "post_attention_layernorm.weight": r(e, mean=1), l + "mlp.gate_proj.weight": r(f, e),
          l + "mlp.up_proj.weight": r(f, e), l + "mlp.down_proj.weight": r(e, f), "model.norm.weight": r(e, mean=1),
          "lm_head.weight": r(V, e)}
files = {"config.json": cfg, "tokenizer.json": tok}
raw, sharded = {}, False
i = 0
while i < len(args):
    a = args[i]
    if a == "--sharded":
        sharded = True; i += 1; continue
    v = args[i + 1]; i += 2
    if a == "--set":  # FILE:dotted.key=JSON (a list index as a number)
        fname, rest = v.split(":", 1)
        path, value = rest.split("=", 1)
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        o = files[fname]
        for k in keys[:-1]:
            o = o[k]
        o[keys[-1]] = json.loads(value)
    elif a == "--raw":  # FILE=TEXT
        fname, text = v.split("=", 1)
        raw[fname] = text
    elif a in ("--nan", "--inf"):
        sd[v][1][3] = float("nan") if a == "--nan" else float("-inf")
    elif a == "--big":
        sd[v][1][3] = 1e5
def save(path, tensors):
    header, blob = {}, b""
    for name, (shape, values) in tensors.items():
        data = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + blob)
os.makedirs(d, exist_ok=True)
for fname, j in files.items():
    open(os.path.join(d, fname), "w", encoding="utf-8").write(raw.get(fname, json.dumps(j, ensure_ascii=False)))
if sharded:
    names = list(sd)
    parts = {"model-00001-of-00002.safetensors": names[:len(names) // 2],
             "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for fname, part in parts.items():
        save(os.path.join(d, fname), {n: sd[n] for n in part})
    index = {"metadata": {}, "weight_map": {n: fn for fn, part in parts.items() for n in part}}
    open(os.path.join(d, "model.safetensors.index.json"), "w").write(raw.get("model.safetensors.index.json", json.dumps(index)))
else:
    save(os.path.join(d, "model.safetensors"), sd)
PY

printf 'hello world, the cat sat on the mat\nkeystone imports models from hugging face\n%.0s' 1 2 3 4 5 6 7 8 > "$tmp/notes.txt"
mk() { python3 "$tmp/hf.py" "$@"; }
same_tensors() {  # same_tensors A B: the two safetensors files hold the same tensors, bit for bit
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
sys.exit(0 if a == b else "differ: " + ", ".join(sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))[:300])
PY
}
imp() { "$ks" import --from hf "$1" --out "$2" --data "$tmp/notes.txt" --seq-len 8 "${@:3}"; }
# mk KIND NAME [edits]: a damaged folder; then its import must fail with CODE PATTERN.
refused() {  # refused PATTERN KIND NAME [hf.py edits]
  local pattern="$1" kind="$2" name="$3"; shift 3
  mk "$kind" "$tmp/bad-$name" "$@"
  expect 1 "$pattern" -- imp "$tmp/bad-$name" "$tmp/bad-$name-run"
}
mk gpt2 "$tmp/g"
expect 0 "imported $tmp/g \(GPT2LMHeadModel" -- imp "$tmp/g" "$tmp/g-run"
# --seq-len past the model's positions is refused by name (import --seq-len 1000000000000 exited 0,
# and eval or train failed later on data.seq_len).
expect 2 "--seq-len: must be at most [0-9]+ \(the model's max_len\)" -- \
  "$ks" import --from hf "$tmp/g" --out "$tmp/g-long" --data "$tmp/notes.txt" --seq-len 1000000000000

# 1. NaN or infinite weights: refused at import, naming the tensor as the file names it, and the file
# (not imported, then refused by eval blaming training and naming Keystone's tensor).
refused "hf weights: $tmp/bad-nan/model.safetensors: tensor 'transformer.h.0.attn.c_attn.weight' holds 1 NaN or infinite values of 192" \
  gpt2 nan --nan transformer.h.0.attn.c_attn.weight
expect 1 "" -- test -e "$tmp/bad-nan-run/config.json"
refused "hf weights: $tmp/bad-inf/model-00002-of-00002.safetensors: tensor 'transformer.ln_f.bias' holds 1 NaN or infinite" \
  gpt2 inf --inf transformer.ln_f.bias --sharded

# 2. model_type: the architecture's, or refused naming the key and the supported values.
refused '"model_type": "llama" is LlamaForCausalLM.s, but "architectures" names GPT2LMHeadModel \(model_type "gpt2"\)' \
  gpt2 mt-llama --set 'config.json:model_type="llama"'
refused '"model_type": "bert" is not supported \(supported: "gpt2" \(GPT2LMHeadModel\), "llama" \(LlamaForCausalLM\), "mistral" \(MistralForCausalLM\), "phi3" \(Phi3ForCausalLM\), "qwen2" \(Qwen2ForCausalLM\)\)' \
  gpt2 mt-bert --set 'config.json:model_type="bert"'
refused '"model_type": must be a string, got 7' gpt2 mt-number --set 'config.json:model_type=7'
refused '"model_type": "gpt2" is GPT2LMHeadModel.s, but "architectures" names LlamaForCausalLM' \
  llama mt-gpt2 --set 'config.json:model_type="gpt2"'
# Damaged files: the file and the key named, never nlohmann's own words.
refused "hf config $tmp/bad-cfg-list/config.json: expected a JSON object, got an array" gpt2 cfg-list --raw 'config.json=[1, 2]'
refused "config.json: expected a JSON object, got a string" gpt2 cfg-string --raw 'config.json="gpt2"'
refused "config.json: expected a JSON object, got a number" gpt2 cfg-number --raw 'config.json=3'
refused "config.json: \"architectures\": must list one architecture name" gpt2 arch-string \
  --set 'config.json:architectures="GPT2LMHeadModel"'
refused 'config.json: "n_embd": must be an integer, got "8"' gpt2 n-embd-string --set 'config.json:n_embd="8"'
refused 'config.json: "n_embd": 1000000000000 is out of range' gpt2 n-embd-huge --set 'config.json:n_embd=1000000000000'
refused 'config.json: "tie_word_embeddings": must be true or false, got "yes"' gpt2 tie-string \
  --set 'config.json:tie_word_embeddings="yes"'
refused 'config.json: "eos_token_id": must be an integer, got "x"' gpt2 eos-string --set 'config.json:eos_token_id="x"'
refused 'config.json: "eos_token_id": must be a token id or a list of token ids, got \[\]' gpt2 eos-empty \
  --set 'config.json:eos_token_id=[]'
refused 'config.json: "eos_token_id": must be a token id >= 0, got -3' gpt2 eos-negative --set 'config.json:eos_token_id=-3'
refused 'config.json: "activation_function": must be a string, got 1' gpt2 act-number --set 'config.json:activation_function=1'
refused 'config.json: "layer_norm_epsilon": must be a number, got "x"' gpt2 eps-string --set 'config.json:layer_norm_epsilon="x"'
# Sizes and probabilities out of range: refused by key (n_inner -5 used to import as the default, 4 n_embd).
refused 'config.json: "n_inner": must be a positive integer \(or null for the default\), got -5' gpt2 n-inner-negative \
  --set 'config.json:n_inner=-5'
refused 'config.json: "n_inner": must be a positive integer \(or null for the default\), got 0' gpt2 n-inner-zero \
  --set 'config.json:n_inner=0'
refused 'config.json: "n_inner": must be an integer, got 1.5' gpt2 n-inner-float --set 'config.json:n_inner=1.5'
refused 'config.json: "resid_pdrop": must be a probability in \[0, 1\), got 1.5' gpt2 pdrop --set 'config.json:resid_pdrop=1.5'
refused 'config.json: "num_key_value_heads": must be a positive integer \(or null for the default\), got -2' llama kv-negative \
  --set 'config.json:num_key_value_heads=-2'
refused 'config.json: "attention_dropout": must be a probability in \[0, 1\), got -0.5' llama attn-drop \
  --set 'config.json:attention_dropout=-0.5'
refused 'config.json: "head_dim": must be a positive integer, got -6' llama head-dim-negative --set 'config.json:head_dim=-6'
# tokenizer.json: each wrong type named by file and key.
refused "$tmp/bad-tok-fallback/tokenizer.json: model.byte_fallback: expected true or false, got \"yes\"" gpt2 tok-fallback \
  --set 'tokenizer.json:model.byte_fallback="yes"'
refused 'tokenizer.json: model.type: expected a string, got 5' gpt2 tok-type --set 'tokenizer.json:model.type=5'
refused 'tokenizer.json: model.ignore_merges: expected true or false, got "x"' gpt2 tok-ignore \
  --set 'tokenizer.json:model.ignore_merges="x"'
refused 'tokenizer.json: pre_tokenizer.add_prefix_space: expected true or false, got "no"' gpt2 tok-prefix \
  --set 'tokenizer.json:pre_tokenizer.add_prefix_space="no"'
refused 'tokenizer.json: pre_tokenizer.use_regex: expected true or false, got 1' gpt2 tok-regex \
  --set 'tokenizer.json:pre_tokenizer.use_regex=1'
refused 'tokenizer.json: pre_tokenizer.type: expected a string, got \[\]' gpt2 tok-pre-type --set 'tokenizer.json:pre_tokenizer.type=[]'
refused 'tokenizer.json: decoder.type: expected a string, got 3' gpt2 tok-decoder --set 'tokenizer.json:decoder.type=3'
refused 'tokenizer.json: added_tokens\[0\].lstrip: expected true or false, got "x"' gpt2 tok-lstrip \
  --set 'tokenizer.json:added_tokens.0.lstrip="x"'
refused 'tokenizer.json: a tokenizer.json must be a JSON object' gpt2 tok-list --raw 'tokenizer.json=[]'
# model.safetensors.index.json
refused "$tmp/bad-index-list/model.safetensors.index.json: expected a JSON object, got an array" gpt2 index-list --sharded \
  --raw 'model.safetensors.index.json=[]'
refused 'model.safetensors.index.json: "weight_map": expected an object \{tensor name: shard file\}, got an array' gpt2 \
  index-map-list --sharded --raw 'model.safetensors.index.json={"weight_map": []}'

# 3. A Llama head_dim other than hidden_size / heads (6, not 12 / 4): the "fixed" family's explicit
# head size; export writes head_dim; export -> import -> export is bit-exact. (Logits against the
# plain-PyTorch Llama: tests/interop/test_llama.py.)
mk llama "$tmp/l"
expect 0 "imported $tmp/l \(LlamaForCausalLM" -- imp "$tmp/l" "$tmp/l-run"
expect 0 "" -- python3 -c "import json, sys; a = json.load(open(sys.argv[1]))['model']['attention']
assert (a['type'], a['head_dim'], a['heads'], a['kv_heads']) == ('fixed', 6, 4, 2), a" "$tmp/l-run/config.json"
expect 0 "" -- "$ks" generate --run "$tmp/l-run" --prompt "hello" --tokens 4 --greedy
expect 0 "exported $tmp/l-run \(LlamaForCausalLM\)" -- "$ks" export --to hf "$tmp/l-run" --out "$tmp/l-out"
expect 0 '"head_dim": 6' -- cat "$tmp/l-out/config.json"
expect 0 "" -- imp "$tmp/l-out" "$tmp/l-run2"
expect 0 "" -- "$ks" export --to hf "$tmp/l-run2" --out "$tmp/l-out2"
expect 0 "" -- cmp "$tmp/l-out/model.safetensors" "$tmp/l-out2/model.safetensors"
expect 0 "" -- same_tensors "$tmp/l/model.safetensors" "$tmp/l-out/model.safetensors"

# 4. export --out: never the run folder (it overwrote the run's config.json and tokenizer.json, exit 0),
# nor another run; a non-empty folder only with --replace, which removes what the old model owned.
cp "$tmp/g-run/config.json" "$tmp/g-run-config.json"
expect 1 "hf export: --out $tmp/g-run is the run folder $tmp/g-run itself" -- "$ks" export --to hf "$tmp/g-run" --out "$tmp/g-run"
expect 1 "is the run folder .* itself" -- "$ks" export --to hf "$tmp/g-run" --out "$tmp/g-run/." --replace
expect 0 "" -- cmp "$tmp/g-run/config.json" "$tmp/g-run-config.json"
expect 1 "hf export: --out $tmp/l-run holds a Keystone run \(latest.safetensors\)" -- "$ks" export --to hf "$tmp/g-run" --out "$tmp/l-run" --replace
expect 1 "hf export: --out $tmp/g is not empty \(config.json, model.safetensors, tokenizer.json\); pass --replace" -- \
  "$ks" export --to hf "$tmp/g-run" --out "$tmp/g"
expect 0 "--replace +DIR may hold a Hugging Face model" -- "$ks" export --help
# Over an older sharded model (the Llama, sharded): its index and shards go, README.md stays, and the
# folder imports as the new model.
mk llama "$tmp/old" --sharded
echo "notes" > "$tmp/old/README.md"
expect 0 "removed the replaced model's model.safetensors.index.json, model-00001-of-00002.safetensors, model-00002-of-00002.safetensors" -- \
  "$ks" export --to hf "$tmp/g-run" --out "$tmp/old" --replace
expect 1 "" -- test -e "$tmp/old/model.safetensors.index.json"
expect 1 "" -- test -e "$tmp/old/model-00001-of-00002.safetensors"
expect 0 "" -- test -e "$tmp/old/README.md"
expect 0 "imported $tmp/old \(GPT2LMHeadModel" -- imp "$tmp/old" "$tmp/old-run"
expect 0 "" -- same_tensors "$tmp/g/model.safetensors" "$tmp/old/model.safetensors"
# model.safetensors beside a stale index: read, as transformers reads it (the index used to win).
mk llama "$tmp/both" --sharded
mk gpt2 "$tmp/both"
expect 0 "note: $tmp/both holds model.safetensors and model.safetensors.index.json; reading model.safetensors" -- \
  imp "$tmp/both" "$tmp/both-run"

# 5. train --resume of an imported run: nothing to resume; --init-from named instead of "no optimizer state".
expect 1 "cannot resume: $tmp/g-run/latest.safetensors holds weights only, no optimizer or training state \(keystone import wrote it from $tmp/g\); fine-tune from it as a new run: keystone train --init-from $tmp/g-run --out NEW_DIR" -- \
  "$ks" train --out "$tmp/g-run" --resume --quiet

# 6. LoRA fine-tuning of the imported GPT-2 and Llama (train.lora, nn/lora.h): the base weights stay
# bit for bit; export --to hf writes the merged model; export --to peft writes the adapters in PEFT's
# layout, checked against a reference written here from PEFT's format (LoraConfig's adapter_config.json;
# save_pretrained's keys base_model.model.<HF module>.lora_A/.lora_B.weight, no adapter name), and
# PEFT's own merge of that adapter (W + lora_alpha/r · (B A), transposed for fan_in_fan_out, rank and
# alpha from rank_pattern/alpha_pattern) onto the imported weights gives the merged export.
lora_train() {  # lora_train RUN OUT TARGETS_JSON
  "$ks" train --init-from "$1" --out "$2" --quiet --set train.steps=3 --set train.eval_every=3 \
    --set train.batch_size=4 --set train.eval_batches=1 --set train.threads=1 --set optimizer.lr=0.05 \
    --set "train.lora={\"rank\": 2, \"alpha\": 4, \"targets\": $3}"
}
expect 0 "" -- lora_train "$tmp/g-run" "$tmp/g-lora" '["*attn.q", "*attn.k", "*attn.v", "*attn.o", "ff.fc1"]'
expect 0 "" -- lora_train "$tmp/l-run" "$tmp/l-lora" '["*attn.q", "*attn.v", "ff.down", "head"]'
expect 1 "peft export: run $tmp/g-run trained no LoRA adapters" -- "$ks" export --to peft "$tmp/g-run" --out "$tmp/none"
expect 2 "--base goes with --to peft" -- "$ks" export --to hf "$tmp/g-lora" --out "$tmp/none" --base x
for m in g l; do
  expect 0 "exported $tmp/$m-lora" -- "$ks" export --to hf "$tmp/$m-lora" --out "$tmp/$m-merged"
  expect 0 "exported $tmp/$m-lora's LoRA adapters" -- "$ks" export --to peft "$tmp/$m-lora" --out "$tmp/$m-peft"
done
cat > "$tmp/peft_check.py" <<'PY'
import json, struct, sys
kind, base, peft, merged, base_dir = sys.argv[1:6]
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__": continue
        assert v["dtype"] == "F32", (k, v["dtype"])
        data = b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
        out[k] = (v["shape"], list(struct.unpack("<%df" % (len(data) // 4), data)))
    return out
cfg = json.load(open(peft + "/adapter_config.json"))
ad = tensors(peft + "/adapter_model.safetensors")
r, alpha = 2, 4
# The reference: PEFT's adapter_config.json keys and the modules each model's run adapted.
if kind == "gpt2":
    e, pre = 8, "transformer.h.0."
    modules = {pre + "attn.c_attn": (3 * r, e, 3 * e), pre + "attn.c_proj": (r, e, e), pre + "mlp.c_fc": (r, e, 4 * e)}
    want = {"target_modules": ["attn.c_attn", "attn.c_proj", "mlp.c_fc"], "fan_in_fan_out": True,
            "rank_pattern": {"attn.c_attn": 3 * r}, "alpha_pattern": {"attn.c_attn": 3 * alpha}}
else:
    e, H, G, p, f, V, pre = 12, 4, 2, 6, 20, 257, "model.layers.0."
    modules = {pre + "self_attn.q_proj": (r, e, H * p), pre + "self_attn.v_proj": (r, e, G * p),
               pre + "mlp.down_proj": (r, f, e), "lm_head": (r, e, V)}
    want = {"target_modules": ["lm_head", "mlp.down_proj", "self_attn.q_proj", "self_attn.v_proj"],
            "fan_in_fan_out": False, "rank_pattern": {}, "alpha_pattern": {}}
want.update({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": alpha, "lora_dropout": 0.0,
             "bias": "none", "base_model_name_or_path": base_dir, "modules_to_save": None, "use_rslora": False,
             "use_dora": False})
for k, v in want.items():
    assert cfg.get(k) == v, (k, cfg.get(k), v)
names = {"base_model.model.%s.lora_%s.weight" % (m, ab) for m in modules for ab in "AB"}
assert set(ad) == names, sorted(set(ad) ^ names)
# PEFT's merge onto the base weights equals our merged export.
bw, mw = tensors(base), tensors(merged)
for m, (rank, fin, fout) in modules.items():
    A, B = ad["base_model.model.%s.lora_A.weight" % m], ad["base_model.model.%s.lora_B.weight" % m]
    assert A[0] == [rank, fin] and B[0] == [fout, rank], (m, A[0], B[0])
    scale = (cfg["alpha_pattern"].get(m.split(".", 3)[-1], alpha)) / cfg["rank_pattern"].get(m.split(".", 3)[-1], r)
    assert abs(scale - alpha / r) < 1e-12
    W0, W1 = bw[m + ".weight"][1], mw[m + ".weight"][1]
    for o in range(fout):
        for i in range(fin):
            d = scale * sum(B[1][o * rank + k] * A[1][k * fin + i] for k in range(rank))
            idx = i * fout + o if cfg["fan_in_fan_out"] else o * fin + i  # Conv1D keeps (in, out)
            assert abs(W0[idx] + d - W1[idx]) <= 1e-5 * max(1.0, abs(W1[idx])), (m, o, i, W0[idx] + d, W1[idx])
    assert any(v != 0 for v in B[1]), m + ": lora_B untrained"
# Every tensor the adapters do not touch is the base's, bit for bit.
for k, v in bw.items():
    if not any(k == m + ".weight" for m in modules):
        assert mw[k] == v, k
print("peft layout ok")
PY
expect 0 "peft layout ok" -- python3 "$tmp/peft_check.py" gpt2 "$tmp/g/model.safetensors" "$tmp/g-peft" \
  "$tmp/g-merged/model.safetensors" "$tmp/g"
expect 0 "peft layout ok" -- python3 "$tmp/peft_check.py" llama "$tmp/l/model.safetensors" "$tmp/l-peft" \
  "$tmp/l-merged/model.safetensors" "$tmp/l"

# 7. import --dtype (issue 55): a run that stores bf16 weights, about half the float32 import's bytes; eval and
# generate load it in bf16 without a flag and say so, with the loss --dtype bf16 gives on the float32 import, bit for
# bit; --dtype float32 widens it; export writes float32 (exact); train --init-from trains from it in float32; a word
# outside float32, bf16, fp16 and auto is a usage error.
expect 0 "imported $tmp/l \(LlamaForCausalLM, [0-9]+ parameters, stored in bf16\)" -- imp "$tmp/l" "$tmp/l16" --dtype bf16
expect 2 "--dtype: expected float32, bf16, fp16 or auto, got 'q8_0'" -- imp "$tmp/l" "$tmp/l-q8" --dtype q8_0
mk llama "$tmp/l-big" --big model.layers.0.mlp.up_proj.weight
expect 1 "hf import: --dtype fp16: the model's tensor 'layers.0.ff.up.weight' holds a value beyond fp16's range" -- \
  imp "$tmp/l-big" "$tmp/l-big16" --dtype fp16
[ -e "$tmp/l-big16" ] && { echo "FAIL: a refused import --dtype fp16 left $tmp/l-big16"; fails=$((fails + 1)); }
expect 0 "stored in bf16" -- imp "$tmp/l-big" "$tmp/l-big-bf16" --dtype bf16
# --dtype auto: config.json's torch_dtype (or the newer "dtype"), else the checkpoint's first floating tensor's type.
mk llama "$tmp/l-auto16" --set 'config.json:torch_dtype="bfloat16"'
expect 0 "stored in bf16 \(--dtype auto: config.json's torch_dtype bfloat16\)" -- imp "$tmp/l-auto16" "$tmp/l-a16" --dtype auto
mk llama "$tmp/l-autofp" --set 'config.json:dtype="float16"'
expect 0 "stored in fp16 \(--dtype auto: config.json's dtype float16\)" -- imp "$tmp/l-autofp" "$tmp/l-afp" --dtype auto
expect 0 "stored in float32 \(--dtype auto: the first tensor's type, float32\)" -- imp "$tmp/l" "$tmp/l-a32" --dtype auto
mk llama "$tmp/l-shauto" --sharded --set 'config.json:torch_dtype="float64"'  # not a type it takes: the first shard's
expect 0 "stored in float32 \(--dtype auto: the first tensor's type, float32\)" -- imp "$tmp/l-shauto" "$tmp/l-sa" --dtype auto
mk llama "$tmp/l-bigauto" --big model.layers.0.mlp.up_proj.weight --set 'config.json:torch_dtype="float16"'
expect 1 "hf import: --dtype auto: the model's tensor 'layers.0.ff.up.weight' holds a value beyond fp16's range" -- \
  imp "$tmp/l-bigauto" "$tmp/l-bigauto-run" --dtype auto
s16=$(stat -c %s "$tmp/l16/latest.safetensors") s32=$(stat -c %s "$tmp/l-run/latest.safetensors")
[ $((10 * s16)) -lt $((6 * s32)) ] || { echo "FAIL: import --dtype bf16 wrote $s16 bytes, float32 $s32"; fails=$((fails + 1)); }
own=$("$ks" eval --run "$tmp/l16" --file "$tmp/notes.txt")
cast=$("$ks" eval --run "$tmp/l-run" --file "$tmp/notes.txt" --dtype bf16)
echo "$own" | grep -q '"dtype":"bf16"' || { echo "FAIL: eval of a bf16 run does not say bf16: $own"; fails=$((fails + 1)); }
[ "${own#*\"loss\":}" != "" ] && [ "$(echo "$own" | sed -E 's/.*"loss":([^,]+).*/\1/')" = "$(echo "$cast" | sed -E 's/.*"loss":([^,]+).*/\1/')" ] ||
  { echo "FAIL: a bf16 run's loss ($own) is not --dtype bf16's on the float32 run ($cast)"; fails=$((fails + 1)); }
expect 0 '"loss":' -- "$ks" eval --run "$tmp/l16" --file "$tmp/notes.txt" --dtype float32
"$ks" eval --run "$tmp/l16" --file "$tmp/notes.txt" --dtype float32 | grep -q '"dtype"' &&
  { echo "FAIL: eval --dtype float32 of a bf16 run still says a dtype"; fails=$((fails + 1)); }
expect 0 "" -- "$ks" generate --run "$tmp/l16" --prompt "hello" --tokens 4 --greedy
expect 0 "exported $tmp/l16 \(LlamaForCausalLM\)" -- "$ks" export --to hf "$tmp/l16" --out "$tmp/l16-out"
expect 0 "finished 2 steps" -- "$ks" train --init-from "$tmp/l16" --out "$tmp/l16-tuned" --set train.steps=2 \
  --set train.eval_every=2 --set train.batch_size=4 --set train.eval_batches=1 --set train.threads=1

finish "test_cli_interop.sh: all checks passed"
