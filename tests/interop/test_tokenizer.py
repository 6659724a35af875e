"""tests/interop/test_tokenizer.py KS_TOKENIZE — Keystone's hf_bpe tokenizer
(datasets/hf_bpe.h) against the reference in bpe_reference.py: GPT-2-style,
Llama-3-style and Qwen2-style tokenizer.json files made here (merges trained on the text by the
reference), on a multilingual text with emoji, CJK, accents, digits,
contractions and whitespace runs; ids must be identical. Then damaged files,
each refused with an error naming the key. Plain python3, no torch needed.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_reference as ref  # noqa: E402

TEXT = ("Hello world! It's a test: they'll've DON'T we'D I'M 'Re\n"
        "Ünïcödé façade naïve café — Ελληνικά Русский текст עברית العربية हिन्दी\n"
        "中文字符测试，日本語のテキスト。한국어 텍스트\n"
        "emoji 😀🎉👍🏽 👨‍👩‍👧 flags 🇩🇪\tand\ttabs\n\n\n"
        "digits 1234567 3.14159 ١٢٣ ⅫⅣ ²³ 12,345,678\n"
        "   leading spaces   and   runs    \r\n\r\n  \u00a0nbsp\u3000ideographic space\u2003em\n"
        "symbols @#$%^&*()_+-=[]{}|;:\",.<>/?`~ ... !!! ???\n"
        "<|endoftext|>after the special<|endoftext|><|fim|> trailing   ")
CORPUS = [TEXT, "the quick brown fox jumps over the lazy dog " * 3, "  \n\n  12 34 567 8901 ", "Русский中文😀" * 2]


BYTE_LEVEL_DECODER = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}


def added_token(content, id, special=True, normalized=False):
    return {"id": id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": normalized, "special": special}


def tokenizer_json(vocab, merges, style, added, add_prefix_space=False, decoder=BYTE_LEVEL_DECODER):
    """A byte-level BPE tokenizer.json in `style` ("gpt2", "llama3" or "qwen2": their pre-tokenizers, merges
    written as each writes them); `added` holds (content, id) special tokens, or (content, id, special,
    normalized). Also what tests/fuzz/make_seeds.py writes its hf_tokenizer seeds with."""
    if style == "gpt2":
        pre = {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True, "use_regex": True}
        merge_list = [f"{a} {b}" for a, b in merges]
    else:  # Llama-3's Split, or Qwen2's (the same but for one digit a piece, and no ignore_merges)
        regex = ref.QWEN2_TEXT if style == "qwen2" else ref.LLAMA3_TEXT
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
        merge_list = [[a, b] for a, b in merges]
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [added_token(*t) for t in added],
            "normalizer": None, "pre_tokenizer": pre, "post_processor": None, "decoder": decoder,
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": style == "llama3", "vocab": vocab, "merges": merge_list}}


def run(tool, tok, text_file):
    return subprocess.run([tool, tok, text_file], capture_output=True, text=True)


def main():
    tool = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        text_file = os.path.join(d, "text.txt")
        with open(text_file, "wb") as f:
            f.write(TEXT.encode("utf-8"))
        for style, pattern in (("gpt2", ref.GPT2), ("llama3", ref.LLAMA3), ("qwen2", ref.QWEN2)):
            vocab, merges = ref.train(CORPUS, pattern, 300)
            added = [("<|endoftext|>", len(vocab)), ("<|fim|>", len(vocab) + 1), ("<|endoftext|>x", len(vocab) + 2)]
            reference = ref.Tokenizer(vocab, merges, pattern, added, ignore_merges=style == "llama3")
            expect = reference.encode(TEXT)
            path = os.path.join(d, f"{style}.json")
            good = tokenizer_json(vocab, merges, style, added)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(good, f, ensure_ascii=False)
            r = run(tool, path, text_file)
            got = [int(x) for x in r.stdout.split("\n")[0].split()] if r.returncode == 0 else None
            if got != expect:
                failures += 1
                print(f"FAIL {style}: rc {r.returncode} {r.stderr.strip()}")
                if got:
                    k = next((i for i, (a, b) in enumerate(zip(got, expect)) if a != b), min(len(got), len(expect)))
                    print(f"  first difference at {k}: keystone {got[k:k + 8]} reference {expect[k:k + 8]}")
            else:
                print(f"ok {style}: {len(expect)} ids identical to the reference, {len(merges)} merges;",
                      r.stdout.split("\n")[1])
            # The regex alone, on text the merges never saw.
            for probe in ["x" + chr(c) * 3 + " 12345 a\u00a0\u00a0b" for c in (0x2028, 0x85, 0x1F600, 0x0301)]:
                with open(text_file + ".probe", "wb") as f:
                    f.write(probe.encode("utf-8"))
                r = run(tool, path, text_file + ".probe")
                want = reference.encode(probe)
                if r.returncode != 0 or [int(x) for x in r.stdout.split("\n")[0].split()] != want:
                    failures += 1
                    print(f"FAIL {style} probe {probe!r}: {r.stdout[:200]} {r.stderr.strip()}")

            # Damaged files: each must fail with its key named.
            def damaged(edit, needle):
                nonlocal failures
                problem = ref.refused(tool, good, edit, needle, d, text_file)
                if problem:
                    failures += 1
                    print(f"FAIL {style} {problem}")
            first = next(iter(vocab))
            damaged(lambda j: j["model"].update(type="WordPiece"), 'model.type "WordPiece"')
            damaged(lambda j: j["model"]["vocab"].pop(first), "has no token for byte")
            damaged(lambda j: j["model"]["merges"].append(["zz", "q"]), '"zz" is not in model.vocab')
            damaged(lambda j: j["model"].update(byte_fallback=True), "model.byte_fallback")
            damaged(lambda j: j.update(normalizer={"type": "NFC"}), "normalizer")
            damaged(lambda j: j["model"]["vocab"].update({"Ġthe_dup": 5}), "is given to two tokens")
            damaged(lambda j: j["added_tokens"][0].update(lstrip=True), "added_tokens[0].lstrip")
            damaged(lambda j: j.update(model="BPE"), 'missing the "model" object')
            if style != "gpt2":
                damaged(lambda j: j["pre_tokenizer"]["pretokenizers"][0].update(pattern={"Regex": "\\w+"}),
                        "only GPT-2's, Llama-3's and Qwen2's regexes")
            else:
                damaged(lambda j: j.update(pre_tokenizer={"type": "Whitespace"}), "expected ByteLevel")
    print("FAILED" if failures else "all tokenizer checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
