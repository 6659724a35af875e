"""tests/interop/gpt2_reference.py — GPT-2 (GPT2LMHeadModel) in plain PyTorch,
from its Hugging Face state dict (Conv1D weights (in, out), fused c_attn); no
transformers package. What `keystone import --from hf` must agree with.
Not here: the folder's files (hf_folder.py).
"""
import math

import torch


def random_gpt2(cfg, seed):
    """A state dict with the names save_pretrained gives GPT2LMHeadModel (tied: no lm_head)."""
    g = torch.Generator().manual_seed(seed)
    d, f, V, P = cfg["n_embd"], cfg["n_inner"], cfg["vocab_size"], cfg["n_positions"]

    def r(*shape, scale=0.2, mean=0.0):
        return torch.randn(*shape, generator=g) * scale + mean
    sd = {"transformer.wte.weight": r(V, d, scale=0.5), "transformer.wpe.weight": r(P, d, scale=0.1)}
    for i in range(cfg["n_layer"]):
        h = f"transformer.h.{i}."
        sd |= {h + "ln_1.weight": r(d, mean=1.0), h + "ln_1.bias": r(d, scale=0.1),
               h + "attn.c_attn.weight": r(d, 3 * d), h + "attn.c_attn.bias": r(3 * d, scale=0.1),
               h + "attn.c_proj.weight": r(d, d), h + "attn.c_proj.bias": r(d, scale=0.1),
               h + "ln_2.weight": r(d, mean=1.0), h + "ln_2.bias": r(d, scale=0.1),
               h + "mlp.c_fc.weight": r(d, f), h + "mlp.c_fc.bias": r(f, scale=0.1),
               h + "mlp.c_proj.weight": r(f, d), h + "mlp.c_proj.bias": r(d, scale=0.1)}
    sd |= {"transformer.ln_f.weight": r(d, mean=1.0), "transformer.ln_f.bias": r(d, scale=0.1)}
    return sd


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def activation(cfg):
    """GPT2MLP's ACT2FN[config.activation_function]: gelu_new by default; "gelu" is the erf form."""
    name = cfg.get("activation_function", "gelu_new")
    acts = {"gelu_new": gelu_new, "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
            "gelu": torch.nn.functional.gelu, "relu": torch.relu}
    if name not in acts:
        raise ValueError(f"activation_function {name!r}: not one of {sorted(acts)}")
    return acts[name]


def gpt2_logits(sd, cfg, ids):
    """ids: a list of ints -> logits (T, V), float32, as GPT2LMHeadModel computes them in eval mode."""
    p = "transformer." if "transformer.wte.weight" in sd else ""
    d, H = cfg["n_embd"], cfg["n_head"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    ln = torch.nn.functional.layer_norm
    act = activation(cfg)
    T = len(ids)
    x = sd[p + "wte.weight"][torch.tensor(ids)] + sd[p + "wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["n_layer"]):
        h = f"{p}h.{i}."
        y = ln(x, (d,), sd[h + "ln_1.weight"], sd[h + "ln_1.bias"], eps)
        qkv = y @ sd[h + "attn.c_attn.weight"] + sd[h + "attn.c_attn.bias"]
        q, k, v = (t.reshape(T, H, d // H).transpose(0, 1) for t in qkv.split(d, dim=1))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // H)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(0, 1).reshape(T, d)
        x = x + y @ sd[h + "attn.c_proj.weight"] + sd[h + "attn.c_proj.bias"]
        y = ln(x, (d,), sd[h + "ln_2.weight"], sd[h + "ln_2.bias"], eps)
        x = x + act(y @ sd[h + "mlp.c_fc.weight"] + sd[h + "mlp.c_fc.bias"]) @ sd[h + "mlp.c_proj.weight"] \
            + sd[h + "mlp.c_proj.bias"]
    x = ln(x, (d,), sd[p + "ln_f.weight"], sd[p + "ln_f.bias"], eps)
    head = sd.get("lm_head.weight", sd[p + "wte.weight"])
    return x @ head.T

