"""tests/interop/test_gguf.py KEYSTONE KS_LOGITS KS_TOKENIZE CACHE_DIR — `keystone
export --to gguf` against the real llama.cpp, and `keystone import --from gguf`.

llama.cpp is the npm package node-llama-cpp (3.22, its prebuilt CPU binaries),
installed once into CACHE_DIR (a folder every checkout and build folder on the
machine shares, never the source tree: npm_package.py) and driven by
gguf_llama_cpp.mjs. Four random small models (llama_reference.py),
each imported from a Hugging Face folder with a byte-level BPE tokenizer.json
this test trains: grouped-query (4 heads over 2) with GPT-2's pre-tokenizer and
an untied head; multi-query and tied with Llama-3's; an explicit head_dim (16,
not 32/4) whose feed-forward rows (80) are not whole Q8_0 blocks; and a tied
Qwen2 (biases on q, k and v: llama.cpp's "qwen2", its rope unpermuted) with
Qwen2's pre-tokenizer (one digit a piece); a windowed Qwen2's export is
refused. Each is
exported at f32, f16, bf16 and q8_0, and for every file:
  - llama.cpp loads it; its ids for a text (added tokens, emoji, CJK, digits,
    space runs) equal Keystone's;
  - its greedy continuation of a prompt (32 tokens) is Keystone's: the logits
    of Keystone's import of the same file pick every one of those tokens
    (argmax), and `keystone generate --greedy` prints the same text;
  - `import --from gguf` gives logits bit-equal to the run's (f32), or equal
    within float32 round-off to the plain-PyTorch reference's on the weights
    rounded as the type rounds them (f16, bf16, and Q8_0 by ggml's
    quantize_row_q8_0_ref written in torch; norms F32);
  - export of that import writes the same file again, byte for byte (f32).
Also `import --from gguf` of damaged files (an unknown architecture, a missing
key, head counts that do not divide, a tensor of the wrong shape, missing or
extra, a NaN, a type Keystone does not read, another tokenizer, rope scaling,
experts, a truncated file) refused naming the key or GGUF tensor.
Skips (77) where torch, node/npm or the package cannot be had (after the
checks that need neither, which still fail the test).
"""
import collections
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_harness import Architecture, Harness, torch  # noqa: E402 (exits 77 without torch)
import bpe_reference as bref  # noqa: E402
import hf_folder  # noqa: E402
import npm_package  # noqa: E402
import llama_reference as ref  # noqa: E402
from test_tokenizer import CORPUS, TEXT, tokenizer_json  # noqa: E402
import test_sp_tokenizer as sp  # noqa: E402

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf_llama_cpp.mjs")


