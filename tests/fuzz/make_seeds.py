#!/usr/bin/env python3
# tests/fuzz/make_seeds.py OUT_DIR — writes the seed corpora of the fuzz
# harnesses into OUT_DIR/<harness>/: a few small valid inputs each, a few
# hundred bytes (about 4 KB for a Hugging Face tokenizer.json, whose
# vocabulary holds the 256 bytes), so libFuzzer starts from files that reach
# deep into each reader. Generated rather than committed, so they follow the formats'
# writers here; nothing is downloaded.
import json
import os
import struct
import sys

# The Hugging Face tokenizer.json layout is the interop tests' (tests/interop/test_tokenizer.py), found from
# this file so that the script runs from any folder.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
from test_tokenizer import tokenizer_json  # noqa: E402

here = sys.argv[1]


def put(harness, name, data):
    os.makedirs(os.path.join(here, harness), exist_ok=True)
    with open(os.path.join(here, harness, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors(tensors, metadata=None):
    header, blob = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + blob


put("safetensors", "two", safetensors({"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                                       "step": ("I64", [], struct.pack("<q", 7))}, {"format": "pt"}))
put("safetensors", "dtypes", safetensors({"a": ("F16", [3], b"\0" * 6), "b": ("BF16", [1, 2], b"\0" * 4),
                                          "c": ("BOOL", [2], b"\1\0"), "d": ("I32", [0, 5], b""),
                                          "e": ("F64", [1], struct.pack("<d", 0.5))}))
put("safetensors", "empty", safetensors({}))

put("config", "copy", json.dumps({
    "name": "copy", "seed": 1,
    "data": {"dataset": "seq2seq", "task": "reverse", "max_length": 5, "train_size": 20, "valid_size": 4, "test_size": 4},
    "model": {"d_model": 16, "encoder_layers": 1, "decoder_layers": 1, "attention": {"heads": 2}},
    "optimizer": {"type": "adamw", "lr": 0.001}, "schedule": {"type": "cosine", "warmup_steps": 2},
    "train": {"steps": 10, "batch_size": 4}}))
put("config", "lm_mgk", json.dumps({
    "name": "lm", "data": {"dataset": "text", "train": "/nonexistent.txt"},
    "model": {"model": "decoder_lm", "vocab_size": 50, "d_model": 8, "layers": 1, "max_len": 16,
              "attention": {"type": "mgk", "heads": 2, "head_dim": "seq", "keys": 2, "hard_e": True}},
    "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True},
    "schedule": {"type": "noam", "warmup_steps": 4}, "train": {"steps": 5, "device": "cpu"}}))
put("config", "sort_with_overrides", json.dumps({
    "data": {"dataset": "seq2seq", "task": "sort", "train_size": 8, "valid_size": 2, "test_size": 2}})
    + "\0train.steps=3\0model.attention.type=linear")

specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
put("tokenizer", "byte", json.dumps({"type": "byte", "specials": specials}))
put("tokenizer", "char", json.dumps({"type": "char", "specials": specials, "chars": [97, 98, 233, 0x4e2d]}))
put("tokenizer", "word", json.dumps({"type": "word", "specials": specials, "lowercase": True,
                                     "split_punctuation": True, "words": ["the", "cat", ","]}))
put("tokenizer", "bpe", json.dumps({"type": "bpe", "specials": specials,
                                    "merges": [[101, 105], [260, 108], [36, 261], [120, 120]]}))


# Hugging Face tokenizer.json files (datasets/hf_bpe.h), for fuzz_hf_tokenizer
# (the file, '\0', a text to encode) and fuzz_tokenizer (the file alone).
def byte_chars():
    table, extra = [], 256
    for b in range(256):
        printable = 33 <= b <= 126 or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF
        table.append(chr(b) if printable else chr(extra))
        extra += not printable
    return table


def hf_tokenizer(style):
    vocab = {c: i for i, c in enumerate(byte_chars())}
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("\u0120", "w"), ("\u0120w", "o"), ("1", "2")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    added = [("<|endoftext|>", len(vocab), True, False), ("<|endoftext|>x", len(vocab) + 1, True, False),
             ("<tool>", len(vocab) + 2, False, True), ("lo w", len(vocab) + 9, False, True)]  # ids with a gap
    return tokenizer_json(vocab, merges, style, added, add_prefix_space=True, decoder={"type": "ByteLevel"})


hf_text = "hello world<|endoftext|>x<tool>lo w 12 caf\u00e9 \U0001F600 it's\r\n\n  x"
for style in ("gpt2", "llama3", "qwen2"):
    file = json.dumps(hf_tokenizer(style), ensure_ascii=False)
    put("hf_tokenizer", style, file.encode() + b"\0" + hf_text.encode())
    put("tokenizer", "hf_" + style, file)

# SentencePiece-style (Llama 2's and Mistral's layouts): byte fallback, Metaspace, Prepend/Replace.
def sp_tokenizer(style):
    sp = "\u2581"
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    merges = [(sp, "h"), ("e", "l"), (sp + "h", "el"), ("l", "o"), (sp + "hel", "lo"), (sp, "w")]
    for c in "helowrd12 ":
        vocab.setdefault(c, len(vocab))
    vocab.setdefault(sp, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    added = [{"id": i, "content": c, "normalized": False, "special": True} for c, i in (("<s>", 1), ("</s>", 2))]
    strip = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": sp}, "content": " "},
                                              {"type": "ByteFallback"}, {"type": "Fuse"},
                                              {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    if style == "llama2":
        normalizer = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": sp},
                                                          {"type": "Replace", "pattern": {"String": " "},
                                                           "content": sp}]}
        pre = None
    else:
        normalizer = None
        pre = {"type": "Metaspace", "replacement": sp, "prepend_scheme": "first", "split": True}
    return {"version": "1.0", "added_tokens": added, "normalizer": normalizer, "pre_tokenizer": pre,
            "decoder": strip, "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                                        "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}}


for style in ("llama2", "mistral"):
    file = json.dumps(sp_tokenizer(style), ensure_ascii=False)
    put("hf_tokenizer", style, file.encode() + b"\0" + ("hello world<s> \u2581x caf\u00e9 \U0001F600  </s>").encode())
    put("tokenizer", "hf_" + style, file)
put("hf_tokenizer", "saved", json.dumps({"type": "hf_bpe", "eos_id": 263, "tokenizer": hf_tokenizer("gpt2")}).encode()
    + b"\0" + b"\xff\xfe<|endoftext|><|endoftext|>x")


# A Unigram tokenizer.json (datasets/hf_unigram.h) as transformers' SpmConverter writes T5's: a
# Precompiled normalizer whose charsmap (a darts-clone double array, then the replacements) is
# built here for a few NFKC-style rules, Strip and Replace " {2,}", WhitespaceSplit + Metaspace.
def charsmap(rules):
    pool, value = b"", {}
    for k, v in sorted(rules.items()):
        value[k] = len(pool)
        pool += v + b"\0"
    units, used, bases = [0], {0}, set()
    queue = [(b"", 0)]
    for prefix, pos in queue:  # each node's children and leaf at the first free offset, one node per base
        labels = sorted({k[len(prefix)] for k in rules if len(k) > len(prefix) and k.startswith(prefix)})
        leaf = prefix != b"" and prefix in rules
        off = 1
        while (pos ^ off) in bases or (leaf and (pos ^ off) in used) or any((pos ^ off ^ c) in used for c in labels):
            off += 1
        base = pos ^ off
        bases.add(base)
        units += [0] * max(0, base + 257 - len(units))
        units[pos] |= off << 10 | (1 << 8 if leaf else 0)
        if leaf:
            units[base] = 1 << 31 | value[prefix]
            used.add(base)
        for c in labels:
            units[base ^ c] |= c
            used.add(base ^ c)
            queue.append((prefix + bytes([c]), base ^ c))
    return struct.pack("<I", 4 * len(units)) + struct.pack(f"<{len(units)}I", *units) + pool


def unigram_tokenizer():
    import base64
    sp = "\u2581"
    rules = {"\uff21".encode(): b"A", "\ufb01".encode(): b"fi", b"\t": b" ", b"\x01": b"", "e\u0301".encode(): "\u00e9".encode()}
    pieces = ["<pad>", "</s>", "<unk>", sp, "a", "b", "ab", sp + "a", sp + "ab", "fi", sp + "fi", "\u00e9", "A", "<0x41>"]
    vocab = [[p, 0.0 if i < 3 else -1.0 - (i % 5) * 0.75] for i, p in enumerate(pieces)]
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, c in enumerate(pieces[:3])]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap(rules)).decode()},
                {"type": "Strip", "strip_left": False, "strip_right": True},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": sp}]},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": sp, "prepend_scheme": "always",
                                              "split": True}]},
            "post_processor": None, "decoder": {"type": "Metaspace", "replacement": sp, "prepend_scheme": "always",
                                                "split": True},
            "model": {"type": "Unigram", "unk_id": 2, "vocab": vocab, "byte_fallback": True}}


