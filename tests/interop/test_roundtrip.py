"""tests/interop/test_roundtrip.py KEYSTONE KS_TOKENIZE KS_LOGITS CACHE_DIR — round
trips for runs trained in Keystone (issue 55 item 6), not a test of imported
Hugging Face models (test_gpt2.py, test_llama.py do that).

Tiny runs are trained here, one per tokenizer (byte, char, word with and without
lowercase and split punctuation, bpe) on a text of many scripts, each tied the
Keystone way (scaled, reversed lookups) or untied, GPT-2- or Llama-shaped. For
each:
  - `export --to hf` writes tokenizer.json; tokenizers.js (Hugging Face's own,
    npm @huggingface/tokenizers, fetched once into CACHE_DIR) gives Keystone's
    ids on hostile strings (empty, whitespace runs, NUL and control
    characters, emoji, combining marks, CJK, the specials' names inside the
    text, punctuation runs, a U+FFFD where invalid UTF-8 would be) and on the
    training text; for the lossless ones (byte, bpe) its decoding is the text;
  - `import --from hf` of the folder gives a run whose tokenizer is the same
    Keystone tokenizer (same type, same ids) and whose logits equal the
    original run's (max |diff| printed; tied runs untie exactly, the head's
    GEMM differs from the tied product only by float32 round-off);
  - a tied GPT-2-shaped run's exported folder runs in the plain-PyTorch GPT-2
    (gpt2_reference.py) with the original run's logits.
Then: `train` warns at start of a run that cannot export (an MGK attention; a
char vocabulary holding an invalid UTF-8 byte) and export refuses that run
naming the reason; `eval --file` of a whole file against a float64 reference
computed here from ks_logits over the same windows, and its bad inputs
(missing, empty, blank, not UTF-8, UTF-16 with BOM) refused, exit 1.
Skips (77) where torch or tokenizers.js cannot be had, after the checks that
need neither, which still fail the test.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import npm_package  # noqa: E402

HOSTILE = [
    "", " ", "   ", "\t\t\n \n  x", "a  b   c\t d\n\ne", "trailing   ", "  leading",
    "NUL\x00inside and \x01\x1f controls \x7f",
    "emoji 😀🎉👍🏽 🇩🇪 👩‍👩‍👧 zwj", "combining e\u0301 a\u0308 \u0915\u094d\u0937", "中文字符测试，日本語のテキスト。한국어",
    "<pad><bos><eos><unk> specials <eos>inside</s><|endoftext|>", "punct!!! ?? ...--- (x) [y] {z} @#$%^&*_+=~`|\\/",
    "digits 1234567 3.14159 ١٢٣ x2 2x", "Ünïcödé façade naïve café — Ελληνικά Русский", "replacement \ufffd char",
    "nbsp\u00a0and\u3000ideographic space\u2028line sep", "MiXeD CaSe WORDS", "it's they'll've DON'T",
]
WORDS = ("the quick brown fox jumps over lazy dog Hello World café naïve Ελληνικά Русский 中文 😀 it's 3.14 "
         "don't (x) a-b MiXeD NUL\x00x tab\tsep").split(" ")


def make_text(path, n=160, seed=0):
    import random
    rnd = random.Random(seed)
    lines = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 14))) for _ in range(n)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return lines


class T:
    def __init__(self, keystone, tokenize, logits, tmp):
        self.keystone, self.tokenize_tool, self.logits_tool, self.tmp = keystone, tokenize, logits, tmp
        self.failures = 0
        self.memo = {}

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures += 1
        return ok

    def ks(self, *args):
        return subprocess.run([self.keystone, *args], capture_output=True, text=True)

    def ids_many(self, tokenizer_file, texts):
        """The ids of each text, from one ks_tokenize call for all texts not seen before (remembered per file)."""
        memo = self.memo.setdefault(tokenizer_file, {})
        todo = [s for s in dict.fromkeys(texts) if s not in memo]
        if todo:
            paths = []
            for i, text in enumerate(todo):
                p = os.path.join(self.tmp, f"text{i}.bin")
                with open(p, "wb") as f:
                    f.write(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
                paths.append(p)
            r = subprocess.run([self.tokenize_tool, tokenizer_file, *paths], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(r.stderr)
            lines = r.stdout.split("\n")  # three lines per text: ids, vocab_size, decoded
            for i, text in enumerate(todo):
                line = lines[3 * i]
                memo[text] = [int(x) for x in line.split()] if line else []
        return [memo[s] for s in texts]

    def ids(self, tokenizer_file, text):
        return self.ids_many(tokenizer_file, [text])[0]

    def logits_many(self, run, seqs):
        """The logits of each id sequence (a forward each), from one ks_logits call."""
        args = []
        for i, ids in enumerate(seqs):
            args += (["--"] if i else []) + [str(x) for x in ids]
        r = subprocess.run([self.logits_tool, run, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        blocks = r.stdout.strip("\n").split("\n\n")
        return [[[float(x) for x in line.split()] for line in b.split("\n")] for b in blocks]

    def logits(self, run, ids):
        return self.logits_many(run, [ids])[0]

    def train(self, name, tokenizer, model, data, steps=4, expect_rc=0):
        cfg = {"name": name, "seed": 0,
               "data": {"dataset": "text", "train": data, "valid_fraction": 0.1, "test_fraction": 0.1,
                        "seq_len": 24, "tokenizer": tokenizer},
               "model": {"model": "decoder_lm", "d_model": 16, "layers": 1, "dropout": 0.0, **model},
               "optimizer": {"type": "adamw", "lr": 3e-3},
               "train": {"steps": steps, "batch_size": 4, "eval_every": steps, "log_every": steps}}
        path = os.path.join(self.tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        run = os.path.join(self.tmp, "runs", name)
        r = self.ks("train", "--config", path, "--out", run, "--quiet")
        self.check(r.returncode == expect_rc, f"{name}: train exits {expect_rc} ({r.stderr.strip()[-300:]})")
        return run, r


MODELS = {
    "gpt2_tied": {"tie_embeddings": True, "attention": {"type": "softmax", "heads": 2}},
    "gpt2": {"attention": {"type": "softmax", "heads": 2}},
    "llama_tied": {"tie_embeddings": True, "norm": "rmsnorm", "positions": "rope", "ff": "swiglu", "bias": False,
                   "attention": {"type": "softmax", "heads": 2, "kv_heads": 1}},
}
RUNS = [  # name, tokenizer section, model
    ("byte", {"type": "byte"}, "gpt2_tied"),
    ("char", {"type": "char"}, "llama_tied"),
    ("word", {"type": "word"}, "gpt2"),
    ("word_lower", {"type": "word", "lowercase": True, "split_punctuation": False}, "gpt2_tied"),
    ("bpe", {"type": "bpe", "vocab_size": 400}, "llama_tied"),
]


def check_runs(t, data, lines):
    """Export and import of each run: the same tokenizer and logits. Returns [(name, run, hf folder)]."""
    done = []
    for name, tok, model in RUNS:
        run, r = t.train(name, tok, MODELS[model], data)
        if r.returncode != 0:
            continue
        t.check("will not export" not in r.stderr, f"{name}: train gives no export warning ({r.stderr.strip()[:200]})")
        hf = os.path.join(t.tmp, "hf", name)
        r = t.ks("export", "--to", "hf", run, "--out", hf)
        if not t.check(r.returncode == 0, f"{name}: export --to hf ({r.stderr.strip()[:300]})"):
            continue
        with open(os.path.join(hf, "config.json")) as f:
            cfg = json.load(f)
        t.check(cfg["tie_word_embeddings"] is False, f"{name}: exported untied (tie_word_embeddings false)")
        back = os.path.join(t.tmp, "runs", name + "_back")
        r = t.ks("import", "--from", "hf", hf, "--out", back, "--data", data)
        if not t.check(r.returncode == 0, f"{name}: import --from hf of the export ({r.stderr.strip()[:300]})"):
            continue
        with open(os.path.join(back, "tokenizer.json")) as f:
            t.check(json.load(f).get("type") == tok["type"], f"{name}: the imported run's tokenizer is {tok['type']}")
        texts = HOSTILE + lines[:20]
        same = sum(a == b for a, b in zip(t.ids_many(os.path.join(run, "tokenizer.json"), texts),
                                          t.ids_many(os.path.join(back, "tokenizer.json"), texts)))
        t.check(same == len(texts), f"{name}: the imported tokenizer's ids equal the run's ({same}/{len(texts)} texts)")
        ids = t.ids(os.path.join(run, "tokenizer.json"), lines[0] + " " + lines[1])[:20]
        a, b = t.logits(run, ids), t.logits(back, ids)
        diff = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
        t.check(len(a) == len(b) and diff <= 1e-5, f"{name}: imported logits equal the run's (max |diff| {diff:.3g})")
        done.append((name, run, hf))
    return done


def check_gpt2_reference(t, done, lines):
    """A tied run's exported folder in the plain-PyTorch GPT-2: the run's logits."""
    try:
        import torch  # noqa: F401
        import gpt2_reference
        import hf_folder
    except ImportError:
        return False
    for name, run, hf in done:
        with open(os.path.join(hf, "config.json")) as f:
            cfg = json.load(f)
        if cfg["architectures"] != ["GPT2LMHeadModel"]:
            continue
        sd = hf_folder.load_safetensors(os.path.join(hf, "model.safetensors"))
        ids = t.ids(os.path.join(run, "tokenizer.json"), lines[2])[:20]
        ref = gpt2_reference.gpt2_logits(sd, cfg, ids).tolist()
        ks = t.logits(run, ids)
        diff = max(abs(x - y) for ra, rb in zip(ref, ks) for x, y in zip(ra, rb))
        top = max(abs(x) for r in ks for x in r)
        t.check(diff <= 1e-5 * max(1.0, top), f"{name}: the exported folder in the plain-PyTorch GPT-2 gives the "
                                              f"run's logits (max |diff| {diff:.3g}, max |logit| {top:.3g})")
    return True


def check_refusals(t, data):
    run, r = t.train("mgk", {"type": "byte"}, {"attention": {"type": "mgk", "heads": 2}}, data, steps=1)
    t.check("warning: this run will not export to Hugging Face" in r.stderr and "attention.type" in r.stderr,
            f"mgk: train warns at start, naming attention.type ({r.stderr.strip()[:300]})")
    bad = os.path.join(t.tmp, "latin1.txt")
    with open(bad, "wb") as f:
        f.write("caf\xe9 na\xefve\n".encode("latin-1") * 40 + b"plain ascii line\n" * 40)
    run, r = t.train("char_latin1", {"type": "char"}, MODELS["gpt2"], bad, steps=1)
    t.check("will not export" in r.stderr and "invalid UTF-8 byte 0xE9" in r.stderr,
            f"char on Latin-1: train warns, naming the byte ({r.stderr.strip()[-300:]})")
    r = t.ks("export", "--to", "hf", run, "--out", os.path.join(t.tmp, "hf", "char_latin1"))
    t.check(r.returncode == 1 and "invalid UTF-8 byte" in r.stderr and not os.path.exists(
        os.path.join(t.tmp, "hf", "char_latin1", "config.json")), f"char on Latin-1: export refused ({r.stderr.strip()})")


def check_eval_file(t, done, data):
    """eval --file against a float64 cross-entropy over the same windows from ks_logits."""
    for name, run, _ in done[:2] + done[-1:]:
        ids = []
        with open(data, encoding="utf-8") as f:
            text_lines = [line.rstrip("\r") for line in f.read().split("\n")]
        text_lines = [line for line in text_lines if line]
        for line_ids in t.ids_many(os.path.join(run, "tokenizer.json"), text_lines):
            ids += line_ids + [2]
        T = 24
        total, n = 0.0, 0
        starts = list(range(0, len(ids) - 1, T))
        windows = t.logits_many(run, [ids[w:w + T] for w in starts])
        for w, rows in zip(starts, windows):
            y = ids[w + 1:w + T + 1]
            for row, target in zip(rows[:len(y)], y):
                top = max(row)
                total += top + math.log(sum(math.exp(v - top) for v in row)) - row[target]
                n += 1
        r = t.ks("eval", "--run", run, "--file", data, "--batch", "3")
        if not t.check(r.returncode == 0, f"{name}: eval --file ({r.stderr.strip()[:300]})"):
            continue
        out = json.loads(r.stdout)
        ref = total / n
        t.check(out["tokens"] == n == len(ids) - 1 and abs(out["loss"] - ref) <= 1e-6 * max(1, ref),
                f"{name}: eval --file scores {out['tokens']} tokens, loss {out['loss']:.9f}; reference {n} tokens, "
                f"{ref:.9f}; perplexity {out['perplexity']:.4f}")
    run = done[0][1]
    cases = {"missing": None, "empty": b"", "blank": b"\n\r\n\n", "latin1": "caf\xe9\n".encode("latin-1"),
             "utf16": "hello world\n".encode("utf-16")}
    for what, content in cases.items():
        p = os.path.join(t.tmp, f"eval_{what}.txt")
        if content is not None:
            with open(p, "wb") as f:
                f.write(content)
        r = t.ks("eval", "--run", run, "--file", p)
        t.check(r.returncode == 1 and "eval --file" in r.stderr and p in r.stderr,
                f"eval --file of a {what} file refused: {r.stderr.strip()[:200]}")


REFERENCE_JS = r"""
const fs = require("fs");
const { Tokenizer } = require(process.argv[2]);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(process.argv[3], "utf8")),
                          JSON.parse(fs.readFileSync(process.argv[5], "utf8")));
