#!/usr/bin/env python3
# tools/bench/tiktoken_to_hf.py — writes GPT-2's tokenizer as a Hugging Face
# tokenizer.json from the ranks that OpenAI's tiktoken ships (the npm package
# `tiktoken`, file encoders/gpt2.json), so that Keystone's `tokenize` and
# tiktoken encode with the same tokenizer and their ids can be compared and
# timed side by side (tools/bench/tokenize_vs_tiktoken.sh).
#   python3 tools/bench/tiktoken_to_hf.py package/encoders/gpt2.json tokenizer.json
# The merges are recovered from the ranks as HF's own converter does
# (transformers' TikTokenConverter): each multi-byte token, encoded with the
# ranks below its own, splits into exactly two parts, which are its merge.
# Not here: any other encoding's pattern (only GPT-2's, which HF writes as a
# ByteLevel pre-tokenizer with use_regex true), the tokenizer's added tokens
# other than <|endoftext|>.
import base64
import json
import os
import sys

# GPT-2's printable stand-ins for the 256 bytes, from the tests' reference BPE.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "interop"))
from bpe_reference import bytes_to_unicode  # noqa: E402


def split_by_lower_ranks(ranks, token, max_rank):
    # Byte-pair encodes `token` with only the ranks below max_rank.
    parts = [bytes([b]) for b in token]
    while True:
        best, best_rank = None, None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < max_rank and (best_rank is None or r < best_rank):
                best, best_rank = i, r
        if best is None:
            return parts
        parts = parts[:best] + [parts[best] + parts[best + 1]] + parts[best + 2 :]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: tiktoken_to_hf.py ENCODERS/gpt2.json OUT/tokenizer.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        enc = json.load(f)
    # Lines "<prefix> <first rank> <base64 token> ...": tokens in rank order
    # from the line's first rank on (js-tiktoken's reader does the same).
    ranks = {}
    for line in filter(None, enc["bpe_ranks"].split("\n")):
        _, first, *tokens = line.split(" ")
        for k, t in enumerate(tokens):
            ranks[base64.b64decode(t)] = int(first) + k
    b2u = bytes_to_unicode()
    text = lambda t: "".join(b2u[b] for b in t)
    vocab = {text(t): r for t, r in ranks.items()}
    merges = []
    for t, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(t) == 1:
            continue
        parts = split_by_lower_ranks(ranks, t, r)
        if len(parts) != 2:
            sys.exit(f"token {t!r} (rank {r}) does not split into two lower-ranked parts")
        merges.append(f"{text(parts[0])} {text(parts[1])}")
    specials = enc["special_tokens"]
    for name, sid in specials.items():
        vocab[name] = sid
    if len(vocab) != enc["explicit_n_vocab"]:
        sys.exit(f"{len(vocab)} ids, expected {enc['explicit_n_vocab']}")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": sid, "content": name, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": True, "special": True}
            for name, sid in specials.items()
        ],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": merges},
    }
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    print(f"{sys.argv[2]}: {len(vocab)} ids, {len(merges)} merges")


if __name__ == "__main__":
    main()
