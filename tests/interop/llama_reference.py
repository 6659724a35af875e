"""tests/interop/llama_reference.py — Llama (LlamaForCausalLM) in plain
PyTorch, from its Hugging Face state dict, computed as transformers'
modeling_llama.py does in float32 eval mode, and the Llama-shaped Mistral
(modeling_mistral.py), Qwen2 (modeling_qwen2.py) and Phi-3 (modeling_phi3.py:
q, k and v read from one qkv_proj, query rows first, then the key and the
value rows; gate and up from one gate_up_proj, chunk(2): gate first) with it: RMSNorm (the
mean square in float32, x · rsqrt(ms + eps) · weight), rotary embeddings in
the rotate_half pairing (dimension i of a head with i + p/2; inv_freq =
θ^(-2i/p) and the angles in float32; rope_scaling linear, dynamic and llama3
as modeling_rope_utils.py computes them), grouped-query attention (query head
n reads key/value head n // (h/g), repeat_kv), a SwiGLU MLP
down(silu(gate(x)) · up(x)), attention biases where the config has them
(Llama's attention_bias: q, k, v, o; Qwen2: q, k, v), Mistral's, Qwen2's and
Phi-3's sliding window, and an untied head (lm_head.weight; embed_tokens when
tie_word_embeddings is true).
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
        for proj, width in attention_biases(cfg):
            sd[l + f"self_attn.{proj}.bias"] = r(width)
    sd["model.norm.weight"] = r(d, mean=1.0)
    if not cfg.get("tie_word_embeddings", False):
        sd["lm_head.weight"] = r(V, d, scale=0.3)
    return sd


def attention_biases(cfg):
    """(projection, width) of the biased attention projections: Qwen2's q, k, v;
    Llama's attention_bias q, k, v and o; none otherwise."""
    d, h = cfg["hidden_size"], cfg["num_attention_heads"]
    kv, p = cfg.get("num_key_value_heads", h), cfg.get("head_dim", d // h)
    qkv = [("q_proj", h * p), ("k_proj", kv * p), ("v_proj", kv * p)]
    if cfg.get("model_type") == "qwen2":
        return qkv
    return qkv + [("o_proj", d)] if cfg.get("attention_bias", False) else []


def random_phi3(cfg, seed):
    """random_llama's weights under Phi3ForCausalLM's names: q, k, v joined into qkv_proj and gate, up into
    gate_up_proj, in the order modeling_phi3.py cuts them."""
    sd = random_llama(cfg, seed)
    for i in range(cfg["num_hidden_layers"]):
        a, m = f"model.layers.{i}.self_attn.", f"model.layers.{i}.mlp."
        sd[a + "qkv_proj.weight"] = torch.cat([sd.pop(a + f"{x}_proj.weight") for x in "qkv"])
        sd[m + "gate_up_proj.weight"] = torch.cat([sd.pop(m + "gate_proj.weight"), sd.pop(m + "up_proj.weight")])
    return sd


def sliding_window(cfg, layer):
    """The window of `layer` (None: full causal): Mistral's and Phi-3's sliding_window; Qwen2's
    from max_window_layers on when use_sliding_window."""
    if cfg.get("model_type") in ("mistral", "phi3"):
        return cfg.get("sliding_window")
    if cfg.get("model_type") == "qwen2" and cfg.get("use_sliding_window", False):
        return cfg.get("sliding_window") if layer >= cfg.get("max_window_layers", 0) else None
    return None


def rms_norm(x, weight, eps):
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_inv_freq(p, theta, scaling, seq_len, max_positions):
    """inv_freq (p/2,) float32 as transformers' modeling_rope_utils.py computes it for
    rope_scaling None, linear, dynamic (at this seq_len) and llama3."""
    def plain(base):
        return 1.0 / (base ** (torch.arange(0, p, 2, dtype=torch.int64).float() / p))
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "default":
        return plain(theta)
    factor = scaling["factor"]
    if kind == "linear":
        return plain(theta) / factor
    if kind == "dynamic":  # _compute_dynamic_ntk_parameters, from max_position_embeddings
        if seq_len > max_positions:
            theta = theta * ((factor * seq_len / max_positions) - (factor - 1)) ** (p / (p - 2))
        return plain(theta)
    assert kind == "llama3", kind
    inv_freq = plain(theta)  # _compute_llama3_parameters
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context / low, old_context / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context / wavelen - low) / (high - low)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def rope_cos_sin(T, p, theta, scaling=None, max_positions=None):
    inv_freq = rope_inv_freq(p, theta, scaling, T, max_positions)
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
    cos, sin = rope_cos_sin(T, p, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"),
                            cfg["max_position_embeddings"])
    x = sd["model.embed_tokens.weight"][torch.tensor(ids)]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["num_hidden_layers"]):
        l = f"model.layers.{i}."
        y = rms_norm(x, sd[l + "input_layernorm.weight"], eps)
        def proj(name):
            out = y @ sd[l + f"self_attn.{name}.weight"].T
            return out + sd[l + f"self_attn.{name}.bias"] if l + f"self_attn.{name}.bias" in sd else out
        if l + "self_attn.qkv_proj.weight" in sd:  # Phi-3: qkv[..., :H·p], then G·p key, then value columns
            qkv = y @ sd[l + "self_attn.qkv_proj.weight"].T
            qs, ks, vs = qkv[:, :H * p], qkv[:, H * p:H * p + G * p], qkv[:, H * p + G * p:]
        else:
            qs, ks, vs = proj("q_proj"), proj("k_proj"), proj("v_proj")
        q = qs.reshape(T, H, p).transpose(0, 1)  # (H, T, p)
        k = ks.reshape(T, G, p).transpose(0, 1)  # (G, T, p)
        v = vs.reshape(T, G, p).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(H // G, dim=0), v.repeat_interleave(H // G, dim=0)  # repeat_kv
        att = (q @ k.transpose(-1, -2)) / math.sqrt(p)
        seen = mask
        window = sliding_window(cfg, i)
        if window is not None:  # HF's sliding mask: key j hidden once j <= i - window
            pos = torch.arange(T)
            seen = mask & (pos[None, :] > pos[:, None] - window)
        att = att.masked_fill(~seen, float("-inf")).softmax(-1)
        y = (att @ v).transpose(0, 1).reshape(T, H * p)
        x = x + y @ sd[l + "self_attn.o_proj.weight"].T
        if l + "self_attn.o_proj.bias" in sd:
            x = x + sd[l + "self_attn.o_proj.bias"]
        y = rms_norm(x, sd[l + "post_attention_layernorm.weight"], eps)
        if l + "mlp.gate_up_proj.weight" in sd:  # Phi-3: up_states.chunk(2, dim=-1) is (gate, up)
            g_, up = (y @ sd[l + "mlp.gate_up_proj.weight"].T).chunk(2, dim=-1)
            x = x + (up * torch.nn.functional.silu(g_)) @ sd[l + "mlp.down_proj.weight"].T
        else:
            gate = torch.nn.functional.silu(y @ sd[l + "mlp.gate_proj.weight"].T)
            x = x + (gate * (y @ sd[l + "mlp.up_proj.weight"].T)) @ sd[l + "mlp.down_proj.weight"].T
    x = rms_norm(x, sd["model.norm.weight"], eps)
    head = sd.get("lm_head.weight", sd["model.embed_tokens.weight"])
    return x @ head.T