file = json.dumps(unigram_tokenizer(), ensure_ascii=False)
put("hf_tokenizer", "unigram", file.encode() + b"\0" + "\uff21b \ufb01 e\u0301\t\x01ab  </s>zz\xff".encode())
put("tokenizer", "hf_unigram", file)
put("hf_tokenizer", "saved_unigram",
    json.dumps({"type": "hf_unigram", "eos_id": 1, "tokenizer": unigram_tokenizer()}).encode() + b"\0" + b"ab ab")

# Hugging Face config.json files (tools/interop), for fuzz_hf_config.
put("hf_config", "gpt2", json.dumps({
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 300, "n_embd": 16, "n_layer": 2,
    "n_head": 4, "n_positions": 32, "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
    "resid_pdrop": 0.1, "attn_pdrop": 0.1, "embd_pdrop": 0.1, "tie_word_embeddings": True,
    "bos_token_id": 263, "eos_token_id": 263}))
put("hf_config", "llama", json.dumps({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 300, "hidden_size": 16,
    "intermediate_size": 40, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
    "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "head_dim": 4,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 32},
    "bos_token_id": 1, "eos_token_id": [2, 3]}))
put("hf_config", "phi3", json.dumps({
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "vocab_size": 300, "hidden_size": 16,
    "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
    "sliding_window": 7, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attention_dropout": 0.0, "rope_scaling": None,
    "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2}))


def be32(*v):
    return struct.pack(">" + "I" * len(v), *v)


# The first byte picks the reader: 0 mod 3 = images, 1 = labels, 2 = an images
# file (its length in the next two bytes) and a labels file as a data set.
put("idx", "images", b"\0" + be32(2051, 2, 2, 3) + bytes(range(12)))
put("idx", "labels", b"\1" + be32(2049, 4) + bytes([1, 0, 9, 3]))
put("idx", "empty_images", b"\0" + be32(2051, 0, 28, 28))
pair_images = be32(2051, 3, 2, 2) + bytes(range(12))
put("idx", "pair", b"\2" + struct.pack(">H", len(pair_images)) + pair_images + be32(2049, 3) + bytes([4, 0, 9]))
empty_images = be32(2051, 0, 2, 2)
put("idx", "empty_pair", b"\2" + struct.pack(">H", len(empty_images)) + empty_images + be32(2049, 0))

# An analysis.json as `keystone analyze` writes it (the keys --compare reads).
def analysis(attention, head_key):
    return {"schema": "keystone.analysis/1", "run": "/runs/x", "split": "test",
            "model": {"attention": attention, "heads": 2, "head_dim": 4, "params": 100, "total_heads": 2},
            "sites": [{"name": "layers.0.self_attn", "js_mean_off_diagonal": 0.1, "cosine_mean_off_diagonal": None,
                       "rank": {"examples": [{"heads": [{head_key: {"effective_rank": 1.5}, "attention": {"effective_rank": 2}},
                                                        {"attention": {"effective_rank": 3}}]}]}}],
            "pruning": {"metric": "accuracy", "points": [{"masked": 0, "loss": 1.0, "accuracy": 0.5},
                                                         {"masked": 1, "loss": 1.2, "accuracy": None}]}}


put("analysis", "softmax", json.dumps(analysis("softmax", "scores")))
put("analysis", "mgk", json.dumps(analysis("mgk", "mixture"), indent=1))

# metrics.jsonl: the first byte picks plot's options (bit 0 --x time, 1 --log-y,
# 2 --seeds); a '\0' separates two runs' files.
records = [{"split": "train", "step": 10, "loss": 5.0, "bpb": 2.5, "grad_norm": 40.0, "elapsed_s": 1.5},
           {"split": "valid", "step": 10, "loss": 4.2, "accuracy": 0.3, "exact_match": 0.1, "elapsed_s": 2},
           {"split": "train", "step": 20, "loss": None, "elapsed_s": 3},
           {"split": "test", "step": 20, "loss": 4.3, "ppl": 73.7, "elapsed_s": 4}]
lines = "".join(json.dumps(r) + "\n" for r in records)
put("metrics", "one_run", "\0" + lines)
put("metrics", "two_seeds_log_time", "\7" + lines + "\0" + lines.replace("4.2", "3.9"))

# token_shard: the first byte picks the vocabulary the ids are checked against
# (0 none, 1: 260, 2: 50257, 3: 128256); then an llm.c .bin shard: 256 int32
# (magic, version, count, zeros) and the tokens, as dev/data/data_common.py writes them.
def shard(tokens, u32=False):
    header = struct.pack("<3i", 20240801 if u32 else 20240520, 7 if u32 else 1, len(tokens)) + b"\0" * (1024 - 12)
    return header + struct.pack("<%d%s" % (len(tokens), "I" if u32 else "H"), *tokens)


put("token_shard", "u16_byte_vocab", b"\1" + shard([2, 76, 105, 259, 4, 2, 104]))
put("token_shard", "u16_gpt2", b"\2" + shard([50256, 15496, 11, 995, 0, 50256]))
put("token_shard", "u32_llama3", b"\3" + shard([128000, 9906, 11, 1917, 0, 128001], u32=True))
put("token_shard", "u32_no_vocab", b"\0" + shard([1, 2**31 - 1, 2**32 - 1], u32=True))

# GGUF v3 (nn/gguf.h, tools/interop/gguf_llama.h), for fuzz_gguf: a small llama
# file as `keystone export --to gguf` writes it (metadata, byte-level tokenizer,
# tensors at 32-byte alignment), one all F32 and one with F16, BF16 and Q8_0;
# a qwen2 one; and a llama one with a SentencePiece vocabulary (model "llama":
# scores, byte tokens; tools/interop/gguf_sentencepiece.h).
def gguf(kv, tensors):
    def s(x):
        x = x.encode()
        return struct.pack("<Q", len(x)) + x

    def value(v):
        if isinstance(v, bool):
            return struct.pack("<IB", 7, v)
        if isinstance(v, int):
            return struct.pack("<II", 4, v)
        if isinstance(v, float):
            return struct.pack("<If", 6, v)
        if isinstance(v, str):
            return struct.pack("<I", 8) + s(v)
        if all(isinstance(e, str) for e in v):
            return struct.pack("<IIQ", 9, 8, len(v)) + b"".join(s(e) for e in v)
        if all(isinstance(e, float) for e in v):
            return struct.pack("<IIQ", 9, 6, len(v)) + struct.pack("<%df" % len(v), *v)
        return struct.pack("<IIQ", 9, 5, len(v)) + struct.pack("<%di" % len(v), *v)
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv) + 1) + s("general.alignment") + value(32)
    for k, v in kv.items():
        out += s(k) + value(v)
    offset, blob = 0, b""
    for name, (shape, gtype, data) in tensors.items():
        out += s(name) + struct.pack("<I", len(shape)) + struct.pack("<%dQ" % len(shape), *reversed(shape))
        out += struct.pack("<IQ", gtype, len(blob))
        blob += data + b"\0" * (-len(data) % 32)
    return out + b"\0" * (-len(out) % 32) + blob


def llama_gguf(d, types, arch="llama", sp=False):
    """arch "qwen2": its keys, q/k/v biases and Qwen2's pre-tokenizer; sp: a SentencePiece vocabulary."""
    chars = byte_chars() + ["he", "ll"]  # the bytes, and the merges' results (the tokenizer loads whole)
    f, h, kv_heads, V = 2 * d, 2, 1, len(chars)
    a = arch + "."
    kv = {"general.architecture": arch, a + "context_length": 16, a + "embedding_length": d,
          a + "block_count": 1, a + "feed_forward_length": f, a + "attention.head_count": h,
          a + "attention.head_count_kv": kv_heads, a + "rope.freq_base": 10000.0,
          a + "attention.layer_norm_rms_epsilon": 1e-5, a + "rope.dimension_count": d // h,
          a + "vocab_size": V, "tokenizer.ggml.model": "gpt2",
          "tokenizer.ggml.pre": "qwen2" if arch == "qwen2" else "gpt-2",
          "tokenizer.ggml.tokens": chars, "tokenizer.ggml.token_type": [1] * V,
          "tokenizer.ggml.merges": ["h e", "l l"], "tokenizer.ggml.eos_token_id": 10}
    if sp:  # the bytes as <0xAB>, a few characters, tokens made by merges: unique scores, the best first
        pieces = ["\u2581", "h", "e", "l", "o", "he", "ll", "\u2581he", "llo"]
        chars = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + pieces
        V = len(chars)
        kv |= {"tokenizer.ggml.model": "llama", "tokenizer.ggml.pre": "default", "tokenizer.ggml.tokens": chars,
               "tokenizer.ggml.scores": [0.0] * 259 + [-100.0 - i for i in range(5)] + [-1.0, -2.0, -3.0, -4.0],
               "tokenizer.ggml.token_type": [2, 3, 3] + [6] * 256 + [1] * len(pieces), a + "vocab_size": V,
               "tokenizer.ggml.unknown_token_id": 0, "tokenizer.ggml.eos_token_id": 2,
               "tokenizer.ggml.add_space_prefix": True}
        del kv["tokenizer.ggml.merges"]
    p = d // h
    shapes = {"token_embd.weight": [V, d], "output_norm.weight": [d], "output.weight": [V, d],
              "blk.0.attn_norm.weight": [d], "blk.0.ffn_norm.weight": [d], "blk.0.attn_q.weight": [h * p, d],
              "blk.0.attn_k.weight": [kv_heads * p, d], "blk.0.attn_v.weight": [kv_heads * p, d],
              "blk.0.attn_output.weight": [d, h * p], "blk.0.ffn_gate.weight": [f, d],
              "blk.0.ffn_up.weight": [f, d], "blk.0.ffn_down.weight": [d, f]}
    if arch == "qwen2":
        shapes |= {"blk.0.attn_q.bias": [h * p], "blk.0.attn_k.bias": [kv_heads * p], "blk.0.attn_v.bias": [kv_heads * p]}
    tensors = {}
    for i, (name, shape) in enumerate(shapes.items()):
        n = 1
        for x in shape:
            n *= x
        vals = [((j * 7 + i) % 13 - 6) / 16 for j in range(n)]
        t = 0 if len(shape) == 1 else types[i % len(types)]
        if t == 0:
            data = struct.pack("<%df" % n, *vals)
        elif t == 1:
            data = struct.pack("<%de" % n, *vals)
        elif t == 30:
            data = b"".join(struct.pack("<f", v)[2:] for v in vals)
        else:  # Q8_0: scale 1/16 (fp16), the values' sixteenths as int8
            data = b"".join(struct.pack("<e", 1 / 16) + struct.pack("<32b", *[round(v * 16) for v in vals[b:b + 32]])
                            for b in range(0, n, 32))
        tensors[name] = (shape, t, data)
    return gguf(kv, tensors)


put("gguf", "llama_f32", llama_gguf(4, [0]))
put("gguf", "llama_f16_bf16_q8_0", llama_gguf(32, [1, 30, 8]))
put("gguf", "qwen2_f32", llama_gguf(4, [0], "qwen2"))
put("gguf", "llama_sentencepiece_f32", llama_gguf(4, [0], sp=True))
