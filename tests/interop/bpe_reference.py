"""tests/interop/bpe_reference.py — a reference byte-level BPE in plain Python
(no tokenizers package): GPT-2's bytes_to_unicode, its pre-tokenizer regex,
Llama-3's and Qwen2's run by Python's own `re` engine with the Unicode classes spelled out
from unicodedata (\\p{L} = categories L*, \\p{N} = N*, \\s = White_Space), merges
applied by rank as GPT-2's encoder.py does, added tokens cut out first, and a
tiny BPE trainer to make merges for test tokenizers. What Keystone's
datasets/hf_bpe.cpp must agree with, id for id.
"""
import re
import unicodedata


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def _ranges(pred):
    out, start = [], None
    for cp in range(0x110000):
        ok = pred(cp)
        if ok and start is None:
            start = cp
        if not ok and start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    return "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in out)


_L = _ranges(lambda c: unicodedata.category(chr(c)).startswith("L"))
_N = _ranges(lambda c: unicodedata.category(chr(c)).startswith("N"))
_WS = "".join(re.escape(chr(c)) for c in [*range(0x9, 0xE), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                                          0x2028, 0x2029, 0x202F, 0x205F, 0x3000])
_CONTRACTIONS = "'s|'t|'re|'ve|'m|'ll|'d"
GPT2 = re.compile(f"{_CONTRACTIONS}| ?[{_L}]+| ?[{_N}]+| ?[^{_WS}{_L}{_N}]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+")
LLAMA3 = re.compile(f"(?i:{_CONTRACTIONS})|[^\\r\\n{_L}{_N}]?[{_L}]+|[{_N}]{{1,3}}| ?[^{_WS}{_L}{_N}]+[\\r\\n]*"
                    f"|[{_WS}]*[\\r\\n]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+")
QWEN2 = re.compile(f"(?i:{_CONTRACTIONS})|[^\\r\\n{_L}{_N}]?[{_L}]+|[{_N}]| ?[^{_WS}{_L}{_N}]+[\\r\\n]*"
                   f"|[{_WS}]*[\\r\\n]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+")
GPT2_TEXT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_TEXT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_TEXT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
              r"\s*[\r\n]+|\s+(?!\S)|\s+")

B2U = bytes_to_unicode()


def pieces(text, pattern):
    return [m.group(0) for m in pattern.finditer(text)]


def bpe(word, ranks):
    """GPT-2's encoder.py: merge every occurrence of the lowest-ranked pair, repeat."""
    sym = list(word)
    while len(sym) > 1:
        pairs = [(ranks.get((a, b), None), a, b) for a, b in zip(sym, sym[1:])]
        pairs = [p for p in pairs if p[0] is not None]
        if not pairs:
            break
        _, a, b = min(pairs)
        out, i = [], 0
        while i < len(sym):
            if i + 1 < len(sym) and sym[i] == a and sym[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(sym[i])
                i += 1
        sym = out
    return sym


class Tokenizer:
    def __init__(self, vocab, merges, pattern, added=(), ignore_merges=False):
        self.vocab, self.pattern, self.ignore_merges = vocab, pattern, ignore_merges
        self.ranks = {tuple(m): i for i, m in reversed(list(enumerate(merges)))}
        self.added = sorted(added, key=lambda t: -len(t[0]))  # (content, id), longest first

    def encode_plain(self, text):
        ids = []
        for piece in pieces(text, self.pattern):
            word = "".join(B2U[b] for b in piece.encode("utf-8"))
            if self.ignore_merges and word in self.vocab:
                ids.append(self.vocab[word])
                continue
            ids += [self.vocab[s] for s in bpe(word, self.ranks)]
        return ids

    def encode(self, text):
        ids, start, i = [], 0, 0
        while i < len(text):
            hit = next((a for a in self.added if text.startswith(a[0], i)), None)
            if hit is None:
                i += 1
                continue
            ids += self.encode_plain(text[start:i]) + [hit[1]]
            i = start = i + len(hit[0])
        return ids + self.encode_plain(text[start:])


def train_words(words, num_merges):
    """Merges learned from {word (a tuple of symbols): count}: the most frequent
    pair each time (ties by the pair's order), applied to every word."""
    merges = []
    for _ in range(num_merges):
        counts = {}
        for w, n in words.items():
            for pair in zip(w, w[1:]):
                counts[pair] = counts.get(pair, 0) + n
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        merges.append(best)
        new = {}
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + n
        words = new
    return merges


def train(texts, pattern, num_merges):
    """A small byte-level BPE trainer: the most frequent pair (ties: the smallest), num_merges times."""
    words = {}
    for t in texts:
        for p in pieces(t, pattern):
            w = tuple(B2U[b] for b in p.encode("utf-8"))
            words[w] = words.get(w, 0) + 1
    merges = train_words(words, num_merges)
    vocab = {B2U[b]: i for i, b in enumerate(sorted(B2U))}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return vocab, merges


def refused(tool, good, edit, needle, workdir, text_file):
    """For the tests: writes `good` (a tokenizer.json object) changed by `edit`
    and runs `tool FILE TEXT` (ks_tokenize) on it; None when it fails as it
    must (exit 1, `needle` in its message), else what went wrong."""
    import copy
    import json as json_module
    import os
    import subprocess
    j = copy.deepcopy(good)
    edit(j)
    bad = os.path.join(workdir, "bad.json")
    with open(bad, "w", encoding="utf-8") as f:
        json_module.dump(j, f, ensure_ascii=False)
    r = subprocess.run([tool, bad, text_file], capture_output=True, text=True)
    if r.returncode != 1 or needle not in r.stderr:
        return f"damaged ({needle}): rc {r.returncode}: {r.stderr.strip()[:300]}"
    return None
