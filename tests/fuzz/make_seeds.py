#!/usr/bin/env python3
# tests/fuzz/make_seeds.py OUT_DIR — writes the seed corpora of the fuzz
# harnesses into OUT_DIR/<harness>/: a few small valid inputs each, a few
# hundred bytes at most, so libFuzzer starts from files that reach deep into
# each reader. Generated rather than committed, so they follow the formats'
# writers here; nothing is downloaded.
import json
import os
import struct
import sys

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
