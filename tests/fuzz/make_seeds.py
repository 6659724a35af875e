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


# The first byte picks the reader: even = images, odd = labels.
put("idx", "images", b"\0" + be32(2051, 2, 2, 3) + bytes(range(12)))
put("idx", "labels", b"\1" + be32(2049, 4) + bytes([1, 0, 9, 3]))
put("idx", "empty_images", b"\0" + be32(2051, 0, 28, 28))