def llama_cpp(nm, models, tmp):
    """llama.cpp's answers for [(model, jobs)], one node start for all: per model its answers, or None
    (the failure printed) where it failed to load or answer."""
    args = []
    for i, (model, jobs) in enumerate(models):
        path = os.path.join(tmp, f"jobs{i}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(jobs, f, ensure_ascii=False)
        args += [model, path]
    r = subprocess.run(["node", DRIVER, nm, *args], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"llama.cpp: rc {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
        return [None] * len(models)
    out = []
    for (model, _), answers in zip(models, json.loads(r.stdout.strip().split("\n")[-1])):
        if isinstance(answers, dict):
            print(f"llama.cpp on {model}: {answers['error'][-3000:]}")
            answers = None
        out.append(answers)
    return out


def q8_0(w):
    """ggml's quantize_row_q8_0_ref then dequantize_row_q8_0, in torch: blocks of 32 along a row."""
    b = w.reshape(-1, 32)
    d = b.abs().max(dim=1, keepdim=True).values / 127
    inv = torch.where(d == 0, torch.zeros_like(d), 1.0 / d)
    x = b * inv
    q = torch.sign(x) * torch.floor(x.abs() + 0.5)  # roundf: half away from zero
    return (q * d.half().float()).reshape(w.shape)


def rounded(sd, kind):
    """The HF tensors as the GGUF type stores them: 1-D (norms) F32; Q8_0 rows not of 32 blocks F16."""
    out = {}
    for k, v in sd.items():
        if v.dim() == 1 or kind == "f32":
            out[k] = v
        elif kind == "bf16":
            out[k] = v.bfloat16().float()
        elif kind == "f16" or v.shape[-1] % 32 != 0:
            out[k] = v.half().float()
        else:
            out[k] = q8_0(v)
    return out


def ks_ids(h, tool, run, text):
    path = os.path.join(h.tmp, "text.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    r = subprocess.run([tool, os.path.join(run, "tokenizer.json"), path], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split("\n")[0].split()] if r.returncode == 0 else None


def read_gguf(path):
    """(metadata [(key, type, raw value bytes)], tensors [[name, dims, type, data]]) of a file this test wrote."""
    with open(path, "rb") as f:
        b = f.read()
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)

    def string():
        nonlocal pos
        n = struct.unpack_from("<Q", b, pos)[0]
        pos += 8 + n
        return b[pos - n:pos].decode()

    def skip(t):
        nonlocal pos
        if t == 8:
            string()
        elif t == 9:
            et, n = struct.unpack_from("<IQ", b, pos)
            pos += 12
            for _ in range(n):
                skip(et)
        else:
            pos += {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}[t]
    kv = []
    for _ in range(n_kv):
        k = string()
        t = struct.unpack_from("<I", b, pos)[0]
        pos += 4
        start = pos
        skip(t)
        kv.append((k, t, b[start:pos]))
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = struct.unpack_from("<I", b, pos)[0]
        dims = list(struct.unpack_from("<%dQ" % nd, b, pos + 4))
        t, off = struct.unpack_from("<IQ", b, pos + 4 + 8 * nd)
        pos += 4 + 8 * nd + 12
        infos.append([name, dims, t, off])
    data = pos + (-pos % 32)
    ends = sorted(i[3] for i in infos)[1:] + [len(b) - data]
    size = {i[3]: e - i[3] for i, e in zip(sorted(infos, key=lambda i: i[3]), ends)}
    return kv, [[n, d, t, b[data + o:data + o + size[o]]] for n, d, t, o in infos]


def write_gguf(path, kv, tensors):
    def s(x):
        return struct.pack("<Q", len(x.encode())) + x.encode()
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, t, raw in kv:
        out += s(k) + struct.pack("<I", t) + raw
    blob = b""
    for name, dims, t, data in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims)
        out += struct.pack("<IQ", t, len(blob))
        blob += data + b"\0" * (-len(data) % 32)
    with open(path, "wb") as f:
        f.write(out + b"\0" * (-len(out) % 32) + blob)


def check_damaged(h, gguf):
    """A llama file with one thing wrong: `import --from gguf` fails (1) naming it."""
    kv, tensors = read_gguf(gguf)
    nan = struct.pack("<f", float("nan"))

    def case(name, needle, kv_edit=None, t_edit=None):
        k, t = [list(x) for x in kv], [list(x) for x in tensors]
        if kv_edit:
            k = kv_edit(k)
        if t_edit:
            t_edit(t)
        path = os.path.join(h.tmp, "bad.gguf")
        write_gguf(path, k, t)
        r = h.ks("import", "--from", "gguf", path, "--out", os.path.join(h.tmp, "bad_" + name.replace(" ", "_")),
                 "--data", h.data, expect_rc=1)
        h.check(r.returncode == 1 and needle in r.stderr, f"damaged GGUF ({name}) refused: {r.stderr.strip()[:200]}")

    def by(t, name):
        return next(x for x in t if x[0] == name)
    str_value = (lambda v: struct.pack("<Q", len(v)) + v.encode())
    case("unknown architecture", 'general.architecture "gptneox" is not supported (Keystone reads "llama" and "qwen2")',
         kv_edit=lambda k: [(n, t, str_value("gptneox") if n == "general.architecture" else v) for n, t, v in k])
    case("missing key", "metadata 'llama.block_count' is missing",
         kv_edit=lambda k: [x for x in k if x[0] != "llama.block_count"])
    case("kv heads", "llama.attention.head_count_kv 3 does not divide llama.attention.head_count 4",
         kv_edit=lambda k: [(n, t, struct.pack("<I", 3) if n == "llama.attention.head_count_kv" else v)
                            for n, t, v in k])
    case("shape mismatch", "tensor 'blk.1.attn_k.weight' has shape [32, 32] (GGUF dims reversed) but the metadata "
         "(llama.embedding_length 32, llama.attention.head_count_kv 2, head size 8) needs [16, 32]",
         t_edit=lambda t: by(t, "blk.1.attn_k.weight").__setitem__(slice(1, 4), [[32, 32], 0, b"\0" * 4096]))
    case("missing tensor", "tensor 'blk.0.ffn_up.weight' is missing",
         t_edit=lambda t: t.remove(by(t, "blk.0.ffn_up.weight")))
    case("extra tensor", "tensor 'rope_freqs.weight' is not part of llama",
         t_edit=lambda t: t.append(["rope_freqs.weight", [4], 0, b"\0" * 16]))
    case("NaN weight", "tensor 'blk.0.ffn_down.weight' holds 1 NaN or infinite values of 3072",
         t_edit=lambda t: by(t, "blk.0.ffn_down.weight").__setitem__(3, nan + by(t, "blk.0.ffn_down.weight")[3][4:]))
    case("Q4_0 tensor", "tensor 'blk.0.ffn_gate.weight' is Q4_0, which Keystone does not read",
         t_edit=lambda t: by(t, "blk.0.ffn_gate.weight").__setitem__(slice(2, 4), [2, b"\0" * 1728]))
    case("SentencePiece tokenizer without scores", "metadata 'tokenizer.ggml.scores' is missing",
         kv_edit=lambda k: [(n, t, str_value("llama") if n == "tokenizer.ggml.model" else v) for n, t, v in k])
    case("unsupported pre-tokenizer", 'tokenizer.ggml.pre "deepseek-llm" is not supported',
         kv_edit=lambda k: [(n, t, str_value("deepseek-llm") if n == "tokenizer.ggml.pre" else v) for n, t, v in k])
    case("rope scaling", 'llama.rope.scaling.type "yarn" is not supported',
         kv_edit=lambda k: k + [("llama.rope.scaling.type", 8, str_value("yarn"))])
    case("mixture of experts", "llama.expert_count 8: mixture-of-experts llama files are not supported",
         kv_edit=lambda k: k + [("llama.expert_count", 4, struct.pack("<I", 8))])
    with open(gguf, "rb") as f:
        b = f.read()
    path = os.path.join(h.tmp, "cut.gguf")
    with open(path, "wb") as f:
        f.write(b[:len(b) - 5000])
    r = h.ks("import", "--from", "gguf", path, "--out", os.path.join(h.tmp, "bad_cut"), "--data", h.data, expect_rc=1)
    h.check(r.returncode == 1 and "runs past the end of the file" in r.stderr,
            f"truncated GGUF refused: {r.stderr.strip()[:200]}")


def complete_merges(vocab, merges):
    """The merges of a SentencePiece-style vocabulary as HF's convert_slow_tokenizer derives them from a
    SentencePiece model (SentencePieceExtractor, scores by id): every cut of a token into two tokens, tokens in
    id order, a token's cuts by the ids of their halves."""
    out = []
    for piece, _ in sorted(vocab.items(), key=lambda x: x[1]):
        out += sorted(((piece[:i], piece[i:]) for i in range(1, len(piece)) if piece[:i] in vocab and piece[i:] in vocab),
                      key=lambda m: (vocab[m[0]], vocab[m[1]]))
    return out


class SpArchitecture(Architecture):
    """A Llama 2-style tokenizer: what `keystone generate` prints is HF's decoding (Replace "▁", ByteFallback, Fuse,
    Strip one leading space); ids for the logits come from Keystone's tokenizer (reference_tok None), which
    test_sp_tokenizer.py holds to tokenizers.js's."""

    def text(self, ids):
        by_id = {i: t for t, i in self.vocab.items()}
        out = b""
        for i in ids:
            t = by_id[i]
            out += bytes([int(t[3:5], 16)]) if len(t) == 6 and t.startswith("<0x") else t.replace(sp.SP, " ").encode()
        out = out.decode("utf-8", "replace")
        return out[1:] if out.startswith(" ") else out


def sp_model(name, edit, seed, complete=True):
    """A Llama with a Llama 2-style SentencePiece BPE (byte fallback, "▁", <unk> <s> </s>): its merges made
    complete (as a tokenizer.json converted from a SentencePiece model has them), or as trained."""
    chars, merges = sp.train(sp.CORPUS + CORPUS, 150)
    vocab = sp.tokenizer_json(chars, merges, "llama2")["model"]["vocab"]
    full = complete_merges(vocab, merges)
    assert len(full) > len(merges), "the trained merges are complete already: the refusal below would test nothing"
    tok = sp.tokenizer_json(chars, full if complete else merges, "llama2")
    assert tok["model"]["vocab"] == vocab
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": len(vocab),
           "hidden_size": 32, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "hidden_act": "silu", "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "rope_scaling": None, "attention_bias": False, "attention_dropout": 0.0,
           "mlp_bias": False, "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2}
    cfg.update(edit)
    a = SpArchitecture(cfg, None, tok, None, vocab, {}, 2, ref.llama_logits)
    a.sd = ref.random_llama(cfg, seed=seed)
    a.name = name
    return a


def check_damaged_sp(h, gguf):
    """A SentencePiece-style file with one thing wrong in its scores: `import --from gguf` fails (1) naming it."""
    kv, tensors = read_gguf(gguf)
    raw = next(v for k, _, v in kv if k == "tokenizer.ggml.scores")
    n = struct.unpack_from("<IQ", raw)[1]
    scores = list(struct.unpack_from("<%df" % n, raw, 12))

    def case(name, needle, edit):
        edited = list(scores)
        edit(edited)
        k = [(key, t, raw[:12] + struct.pack("<%df" % n, *edited) if key == "tokenizer.ggml.scores" else v)
             for key, t, v in kv]
        path = os.path.join(h.tmp, "bad_sp.gguf")
        write_gguf(path, k, tensors)
        r = h.ks("import", "--from", "gguf", path, "--out", os.path.join(h.tmp, "bad_sp_" + name.replace(" ", "_")),
                 "--data", h.data, expect_rc=1)
        h.check(r.returncode == 1 and needle in r.stderr, f"damaged GGUF ({name}) refused: {r.stderr.strip()[:240]}")
    # The two best merges' tokens: a tie llama.cpp breaks by position, which no merge list says.
    best = sorted(range(n), key=lambda i: -scores[i])[:2]
    case("tied scores", "share the score", lambda sc: sc.__setitem__(best[1], sc[best[0]]))
    case("NaN score", "has the score nan", lambda sc: sc.__setitem__(5, float("nan")))


def model(name, style, edit, seed):
    """A Llama with a byte-level tokenizer of `style` (gpt2, llama3); style qwen2: a Qwen2 (biases on q, k and
    v, llama.cpp's qwen2 architecture) with Qwen2's regex."""
    pattern = {"gpt2": bref.GPT2, "llama3": bref.LLAMA3, "qwen2": bref.QWEN2}[style]
    vocab, merges = bref.train(CORPUS, pattern, 200)
    eos = len(vocab)
    added = [("<|endoftext|>", eos), ("<|fim|>", eos + 1)]
    tok = tokenizer_json(vocab, merges, style, added)
    reference_tok = bref.Tokenizer(vocab, merges, pattern, added, ignore_merges=style == "llama3")
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": eos + 2,
           "hidden_size": 32, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "hidden_act": "silu", "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
           "rope_theta": 5000.0, "rope_scaling": None, "attention_bias": False, "attention_dropout": 0.0,
           "mlp_bias": False, "tie_word_embeddings": False, "bos_token_id": eos, "eos_token_id": eos}
    if style == "qwen2":
        for key in ("attention_bias", "mlp_bias"):
            del cfg[key]
        cfg |= {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "use_sliding_window": False,
                "max_window_layers": 2}
    cfg.update(edit)
    a = Architecture(cfg, None, tok, reference_tok, vocab, {eos: "<|endoftext|>", eos + 1: "<|fim|>"}, eos,
                     ref.llama_logits)
    a.sd = ref.random_llama(cfg, seed=seed)
    a.name = name
    return a


