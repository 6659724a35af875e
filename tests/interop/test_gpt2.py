"""tests/interop/test_gpt2.py KEYSTONE KS_LOGITS — `keystone import --from hf`
and `keystone export --to hf` against the plain-PyTorch GPT-2 of
gpt2_reference.py: a random small GPT2LMHeadModel and a tokenizer.json (merges
trained by bpe_reference.py) saved in the HF layout; imported (one file, and
sharded BF16); logits equal within float32 round-off, greedy continuation
identical; eval, generate, analyze and train --init-from take the run; export ->
import round trips bit-exact; damaged folders refused naming the tensor or key.
Skips (77) where `import torch` fails.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_reference as bref  # noqa: E402
import gpt2_reference as ref  # noqa: E402
from test_tokenizer import CORPUS, TEXT, tokenizer_json  # noqa: E402

KEYSTONE, LOGITS = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    print(("ok " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def ks(*args, expect_rc=0):
    r = subprocess.run([KEYSTONE, *args], capture_output=True, text=True, errors="replace")
    if r.returncode != expect_rc:
        print(f"keystone {' '.join(args)}: rc {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r


def write_folder(d, cfg, sd, tok, sharded=False, dtype=torch.float32):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    if not sharded:
        ref.save_safetensors(os.path.join(d, "model.safetensors"), sd, dtype)
        return
    names = list(sd)
    half = len(names) // 2
    files = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    for fname, part in files.items():
        ref.save_safetensors(os.path.join(d, fname), {n: sd[n] for n in part}, dtype)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": {n: fn for fn, part in files.items() for n in part}}, f)


def keystone_logits(run, ids):
    r = subprocess.run([LOGITS, run, *map(str, ids)], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr)
        return None
    return torch.tensor([[float(x) for x in line.split()] for line in r.stdout.strip().split("\n")])


def main():
    vocab, merges = bref.train(CORPUS, bref.GPT2, 200)
    eot = len(vocab)
    tok = tokenizer_json(vocab, merges, "gpt2", [("<|endoftext|>", eot)])
    reference_tok = bref.Tokenizer(vocab, merges, bref.GPT2, [("<|endoftext|>", eot)])
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": eot + 1, "n_positions": 64,
           "n_embd": 32, "n_layer": 2, "n_head": 4, "n_inner": 64, "activation_function": "gelu_new",
           "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
           "bos_token_id": eot, "eos_token_id": eot, "tie_word_embeddings": True}
    sd = ref.random_gpt2(cfg, seed=1)
    tmp = tempfile.mkdtemp(prefix="ks_gpt2_")
    try:
        data = os.path.join(tmp, "data.txt")
        with open(data, "w", encoding="utf-8") as f:
            f.write("\n".join(line for line in (TEXT + "\n" + CORPUS[1]).split("\n") if line.strip()) * 4 + "\n")
        hf = os.path.join(tmp, "hf")
        write_folder(hf, cfg, sd, tok)
        run = os.path.join(tmp, "run")
        r = ks("import", "--from", "hf", hf, "--out", run, "--data", data, "--seq-len", "32")
        check(r.returncode == 0, "import of a GPT-2 folder")

        # Logits within float32 round-off of the reference, on a tokenized text.
        ids = reference_tok.encode("Hello world! It's 中文 😀 <|endoftext|> 3.14   ok")[:40]
        want = ref.gpt2_logits(sd, cfg, ids)
        got = keystone_logits(run, ids)
        err = (got - want).abs().max().item() if got is not None else float("inf")
        scale = want.abs().max().item()
        check(err <= 1e-4 * max(1.0, scale), f"logits equal the PyTorch GPT-2's (max |diff| {err:.2e}, max |logit| "
              f"{scale:.1f})")

        # Greedy continuation: same ids (as text through generate).
        prompt = "Hello world"
        p_ids = reference_tok.encode(prompt)
        cont = ref.greedy(sd, cfg, p_ids, 12)
        want_text = bytes(bytearray(b for i in cont for b in token_bytes(vocab, eot, i))).decode("utf-8", "replace")
        r = ks("generate", "--run", run, "--prompt", prompt, "--tokens", "12", "--greedy")
        got_text = r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout
        check(r.returncode == 0 and got_text == want_text.replace("<|endoftext|>", "\n"),
              f"greedy continuation identical ({want_text!r} vs {got_text!r})")

        # Sharded BF16 folder: logits of the BF16-rounded weights.
        hf16 = os.path.join(tmp, "hf16")
        write_folder(hf16, cfg, sd, tok, sharded=True, dtype=torch.bfloat16)
        run16 = os.path.join(tmp, "run16")
        check(ks("import", "--from", "hf", hf16, "--out", run16, "--data", data).returncode == 0,
              "import of a sharded BF16 folder")
        sd16 = {k: v.to(torch.bfloat16).float() for k, v in sd.items()}
        got16 = keystone_logits(run16, ids)
        err16 = (got16 - ref.gpt2_logits(sd16, cfg, ids)).abs().max().item() if got16 is not None else float("inf")
        check(err16 <= 1e-4 * max(1.0, scale), f"sharded BF16 logits equal the reference's ({err16:.2e})")

        # The run folder is a run: eval, analyze, and fine-tuning from it.
        r = ks("eval", "--run", run, "--split", "valid")
        check(r.returncode == 0 and '"ppl"' in r.stdout, "eval takes the imported run")
        r = ks("analyze", "--run", run, "--batches", "1", "--examples", "1", "--out", os.path.join(tmp, "an"))
        check(r.returncode == 0, "analyze takes the imported run")
        ft = os.path.join(tmp, "ft")
        r = ks("train", "--init-from", run, "--out", ft, "--quiet", "--set", "train.steps=2",
               "--set", "train.eval_every=2", "--set", "train.batch_size=2")
        check(r.returncode == 0 and os.path.exists(os.path.join(ft, "latest.safetensors")),
              "train --init-from fine-tunes the imported run")
        r = ks("train", "--init-from", run, "--out", os.path.join(tmp, "ft0"), "--quiet", "--set", "train.steps=1",
               "--set", "train.eval_every=1", "--set", "optimizer.lr=1e-12", "--set", "train.batch_size=2")
        if r.returncode == 0:
            a = ref.load_safetensors(os.path.join(run, "latest.safetensors"))
            b = ref.load_safetensors(os.path.join(tmp, "ft0", "latest.safetensors"))
            same = all(torch.allclose(a[k], b[k], rtol=0, atol=1e-6) for k in a if not k.startswith("optimizer/"))
            check(same, "train --init-from starts from the run's weights (one step at lr 1e-12: unchanged)")
        else:
            check(False, "train --init-from at lr 1e-12")

        # Export -> the same HF tensors, bit for bit; -> import -> the same run weights.
        out = os.path.join(tmp, "export")
        check(ks("export", "--to", "hf", run, "--out", out).returncode == 0, "export of the imported run")
        a, b = ref.load_safetensors(os.path.join(hf, "model.safetensors")), ref.load_safetensors(
            os.path.join(out, "model.safetensors"))
        check(set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a),
              f"export gives back the HF tensors bit-exactly ({sorted(set(a) ^ set(b))[:4]})")
        with open(os.path.join(out, "config.json")) as f:
            ecfg = json.load(f)
        check(all(ecfg.get(k) == v for k, v in cfg.items() if k not in ("resid_pdrop", "embd_pdrop", "attn_pdrop")),
              f"exported config.json has the original's keys ({ecfg})")
        with open(os.path.join(out, "tokenizer.json"), encoding="utf-8") as f:
            check(json.load(f) == tok, "exported tokenizer.json is the original")
        check(torch.allclose(ref.gpt2_logits(b, ecfg, ids), want, atol=0, rtol=0),
              "the exported folder runs in the reference GPT-2")
        run2 = os.path.join(tmp, "run2")
        check(ks("import", "--from", "hf", out, "--out", run2, "--data", data).returncode == 0, "re-import")
        x = ref.load_safetensors(os.path.join(run, "latest.safetensors"))
        y = ref.load_safetensors(os.path.join(run2, "latest.safetensors"))
        check(set(x) == set(y) and all(torch.equal(x[k], y[k]) for k in x), "export -> import round trip bit-exact")

        # Damaged folders: a clear error naming the tensor or key.
        def damaged(name, edit_cfg=None, edit_sd=None, edit_dir=None, needle=""):
            d = os.path.join(tmp, "bad_" + name)
            c, s = json.loads(json.dumps(cfg)), dict(sd)
            if edit_cfg:
                edit_cfg(c)
            if edit_sd:
                edit_sd(s)
            write_folder(d, c, s, tok)
            if edit_dir:
                edit_dir(d)
            r = ks("import", "--from", "hf", d, "--out", os.path.join(tmp, "badrun_" + name), "--data", data,
                   expect_rc=1)
            check(r.returncode == 1 and needle in r.stderr, f"damaged ({name}) refused: {r.stderr.strip()[:220]}")
        damaged("missing tensor", edit_sd=lambda s: s.pop("transformer.h.1.mlp.c_fc.weight"),
                needle="missing tensor 'transformer.h.1.mlp.c_fc.weight'")
        damaged("wrong shape", edit_sd=lambda s: s.update({"transformer.h.0.attn.c_attn.weight": torch.zeros(32, 64)}),
                needle="tensor 'transformer.h.0.attn.c_attn.weight' has shape [32, 64]")
        damaged("unknown architecture", edit_cfg=lambda c: c.update(architectures=["BertForMaskedLM"]),
                needle='unknown architecture "BertForMaskedLM" (known: GPT2LMHeadModel, LlamaForCausalLM)')
        damaged("config disagrees", edit_cfg=lambda c: c.update(n_inner=128),
                needle="tensor 'transformer.h.0.mlp.c_fc.weight' has shape [32, 64] but config.json (n_embd 32, "
                       "n_inner 128) needs [32, 128]")
        damaged("missing key", edit_cfg=lambda c: c.pop("n_head"), needle='"n_head": missing')
        damaged("unsupported eps", edit_cfg=lambda c: c.update(layer_norm_epsilon=1e-6), needle='"layer_norm_epsilon"')
        damaged("extra tensor", edit_sd=lambda s: s.update({"transformer.h.9.attn.c_attn.weight": torch.zeros(2)}),
                needle="tensor 'transformer.h.9.attn.c_attn.weight' is not part of GPT2LMHeadModel")

        def truncate(d):
            p = os.path.join(d, "model.safetensors")
            with open(p, "rb") as f:
                b = f.read()
            with open(p, "wb") as f:
                f.write(b[:-100])
        damaged("truncated safetensors", edit_dir=truncate, needle="truncated")
        damaged("no tokenizer", edit_dir=lambda d: os.remove(os.path.join(d, "tokenizer.json")),
                needle="has no tokenizer.json")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("FAILED: " + "; ".join(failures) if failures else "all GPT-2 import/export checks passed")
    return 1 if failures else 0


def token_bytes(vocab, eot, i):
    if i == eot:
        return b"<|endoftext|>"
    u2b = {c: b for b, c in bref.B2U.items()}
    text = next(t for t, j in vocab.items() if j == i)
    return bytes(u2b[c] for c in text)


if __name__ == "__main__":
    sys.exit(main())
