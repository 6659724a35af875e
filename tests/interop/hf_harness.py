"""tests/interop/hf_harness.py — the checks test_gpt2.py and test_llama.py run
on an architecture: a random small model saved as a Hugging Face folder
(hf_folder.py) with a tokenizer.json, imported (one file, and sharded BF16);
logits within float32 round-off of the plain-PyTorch reference, greedy
continuation identical; eval, generate, analyze and train --init-from take the
run; export -> the same tensors bit for bit, config.json and tokenizer.json
kept, the folder runs in the reference; export -> import round trips
bit-exact; damaged folders refused naming the tensor or key.
Importing it exits 77 (ctest's skip) where `import torch` fails.
Not here: an architecture's reference (gpt2_reference.py, llama_reference.py).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import torch
except Exception:  # noqa: BLE001 - any failure to import means no torch here
    print("SKIPPED: no torch")
    sys.exit(77)

import bpe_reference as bref  # noqa: E402
import hf_folder  # noqa: E402
from test_tokenizer import CORPUS, TEXT, tokenizer_json  # noqa: E402


class Architecture:
    """One test model: config.json `cfg`, HF tensors `sd`, tokenizer.json `tok`,
    with `reference_tok` (bpe_reference.Tokenizer), its byte-level `vocab`,
    `specials` {id: content}, `eos` id, and `logits(sd, cfg, ids)` -> (T, V)."""

    def __init__(self, cfg, sd, tok, reference_tok, vocab, specials, eos, logits):
        self.cfg, self.sd, self.tok, self.reference_tok = cfg, sd, tok, reference_tok
        self.vocab, self.specials, self.eos, self.logits = vocab, specials, eos, logits

    def text(self, ids):
        """What `keystone generate` prints for ids: bytes decoded, the eos ending a line."""
        u2b = {c: b for b, c in bref.B2U.items()}
        by_id = {i: t for t, i in self.vocab.items()}
        out = b""
        for i in ids:
            out += b"\n" if i == self.eos else (self.specials[i].encode() if i in self.specials
                                                 else bytes(u2b[c] for c in by_id[i]))
        return out.decode("utf-8", "replace")

    def greedy(self, sd, ids, n):
        ids = list(ids)
        for _ in range(n):
            ids.append(int(self.logits(sd, self.cfg, ids)[-1].argmax()))
        return ids


def llama3_tokenizer(*specials):
    """A Llama-3-style byte-level BPE tokenizer.json (200 merges over the test
    corpus) whose added tokens `specials` take the ids after its vocabulary:
    (tokenizer.json, its bpe_reference.Tokenizer, the vocabulary, their ids)."""
    vocab, merges = bref.train(CORPUS, bref.LLAMA3, 200)
    added = [(content, len(vocab) + i) for i, content in enumerate(specials)]
    tok = tokenizer_json(vocab, merges, "llama3", added)
    return tok, bref.Tokenizer(vocab, merges, bref.LLAMA3, added, ignore_merges=True), vocab, [i for _, i in added]


class Harness:
    def __init__(self, keystone, logits_tool, tmp):
        self.keystone, self.logits_tool, self.tmp = keystone, logits_tool, tmp
        self.failures = []
        self.data = os.path.join(tmp, "data.txt")

    def write_data(self, lines):
        with open(self.data, "w", encoding="utf-8") as f:
            f.write("\n".join(line for line in lines if line.strip()) * 4 + "\n")

    def check(self, ok, what):
        print(("ok " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)

    def ks(self, *args, expect_rc=0):
        r = subprocess.run([self.keystone, *args], capture_output=True, text=True, errors="replace")
        if r.returncode != expect_rc:
            print(f"keystone {' '.join(args)}: rc {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        return r

    def import_folder(self, hf, run, *extra):
        return self.ks("import", "--from", "hf", hf, "--out", run, "--data", self.data, *extra).returncode == 0

    def logits(self, run, ids):
        r = subprocess.run([self.logits_tool, run, *map(str, ids)], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr)
            return None
        return torch.tensor([[float(x) for x in line.split()] for line in r.stdout.strip().split("\n")])

    def import_variant(self, a, name, ids):
        """Variant `a` of a test's model written as a folder, imported, and its
        logits on `ids` checked against the reference: (folder, run)."""
        d, run = os.path.join(self.tmp, "hf_" + name), os.path.join(self.tmp, "run_" + name)
        hf_folder.write_folder(d, a.cfg, a.sd, a.tok)
        self.check(self.import_folder(d, run), f"import of a {name} folder")
        self.check_logits(run, a, a.sd, ids, f"{name}: logits equal the reference's")
        return d, run

    def check_logits(self, run, a, sd, ids, what):
        """Keystone's logits of run against the reference's of sd, within 1e-5 of the largest logit."""
        want, got = a.logits(sd, a.cfg, ids), self.logits(run, ids)
        err = (got - want).abs().max().item() if got is not None else float("inf")
        scale = want.abs().max().item()
        self.check(err <= 1e-5 * max(1.0, scale), f"{what} (max |diff| {err:.2e}, max |logit| {scale:.1f})")

    def result(self, name):
        print("FAILED: " + "; ".join(self.failures) if self.failures else f"all {name} import/export checks passed")
        return 1 if self.failures else 0

    def check_architecture(self, a, text, prompt, cfg_keys_not_kept=()):
        """Every check but the architecture's own damaged folders; returns the imported run."""
        hf = os.path.join(self.tmp, "hf")
        hf_folder.write_folder(hf, a.cfg, a.sd, a.tok)
        run = os.path.join(self.tmp, "run")
        self.check(self.import_folder(hf, run, "--seq-len", "32"), "import of the folder")

        ids = a.reference_tok.encode(text)[:40]
        self.check_logits(run, a, a.sd, ids, "logits equal the plain-PyTorch reference's")

        cont = a.greedy(a.sd, a.reference_tok.encode(prompt), 12)
        r = self.ks("generate", "--run", run, "--prompt", prompt, "--tokens", "12", "--greedy")
        got_text = r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout
        self.check(r.returncode == 0 and got_text == a.text(cont),
                   f"greedy continuation identical ({a.text(cont)!r} vs {got_text!r})")

        hf16 = os.path.join(self.tmp, "hf16")
        hf_folder.write_folder(hf16, a.cfg, a.sd, a.tok, sharded=True, dtype=torch.bfloat16)
        run16 = os.path.join(self.tmp, "run16")
        self.check(self.import_folder(hf16, run16), "import of a sharded BF16 folder")
        sd16 = {k: v.to(torch.bfloat16).float() for k, v in a.sd.items()}
        self.check_logits(run16, a, sd16, ids, "sharded BF16 logits equal the reference's of the rounded weights")

        self.check_run(run)
        self.check_export(a, hf, run, ids, cfg_keys_not_kept)
        self.check_common_damage(a)
        return run

    def check_run(self, run):
        """The run folder is a run: eval, analyze, and fine-tuning from it."""
        r = self.ks("eval", "--run", run, "--split", "valid")
        self.check(r.returncode == 0 and '"ppl"' in r.stdout, "eval takes the imported run")
        r = self.ks("analyze", "--run", run, "--batches", "1", "--examples", "1", "--out",
                    os.path.join(self.tmp, "an"))
        self.check(r.returncode == 0, "analyze takes the imported run")
        ft = os.path.join(self.tmp, "ft")
        r = self.ks("train", "--init-from", run, "--out", ft, "--quiet", "--set", "train.steps=2",
                    "--set", "train.eval_every=2", "--set", "train.batch_size=2")
        self.check(r.returncode == 0 and os.path.exists(os.path.join(ft, "latest.safetensors")),
                   "train --init-from fine-tunes the imported run")
        r = self.ks("train", "--init-from", run, "--out", os.path.join(self.tmp, "ft0"), "--quiet",
                    "--set", "train.steps=1", "--set", "train.eval_every=1", "--set", "optimizer.lr=1e-12",
                    "--set", "train.batch_size=2")
        if r.returncode == 0:
            x = hf_folder.load_safetensors(os.path.join(run, "latest.safetensors"))
            y = hf_folder.load_safetensors(os.path.join(self.tmp, "ft0", "latest.safetensors"))
            same = all(torch.allclose(x[k], y[k], rtol=0, atol=1e-6) for k in x if not k.startswith("optimizer/"))
            self.check(same, "train --init-from starts from the run's weights (one step at lr 1e-12: unchanged)")
        else:
            self.check(False, "train --init-from at lr 1e-12")

    def check_export(self, a, hf, run, ids, cfg_keys_not_kept, tag=""):
        """Export -> the same HF tensors, bit for bit; -> import -> the same run weights."""
        out = os.path.join(self.tmp, "export" + tag)
        self.check(self.ks("export", "--to", "hf", run, "--out", out).returncode == 0,
                   f"export of the imported run{tag}")
        x = hf_folder.load_safetensors(os.path.join(hf, "model.safetensors"))
        y = hf_folder.load_safetensors(os.path.join(out, "model.safetensors"))
        self.check(set(x) == set(y) and all(torch.equal(x[k], y[k]) for k in x),
                   f"export{tag} gives back the HF tensors bit-exactly ({sorted(set(x) ^ set(y))[:4]})")
        with open(os.path.join(out, "config.json")) as f:
            ecfg = json.load(f)
        differ = {k: (v, ecfg.get(k)) for k, v in a.cfg.items() if k not in cfg_keys_not_kept and ecfg.get(k) != v}
        self.check(not differ, f"exported{tag} config.json has the original's keys (differ: {differ})")
        with open(os.path.join(out, "tokenizer.json"), encoding="utf-8") as f:
            self.check(json.load(f) == a.tok, f"exported{tag} tokenizer.json is the original")
        self.check(torch.equal(a.logits(y, ecfg, ids), a.logits(a.sd, a.cfg, ids)),
                   f"the exported{tag} folder runs in the reference")
        run2 = os.path.join(self.tmp, "run2" + tag)
        self.check(self.import_folder(out, run2), f"re-import{tag}")
        x = hf_folder.load_safetensors(os.path.join(run, "latest.safetensors"))
        y = hf_folder.load_safetensors(os.path.join(run2, "latest.safetensors"))
        self.check(set(x) == set(y) and all(torch.equal(x[k], y[k]) for k in x),
                   f"export -> import{tag} round trip bit-exact")

    def run_model(self, run):
        """The model section of the run's config.json."""
        with open(os.path.join(run, "config.json")) as f:
            return json.load(f)["model"]

    def damaged(self, a, name, edit_cfg=None, edit_sd=None, edit_dir=None, needle=""):
        """A folder of a's with one thing wrong: import fails (1) with `needle` in the error."""
        d = os.path.join(self.tmp, "bad_" + name)
        c, s = json.loads(json.dumps(a.cfg)), dict(a.sd)
        if edit_cfg:
            edit_cfg(c)
        if edit_sd:
            edit_sd(s)
        hf_folder.write_folder(d, c, s, a.tok)
        if edit_dir:
            edit_dir(d)
        r = self.ks("import", "--from", "hf", d, "--out", os.path.join(self.tmp, "badrun_" + name), "--data",
                    self.data, expect_rc=1)
        self.check(r.returncode == 1 and needle in r.stderr, f"damaged ({name}) refused: {r.stderr.strip()[:220]}")

    def check_common_damage(self, a):
        self.damaged(a, "unknown architecture", edit_cfg=lambda c: c.update(architectures=["BertForMaskedLM"]),
                     needle='unknown architecture "BertForMaskedLM" (known: GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Qwen2ForCausalLM)')

        def truncate(d):
            p = os.path.join(d, "model.safetensors")
            with open(p, "rb") as f:
                b = f.read()
            with open(p, "wb") as f:
                f.write(b[:-100])
        self.damaged(a, "truncated safetensors", edit_dir=truncate, needle="truncated")
        self.damaged(a, "no tokenizer", edit_dir=lambda d: os.remove(os.path.join(d, "tokenizer.json")),
                     needle="has no tokenizer.json")


def run_test(name, checks):
    """`test_x.py KEYSTONE KS_LOGITS`: checks(harness) in a temporary folder with
    a data file of the tokenizer test's text; the exit status."""
    tmp = tempfile.mkdtemp(prefix="ks_" + name.lower().replace("-", "") + "_")
    h = Harness(sys.argv[1], sys.argv[2], tmp)
    try:
        h.write_data((TEXT + "\n" + CORPUS[1]).split("\n"))
        checks(h)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return h.result(name)