Exported = collections.namedtuple("Exported", "a what kind gguf back text want_ids prompt prompt_ids")


def check_model(h, nm, tokenize_tool, a, damaged=None):
    """Export of one model at each type, and Keystone's own checks of each file; returns [Exported] for
    check_llama_cpp (empty without llama.cpp)."""
    hf = os.path.join(h.tmp, "hf_" + a.name)
    hf_folder.write_folder(hf, a.cfg, a.sd, a.tok)
    run = os.path.join(h.tmp, "run_" + a.name)
    h.check(h.import_folder(hf, run, "--seq-len", "32"), f"{a.name}: import of the HF folder")
    if isinstance(a, SpArchitecture):
        text = "Hello world!</s> It's 中文 😀 3.14   ok<s>\n\nthe end  \u2581x ǅ"
        ids = ks_ids(h, tokenize_tool, run, TEXT)[:48]
    else:
        text = "Hello world!<|endoftext|> It's 中文 😀 3.14   ok<|fim|>\n\nthe end"
        ids = a.reference_tok.encode(TEXT)[:48]
    prompt = "Hello world"
    base = h.logits(run, ids)
    want_ids = ks_ids(h, tokenize_tool, run, text)
    prompt_ids = ks_ids(h, tokenize_tool, run, prompt)
    done = []  # (what, kind, gguf, back) of each file llama.cpp is then given
    for kind in ("f32", "f16", "bf16", "q8_0"):
        what = f"{a.name} {kind}"
        gguf = os.path.join(h.tmp, f"{a.name}-{kind}.gguf")
        r = h.ks("export", "--to", "gguf", run, "--out", gguf, "--type", kind)
        h.check(r.returncode == 0, f"{what}: export --to gguf ({r.stdout.strip().splitlines()[-1:]})")
        if damaged and kind == "f32":
            damaged(h, gguf)
        if nm is None:
            continue
        # The f32 import keeps the run folder's name (general.name), so its export can be compared whole.
        back = os.path.join(h.tmp, f"back_{a.name}_{kind}", os.path.basename(run))
        r = h.ks("import", "--from", "gguf", gguf, "--out", back, "--data", h.data, "--seq-len", "32")
        h.check(r.returncode == 0, f"{what}: import --from gguf ({r.stdout.strip()[-120:]})")
        # --dtype auto stores the run in the type of most of the file's values (norms stay F32 in every file).
        own = {"f16": "fp16", "bf16": "bf16"}.get(kind, "float32")
        r = h.ks("import", "--from", "gguf", gguf, "--out", back + "-auto", "--data", h.data, "--seq-len", "32",
                 "--dtype", "auto")
        h.check(r.returncode == 0 and f"stored in {own} (--dtype auto: most of the file's values are" in r.stdout,
                f"{what}: import --dtype auto stores {own} ({r.stdout.strip()[-160:]})")
        got = h.logits(back, ids)
        if kind == "f32":
            h.check(got is not None and torch.equal(got, base), f"{what}: import's logits bit-equal to the run's")
            again = os.path.join(h.tmp, f"again-{a.name}.gguf")
            h.ks("export", "--to", "gguf", back, "--out", again, "--type", "f32")
            with open(gguf, "rb") as f1, open(again, "rb") as f2:
                b1, b2 = f1.read(), f2.read()
            # general.name is the run folder's name: compare all but it.
            h.check(b1 == b2, f"{what}: export of the import writes the same file, byte for byte")
        else:
            want = a.logits(rounded(a.sd, kind), a.cfg, ids)
            err = (got - want).abs().max().item() if got is not None else float("inf")
            moved = (want - a.logits(a.sd, a.cfg, ids)).abs().max().item()
            h.check(err <= 1e-4 * max(1.0, want.abs().max().item()),
                    f"{what}: import's logits equal the reference's on {kind}-rounded weights (max |diff| {err:.1e}; "
                    f"the rounding moved them {moved:.1e})")
        done.append(Exported(a, what, kind, gguf, back, text, want_ids, prompt, prompt_ids))
    return done