const texts = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
process.stdout.write(JSON.stringify(texts.map((t) => {
  const ids = tok.encode(t, { add_special_tokens: false }).ids;
  return { ids, decoded: ids.length ? tok.decode(ids, { skip_special_tokens: false }) : "" };
})));
"""


def check_forms_js(t, done, lines, js):
    texts = HOSTILE + lines
    texts_file = os.path.join(t.tmp, "texts.json")
    with open(texts_file, "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False)
    script = os.path.join(t.tmp, "reference.js")
    with open(script, "w") as f:
        f.write(REFERENCE_JS)
    for name, run, hf in done:
        r = subprocess.run(["node", script, js, os.path.join(hf, "tokenizer.json"), texts_file,
                            os.path.join(hf, "tokenizer_config.json")], capture_output=True, text=True)
        if not t.check(r.returncode == 0, f"{name}: tokenizers.js loads the exported tokenizer.json "
                                          f"({r.stderr.strip()[:300]})"):
            continue
        want = json.loads(r.stdout)
        mine = t.ids_many(os.path.join(run, "tokenizer.json"), texts)
        bad = [(s, w["ids"], m) for s, w, m in zip(texts, want, mine) if w["ids"] != m]
        t.check(not bad, f"{name}: tokenizers.js's ids equal Keystone's on {len(texts)} texts "
                         f"({len(bad)} differ{': ' + repr(bad[0])[:300] if bad else ''})")
        if name in ("byte", "bpe"):
            undecoded = [s for s, w in zip(texts, want) if w["decoded"] != s]
            t.check(not undecoded, f"{name}: tokenizers.js decodes every text back ({len(undecoded)} differ"
                                   f"{': ' + repr(undecoded[0])[:200] if undecoded else ''})")


def main():
    keystone, tokenize, logits, cache = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        t = T(keystone, tokenize, logits, tmp)
        data = os.path.join(tmp, "text.txt")
        lines = make_text(data)
        done = check_runs(t, data, lines)
        check_refusals(t, data)
        check_eval_file(t, done, data)
        have_torch = check_gpt2_reference(t, done, lines)
        js = npm_package.tokenizers_js(os.path.abspath(cache))
        if js:
            check_forms_js(t, done, lines, js)
        if t.failures:
            print(f"{t.failures} checks failed")
            return 1
        if not have_torch or not js:
            print("skipped: " + ", ".join(w for w, ok in (("torch", have_torch), ("tokenizers.js", js)) if not ok) +
                  " cannot be had (the other checks passed)")
            return 77
        print("all checks passed")
        return 0


if __name__ == "__main__":
    sys.exit(main())
