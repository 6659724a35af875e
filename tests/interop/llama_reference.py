"""tests/interop/llama_reference.py — Llama (LlamaForCausalLM) in plain
PyTorch, from its Hugging Face state dict, computed as transformers'
modeling_llama.py does in float32 eval mode: RMSNorm (the mean square in
float32, x · rsqrt(ms + eps) · weight), rotary embeddings in the rotate_half
pairing (dimension i of a head with i + p/2; inv_freq = θ^(-2i/p) and the
angles in float32), grouped-query attention (query head n reads key/value head
n // (h/g), repeat_kv), a SwiGLU MLP down(silu(gate(x)) · up(x)), no biases and
an untied head (lm_head.weight; embed_tokens when tie_word_embeddings is true).
What `keystone import --from hf` must agree with.
Not here: the folder's files (hf_folder.py).
"""
import math

import torch


def random_llama(cfg, seed):
    """A state dict with the names save_pretrained gives LlamaForCausalLM (lm_head unless tied)."""
    g = torch.Generator().manual_seed(seed)
    d, f, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    h, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    p = cfg.get("head_dim", d // h)

    def r(*shape, scale=0.2, mean=0.0):
        return torch.randn(*shape, generator=g) * scale + mean
    sd = {"model.embed_tokens.weight": r(V, d, scale=0.5)}
    for i in range(cfg["num_hidden_layers"]):
        l = f"model.layers.{i}."
        sd |= {l + "input_layernorm.weight": r(d, mean=1.0),
               l + "self_attn.q_proj.weight": r(h * p, d), l + "self_attn.k_proj.weight": r(kv * p, d),
               l + "self_attn.v_proj.weight": r(kv * p, d), l + "self_attn.o_proj.weight": r(d, h * p),
               l + "post_attention_layernorm.weight": r(d, mean=1.0),
               l + "mlp.gate_proj.weight": r(f, d), l + "mlp.up_proj.weight": r(f, d),
               l + "mlp.down_proj.weight": r(d, f)}
    sd["model.norm.weight"] = r(d, mean=1.0)
    if not cfg.get("tie_word_embeddings", False):
        sd["lm_head.weight"] = r(V, d, scale=0.3)
    return sd


def rms_norm(x, weight, eps):
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(T, p, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, p, 2, dtype=torch.int64).float() / p))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)  # (T, p/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, p)
    return emb.cos(), emb.sin()


def llama_logits(sd, cfg, ids):
    """ids: a list of ints -> logits (T, V), float32, as LlamaForCausalLM computes them in eval mode."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    G = cfg.get("num_key_value_heads", H)
    p = cfg.get("head_dim", d // H)
    eps = cfg.get("rms_norm_eps", 1e-6)
    T = len(ids)
    cos, sin = rope_cos_sin(T, p, cfg.get("rope_theta", 10000.0))
    x = sd["model.embed_tokens.weight"][torch.tensor(ids)]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["num_hidden_layers"]):
        l = f"model.layers.{i}."
        y = rms_norm(x, sd[l + "input_layernorm.weight"], eps)
        q = (y @ sd[l + "self_attn.q_proj.weight"].T).reshape(T, H, p).transpose(0, 1)  # (H, T, p)
        k = (y @ sd[l + "self_attn.k_proj.weight"].T).reshape(T, G, p).transpose(0, 1)  # (G, T, p)
        v = (y @ sd[l + "self_attn.v_proj.weight"].T).reshape(T, G, p).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(H // G, dim=0), v.repeat_interleave(H // G, dim=0)  # repeat_kv
        att = (q @ k.transpose(-1, -2)) / math.sqrt(p)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(0, 1).reshape(T, H * p)
        x = x + y @ sd[l + "self_attn.o_proj.weight"].T
        y = rms_norm(x, sd[l + "post_attention_layernorm.weight"], eps)
        gate = torch.nn.functional.silu(y @ sd[l + "mlp.gate_proj.weight"].T)
        x = x + (gate * (y @ sd[l + "mlp.up_proj.weight"].T)) @ sd[l + "mlp.down_proj.weight"].T
    x = rms_norm(x, sd["model.norm.weight"], eps)
    head = sd.get("lm_head.weight", sd["model.embed_tokens.weight"])
    return x @ head.T
