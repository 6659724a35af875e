#!/usr/bin/env python3
# tools/bench/grow_shards.py — grows a token corpus made by `keystone tokenize`
# from real text to any size, for measuring the data path on corpora larger
# than memory (tools/bench/big_corpus.sh): it reads one tokenize run's train
# shards, cuts them into documents at the end-of-text id (each document
# keeps its leading <eot>, as tokenize writes it), and writes TOKENS tokens of
# new llm.c shards (the same header and id width) whose documents are the
# base's in a fresh seeded order per pass, so no two shards hold the same
# sequence of documents, with the tokenizer copied beside them.
#   python3 tools/bench/grow_shards.py BASE_DIR BASE_NAME OUT_DIR OUT_NAME TOKENS [SHARD_TOKENS] [SEED]
# The result is real text's tokens, repeated: fit for timing a loader, its
# memory and start-up, never for measuring what a model learns. Not here: a
# val split (each val shard is the base's, copied once), a manifest (the
# data set reads shards without one).
import glob
import os
import random
import shutil
import struct
import sys

HEADER_INTS = 256
FORMATS = {20240520: (1, 2, "H"), 20240801: (7, 4, "I")}  # magic: (version, bytes per id, array code)


def read_shard(path):
    with open(path, "rb") as f:
        header = struct.unpack(f"<{HEADER_INTS}i", f.read(HEADER_INTS * 4))
        magic, version, count = header[0], header[1], header[2]
        if magic not in FORMATS or FORMATS[magic][0] != version:
            sys.exit(f"{path}: not an llm.c token shard (magic {magic}, version {version})")
        payload = f.read()
    width = FORMATS[magic][1]
    if len(payload) != count * width:
        sys.exit(f"{path}: header says {count} tokens, the file holds {len(payload) // width}")
    return magic, payload


def write_shard(path, magic, payload):
    version, width, _ = FORMATS[magic]
    header = [0] * HEADER_INTS
    header[0], header[1], header[2] = magic, version, len(payload) // width
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(struct.pack(f"<{HEADER_INTS}i", *header))
        f.write(payload)
    os.replace(tmp, path)


def main():
    if len(sys.argv) not in (6, 7, 8):
        sys.exit("usage: grow_shards.py BASE_DIR BASE_NAME OUT_DIR OUT_NAME TOKENS [SHARD_TOKENS] [SEED]")
    base_dir, base_name, out_dir, out_name = sys.argv[1:5]
    total = int(sys.argv[5])
    shard_tokens = int(sys.argv[6]) if len(sys.argv) > 6 else 100_000_000
    seed = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    paths = sorted(glob.glob(os.path.join(base_dir, f"{base_name}_train_*.bin")))
    if not paths:
        sys.exit(f"no {base_name}_train_*.bin shards in {base_dir}")
    magic, payload = None, bytearray()
    for p in paths:
        m, data = read_shard(p)
        if magic is not None and m != magic:
            sys.exit(f"{p}: another id width than {paths[0]}")
        magic = m
        payload += data
    width = FORMATS[magic][1]
    eot = struct.unpack_from("<H" if width == 2 else "<I", payload, 0)[0]
    # Documents: from each <eot> (the id the base's first token is) to the next.
    eot_bytes = payload[:width]
    starts, pos = [], 0
    while pos < len(payload):
        starts.append(pos)
        nxt = payload.find(eot_bytes, pos + width)
        while nxt != -1 and nxt % width:  # a match across two ids is no id
            nxt = payload.find(eot_bytes, nxt + 1)
        pos = len(payload) if nxt == -1 else nxt
    docs = [bytes(payload[a:b]) for a, b in zip(starts, starts[1:] + [len(payload)])]
    print(f"base: {len(paths)} shard(s), {len(payload) // width:,} tokens, {len(docs):,} documents (eot id {eot})")
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(seed)
    order, shard, written, current = [], 0, 0, bytearray()
    limit = shard_tokens * width
    while written < total:
        if not order:
            order = list(range(len(docs)))
            rng.shuffle(order)
        doc = docs[order.pop()]
        doc = doc[: (total - written) * width]
        current += doc
        written += len(doc) // width
        while len(current) >= limit or (written >= total and current):
            write_shard(os.path.join(out_dir, f"{out_name}_train_{shard:06d}.bin"), magic, bytes(current[:limit]))
            del current[:limit]
            shard += 1
            print(f"\r{shard} shard(s), {written:,} tokens", end="", flush=True)
    print()
    for p in sorted(glob.glob(os.path.join(base_dir, f"{base_name}_val_*.bin"))):
        shutil.copyfile(p, os.path.join(out_dir, os.path.basename(p).replace(base_name, out_name, 1)))
    shutil.copyfile(os.path.join(base_dir, f"{base_name}_tokenizer.json"), os.path.join(out_dir, f"{out_name}_tokenizer.json"))
    print(f"{out_dir}: {shard} train shard(s), {written:,} tokens")


if __name__ == "__main__":
    main()