def check_llama_cpp(h, nm, done):
    """Each exported file in llama.cpp (one node start for all): its ids and greedy continuation."""
    jobs = [[{"tokenize": e.text}, {"greedy": e.prompt_ids, "tokens": 32}] for e in done]
    for e, answers in zip(done, llama_cpp(nm, [(e.gguf, j) for e, j in zip(done, jobs)], h.tmp)):
        a, what, kind, back, want_ids, prompt, prompt_ids = e.a, e.what, e.kind, e.back, e.want_ids, e.prompt, \
            e.prompt_ids
        h.check(answers is not None, f"{what}: llama.cpp loads the file")
        if answers is None:
            continue
        h.check(answers[0] == want_ids, f"{what}: llama.cpp's ids for the text equal Keystone's "
                                        f"({answers[0][:12]}... vs {(want_ids or [])[:12]}...)")
        # Keystone's logits along llama.cpp's continuation (teacher-forced): each of its tokens must be
        # Keystone's argmax there. Where llama.cpp rounds the activations too (BF16 weights: activations
        # to BF16; Q8_0: to Q8_0 blocks), a step may pick Keystone's runner-up instead, but only one
        # within TIE of the top logit (a near-tie those roundings can flip); F32 and F16: float32 round-off
        # only (the two engines sum in other orders: 2e-5 of the largest logit).
        cont = answers[1]
        lg = h.logits(back, prompt_ids + cont)
        steps = lg[len(prompt_ids) - 1:-1] if lg is not None else torch.zeros(0, 1)
        picks = steps.argmax(dim=1).tolist()
        flips = [(i, steps[i].max().item() - steps[i, t].item()) for i, t in enumerate(cont) if picks[i] != t]
        tie = {"f32": 2e-5, "f16": 2e-5, "bf16": 0.02, "q8_0": 0.02}[kind] * steps.abs().max().item()
        h.check(len(cont) == 32 and len(picks) == 32 and all(gap <= tie for _, gap in flips),
                f"{what}: llama.cpp's greedy continuation (32 tokens) is Keystone's argmax at "
                f"{32 - len(flips)} steps; near-ties (step, logit gap) {[(i, round(g, 4)) for i, g in flips]} "
                f"within {tie:.2g}")
        if not flips:
            # Bytes, not text=True: Python's universal newlines would turn a generated "\r" into "\n".
            r = subprocess.run([h.keystone, "generate", "--run", back, "--prompt", prompt, "--tokens", "32", "--greedy"],
                               capture_output=True)
            printed = r.stdout.decode("utf-8", "replace")
            printed = printed[:-1] if printed.endswith("\n") else printed
            h.check(r.returncode == 0 and printed == a.text(prompt_ids + cont),
                    f"{what}: keystone generate --greedy prints llama.cpp's continuation ({printed[-40:]!r}; "
                    f"want {a.text(prompt_ids + cont)[-40:]!r})")


