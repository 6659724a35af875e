"""tests/interop/hf_folder.py — a Hugging Face model folder written and read
by hand, as save_pretrained lays it out: config.json, tokenizer.json and
model.safetensors, or shards listed by model.safetensors.index.json. The
safetensors reader/writer needs no safetensors package (F32, F16, BF16).
Not here: any architecture (gpt2_reference.py, llama_reference.py).
"""
import json
import os
import struct

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
CODES = {v: k for k, v in DTYPES.items()}


def save_safetensors(path, tensors, dtype=torch.float32):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().to(dtype).contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if t.element_size() == 2 else t.numpy().tobytes()
        header[name] = {"dtype": CODES[dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__" or e["dtype"] not in DTYPES:  # a checkpoint's integer training state
            continue
        a, b = e["data_offsets"]
        dt = DTYPES[e["dtype"]]
        raw = bytearray(data[8 + n + a:8 + n + b])
        if dt == torch.float32:
            t = torch.frombuffer(raw, dtype=torch.float32) if raw else torch.zeros(0)
        else:
            t = torch.frombuffer(raw, dtype=torch.int16).view(dt)
        out[name] = t.reshape(e["shape"]).clone()
    return out


def write_folder(d, cfg, sd, tok, sharded=False, dtype=torch.float32):
    """config.json, tokenizer.json and the tensors sd (one file, or two shards with an index) in d."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    if not sharded:
        save_safetensors(os.path.join(d, "model.safetensors"), sd, dtype)
        return
    names = list(sd)
    half = len(names) // 2
    files = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    for fname, part in files.items():
        save_safetensors(os.path.join(d, fname), {n: sd[n] for n in part}, dtype)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": {n: fn for fn, part in files.items() for n in part}}, f)
