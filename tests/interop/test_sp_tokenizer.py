"""tests/interop/test_sp_tokenizer.py KS_TOKENIZE CACHE_DIR — Keystone's
SentencePiece-style BPE (datasets/hf_bpe.h: byte fallback, "▁" for spaces)
against Hugging Face's own tokenizers.js (the npm package
@huggingface/tokenizers, fetched once with `npm pack` into CACHE_DIR,
npm_package.py; the test
is skipped, exit 77, where npm or node cannot be had). Three tokenizer.json
files made here from merges trained on the text: Llama 2's layout (normalizer
Prepend "▁" + Replace " " -> "▁", no pre-tokenizer, byte fallback, fused
unknowns, decoders Replace, ByteFallback, Fuse, Strip), Mistral's (a Metaspace
pre-tokenizer, prepend_scheme "first", no split, the same decoders), the same
with a Metaspace decoder (no ByteFallback: byte tokens decode to their text)
and one without byte fallback (Metaspace split, prepend always, <unk> fused). On hostile strings (emoji, CJK, space runs,
leading and trailing spaces, a literal "▁", special tokens inside the text),
the ids and the decoded text must equal tokenizers.js's. Then damaged files,
each refused naming the key.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_reference as ref  # noqa: E402
import npm_package  # noqa: E402

SP = "\u2581"
TEXTS = [
    "Hello world! It's a test: they'll've DON'T we'D",
    "  leading spaces,   runs   of them and trailing   ",
    "Ünïcödé façade naïve café — Ελληνικά Русский текст",
    "中文字符测试，日本語のテキスト。한국어 텍스트 emoji 😀🎉👍🏽 flags 🇩🇪",
    "<s>a special token</s> in the middle<s>",
    "a literal \u2581 metaspace\u2581\u2581here and tabs\tand\nnewlines\n\n",
    "digits 1234567 3.14159 ١٢٣ and the quick brown fox jumps over the lazy dog",
    " ",
    "x",
]
CORPUS = ["the quick brown fox jumps over the lazy dog " * 4, "Hello world! It's a test of the tokenizer. " * 3,
          "leading spaces and runs of them, trailing and the other words " * 3, "façade naïve café Русский текст " * 2]


def train(corpus, n_merges):
    """A SentencePiece-style BPE: words start with "▁", merges stay inside words."""
    words = collections.Counter()
    for line in corpus:
        for w in (SP + line.replace(" ", SP)).split(SP):
            if w:
                words[tuple(SP + w)] += 1
    return sorted({c for w in words for c in w}), ref.train_words(dict(words), n_merges)


def tokenizer_json(chars, merges, style):
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    if style != "nofallback":
        for b in range(256):
            vocab[f"<0x{b:02X}>"] = len(vocab)
    for c in chars:
        vocab.setdefault(c, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for c, i in (("<unk>", 0), ("<s>", 1), ("</s>", 2))]
    model = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": style != "nofallback",
             "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}
    if style == "llama2":
        normalizer = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SP},
                                                          {"type": "Replace", "pattern": {"String": " "},
                                                           "content": SP}]}
        pre = None
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    else:
        normalizer = None
        scheme, split = ("always", True) if style == "nofallback" else ("first", False)
        pre = {"type": "Metaspace", "replacement": SP, "prepend_scheme": scheme, "split": split}
        decoder = {"type": "Metaspace", "replacement": SP, "prepend_scheme": scheme, "split": split}
    if style == "mistral":
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": normalizer,
            "pre_tokenizer": pre, "post_processor": None, "decoder": decoder, "model": model}


REFERENCE_JS = r"""
const fs = require("fs");
const { Tokenizer } = require(process.argv[2]);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(process.argv[3], "utf8")), {});
const texts = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
const out = texts.map((t) => {
  const ids = tok.encode(t, { add_special_tokens: false }).ids;
  return { ids, decoded: tok.decode(ids, { skip_special_tokens: false }) };
});
process.stdout.write(JSON.stringify(out));
"""


def main():
    tool, cache = sys.argv[1], sys.argv[2]
    js = npm_package.tokenizers_js(os.path.abspath(cache))
    if js is None:
        print("skipped: npm/node cannot fetch @huggingface/tokenizers")
        return 77
    failures = 0
    chars, merges = train(CORPUS, 120)
    with tempfile.TemporaryDirectory() as d:
        texts_file = os.path.join(d, "texts.json")
        with open(texts_file, "w", encoding="utf-8") as f:
            json.dump(TEXTS, f, ensure_ascii=False)
        script = os.path.join(d, "reference.js")
        with open(script, "w") as f:
            f.write(REFERENCE_JS)
        for style in ("llama2", "mistral", "metaspace_decoder", "nofallback"):
            good = tokenizer_json(chars, merges, style)
            path = os.path.join(d, f"{style}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(good, f, ensure_ascii=False)
            r = subprocess.run(["node", script, js, path, texts_file], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {style}: tokenizers.js: {r.stderr.strip()[:400]}")
                failures += 1
                continue
            want = json.loads(r.stdout)
            same = 0
            text_files = []
            for i, text in enumerate(TEXTS):
                text_files.append(os.path.join(d, f"text{i}.txt"))
                with open(text_files[-1], "wb") as f:
                    f.write(text.encode("utf-8"))
            # All texts in one call (three lines each); a failing call is rerun text by text to name the text.
            k = subprocess.run([tool, path, *text_files], capture_output=True, text=True)
            all_lines = k.stdout.split("\n") if k.returncode == 0 else None
            for i, (text, expect) in enumerate(zip(TEXTS, want)):
                if all_lines is None:
                    k = subprocess.run([tool, path, text_files[i]], capture_output=True, text=True)
                    lines = k.stdout.split("\n")
                else:
                    lines = all_lines[3 * i:3 * i + 3]
                got = [int(x) for x in lines[0].split()] if k.returncode == 0 else None
                decoded = bytes.fromhex(lines[2].split()[1] if len(lines[2].split()) > 1 else "").decode(
                    "utf-8", "replace") if k.returncode == 0 else None
                if got != expect["ids"] or decoded != expect["decoded"]:
                    failures += 1
                    print(f"FAIL {style} {text!r}: rc {k.returncode} {k.stderr.strip()[:200]}\n"
                          f"  keystone {got} {decoded!r}\n  tokenizers.js {expect['ids']} {expect['decoded']!r}")
                else:
                    same += len(got)
            print(f"ok {style}: {same} ids and {len(TEXTS)} decodings equal to tokenizers.js's")

            def damaged(edit, needle):
                nonlocal failures
                problem = ref.refused(tool, good, edit, needle, d, texts_file)
                if problem:
                    failures += 1
                    print(f"FAIL {style} {problem}")
            damaged(lambda j: j["model"].update(unk_token="<nope>"), 'model.unk_token "<nope>"')
            damaged(lambda j: j.update(normalizer={"type": "NFKC"}), "only Prepend and Replace normalizers")
            damaged(lambda j: j.update(decoder={"type": "WordPiece"}), "decoder")
            damaged(lambda j: j["model"]["merges"].append("zz q"), '"zz" is not in model.vocab')
            if style != "llama2":
                damaged(lambda j: j["pre_tokenizer"].update(prepend_scheme="sometimes"), "prepend_scheme")
                damaged(lambda j: j["pre_tokenizer"].update(replacement="_"), "replacement")
    print("FAILED" if failures else "all SentencePiece-style tokenizer checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