def main():
    keystone, logits_tool, tokenize_tool, cache = sys.argv[1:5]
    nm = npm_package.llama_cpp_modules(cache)
    tmp = tempfile.mkdtemp(prefix="ks_gguf_")
    h = Harness(keystone, logits_tool, tmp)
    try:
        h.write_data((TEXT + "\n" + CORPUS[1]).split("\n"))
        done = []
        for a in (model("gqa-gpt2", "gpt2", {}, 2),
                  model("tied-mqa-llama3", "llama3", {"tie_word_embeddings": True, "num_key_value_heads": 1}, 3),
                  model("head_dim-f16-fallback", "gpt2", {"head_dim": 16, "intermediate_size": 80}, 4),
                  model("qwen2", "qwen2", {"tie_word_embeddings": True}, 5)):
            done += check_model(h, nm, tokenize_tool, a, damaged=check_damaged if a.name == "gqa-gpt2" else None)
        done += check_model(h, nm, tokenize_tool, sp_model("sp-llama2", {}, 7), damaged=check_damaged_sp)
        # A sliding window: neither llama.cpp architecture has one, so export refuses rather than drop it.
        w = model("qwen2-windowed", "qwen2", {"use_sliding_window": True, "sliding_window": 5,
                                              "max_window_layers": 0}, 6)
        hf, run = os.path.join(h.tmp, "hf_windowed"), os.path.join(h.tmp, "run_windowed")
        hf_folder.write_folder(hf, w.cfg, w.sd, w.tok)
        h.check(h.import_folder(hf, run, "--seq-len", "32"), "qwen2-windowed: import of the HF folder")
        r = h.ks("export", "--to", "gguf", run, "--out", os.path.join(h.tmp, "windowed.gguf"), expect_rc=1)
        h.check(r.returncode == 1 and "attention.window 5: llama.cpp's qwen2 attends to every earlier position"
                in r.stderr, f"qwen2-windowed: export --to gguf refused, naming the window ({r.stderr.strip()[:200]})")
        # Merges as trained, not complete: llama.cpp would merge pairs HF's BPE does not, so export refuses.
        inc = sp_model("sp-incomplete", {}, 8, complete=False)
        hf, run = os.path.join(h.tmp, "hf_incomplete"), os.path.join(h.tmp, "run_incomplete")
        hf_folder.write_folder(hf, inc.cfg, inc.sd, inc.tok)
        h.check(h.import_folder(hf, run, "--seq-len", "32"), "sp-incomplete: import of the HF folder")
        r = h.ks("export", "--to", "gguf", run, "--out", os.path.join(h.tmp, "incomplete.gguf"), expect_rc=1)
        h.check(r.returncode == 1 and "but the merges do not list that pair: llama.cpp's SentencePiece tokenizer "
                "merges any two pieces that make a token" in r.stderr,
                f"sp-incomplete: export --to gguf refused, naming the missing merge ({r.stderr.strip()[:240]})")
        if done:
            check_llama_cpp(h, nm, done)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if nm is None and not h.failures:  # Keystone's own checks passed; llama.cpp's were not run
        print(f"SKIPPED: npm/node cannot install {npm_package.LLAMA_CPP} into {cache} (the checks without llama.cpp passed)")
        return 77
    return h.result("GGUF")


if __name__ == "__main__":
    sys.exit(main())
