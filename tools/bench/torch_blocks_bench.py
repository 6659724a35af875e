#!/usr/bin/env python3
"""PyTorch CPU counterpart of `keystone bench` with today's blocks: a training
step of ../shared/bench/torch_lm_bench.py's reference decoder LM (pre-norm,
untied output layer without bias, AdamW at 3e-4, random tokens, one warm-up
step, the mean over --steps steps), in which each block can be swapped as
Keystone's config swaps it:

  --norm layernorm|rmsnorm  nn.LayerNorm, or RMSNorm written as a PyTorch user
                            writes it (torch 1.13 has none): x·rsqrt(mean(x²)+eps)·w
  --positions learned|rope|alibi
                            learned table; rotary embeddings on q and k in the
                            Hugging Face rotate_half convention (cos/sin tables
                            made once); or ALiBi's per-head linear biases added
                            to the scores
  --ff mlp|swiglu|geglu     Linear-GELU-Linear, or the gated forms
                            down(act(gate(x)) · up(x)) with --d-ff the hidden width
  --kv-heads N              grouped-query attention: N key/value heads, repeated
                            to the query heads before the product (HF's repeat_kv)
  --no-bias                 every Linear and norm without a bias

The softmax family only (the blocks are what is timed). torch 1.13 has no
scaled_dot_product_attention, so attention is the eager composition the
reference uses. The LM around the blocks and the timing loop are
torch_common.py's. Prints one JSON line, as the reference does.
"""
import argparse, json, math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_common import DecoderLM, PreNormBlock, time_steps

p = argparse.ArgumentParser()
p.add_argument("--d-model", type=int, default=256)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--heads", type=int, default=8)
p.add_argument("--kv-heads", type=int, default=0)
p.add_argument("--d-ff", type=int, default=1024)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--vocab", type=int, default=8192)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--norm", default="layernorm", choices=["layernorm", "rmsnorm"])
p.add_argument("--positions", default="learned", choices=["learned", "rope", "alibi"])
p.add_argument("--ff", default="mlp", choices=["mlp", "swiglu", "geglu"])
p.add_argument("--rope-theta", type=float, default=10000.0)
p.add_argument("--no-bias", action="store_true")
p.add_argument("--precision", default="float32", choices=["float32", "bf16"])
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
bias = not a.no_bias
h, kvh = a.heads, a.kv_heads or a.heads
dh = a.d_model // h
assert h % kvh == 0, "--kv-heads must divide --heads"


class RMSNorm(nn.Module):
    def __init__(s, d, eps=1e-5):  # Keystone's model.norm_eps default
        super().__init__()
        s.eps, s.w = eps, nn.Parameter(torch.ones(d))
        s.b = nn.Parameter(torch.zeros(d)) if bias else None

    def forward(s, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + s.eps) * s.w
        return y + s.b if s.b is not None else y


def norm(d):
    if a.norm == "rmsnorm":
        return RMSNorm(d)
    ln = nn.LayerNorm(d)
    if not bias:  # torch 1.13's LayerNorm has no bias switch; F.layer_norm takes None
        del ln.bias
        ln.register_parameter("bias", None)
    return ln


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


pos = torch.arange(a.seq, dtype=torch.float64)
inv_freq = a.rope_theta ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)
angles = torch.outer(pos, inv_freq)
angles = torch.cat((angles, angles), dim=-1)
COS, SIN = angles.cos().float(), angles.sin().float()  # (T, p)
# ALiBi: head i's slope 2^(-8(i+1)/h) (h a power of two, as here), bias slope·(j - i) on key j of query i.
slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)]).view(1, h, 1, 1)
ALIBI = slopes * (torch.arange(a.seq).view(1, -1) - torch.arange(a.seq).view(-1, 1)).float()
MASK = torch.ones(a.seq, a.seq, dtype=torch.bool).triu(1)


class Attn(nn.Module):
    def __init__(s):
        super().__init__()
        s.q = nn.Linear(a.d_model, h * dh, bias=bias)
        s.k = nn.Linear(a.d_model, kvh * dh, bias=bias)
        s.v = nn.Linear(a.d_model, kvh * dh, bias=bias)
        s.o = nn.Linear(h * dh, a.d_model, bias=bias)

    def forward(s, x):
        B, T, _ = x.shape
        q = s.q(x).view(B, T, h, dh).transpose(1, 2)
        k = s.k(x).view(B, T, kvh, dh).transpose(1, 2)
        v = s.v(x).view(B, T, kvh, dh).transpose(1, 2)
        if a.positions == "rope":
            q = q * COS[:T] + rotate_half(q) * SIN[:T]
            k = k * COS[:T] + rotate_half(k) * SIN[:T]
        if kvh != h:
            k = k.repeat_interleave(h // kvh, dim=1)
            v = v.repeat_interleave(h // kvh, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        if a.positions == "alibi":
            att = att + ALIBI[..., :T, :T]
        att = att.masked_fill(MASK[:T, :T], float("-inf")).softmax(-1)
        return s.o((att @ v).transpose(1, 2).reshape(B, T, h * dh))


class FF(nn.Module):
    def __init__(s):
        super().__init__()
        s.gated = a.ff != "mlp"
        s.up = nn.Linear(a.d_model, a.d_ff, bias=bias)
        if s.gated:
            s.gate = nn.Linear(a.d_model, a.d_ff, bias=bias)
        s.down = nn.Linear(a.d_ff, a.d_model, bias=bias)
        s.act = F.silu if a.ff == "swiglu" else F.gelu

    def forward(s, x):
        return s.down(s.act(s.gate(x)) * s.up(x) if s.gated else s.act(s.up(x)))


def block():
    return PreNormBlock(norm(a.d_model), norm(a.d_model), Attn(), FF())


m = DecoderLM(a, block, norm, learned_positions=a.positions == "learned")
opt = torch.optim.AdamW(m.parameters(), lr=3e-4)
x = torch.randint(0, a.vocab, (a.batch, a.seq))
y = torch.randint(0, a.vocab, (a.batch, a.seq))


def step():
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
        logits = m(x)
    loss = F.cross_entropy(logits.float().view(-1, a.vocab), y.view(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


_, loss, dt = time_steps(step, a.steps)
print(json.dumps({"framework": "pytorch-" + torch.__version__, "norm": a.norm, "positions": a.positions,
                  "ff": a.ff, "kv_heads": kvh, "bias": bias, "precision": a.precision,
                  "tokens_per_s": a.batch * a.seq / dt, "step_ms": dt * 1e3,
                  "params": sum(q.numel() for q in m.parameters()), "loss": loss}))
