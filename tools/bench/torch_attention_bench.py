#!/usr/bin/env python3
"""PyTorch CPU counterpart of `keystone bench --attention-only`: one attention
sublayer alone (the q/k/v projections, the attention, the output projection),
forward and backward (or forward alone with --forward-only), on random
(batch, seq, d_model) inputs, causal unless --bidirectional. Prints one JSON
line in the style of ../shared/bench/torch_lm_bench.py.

What it is not: PyTorch at its fastest on long sequences. Debian's PyTorch is
1.13, which has no torch.nn.functional.scaled_dot_product_attention (2.0+),
so softmax and fixed attention are the eager composition every 1.13 user
writes (q kᵀ, mask, softmax, times v), forming the (B, h, T, S) weights; MGK
is computed the unfused way as torch_lm_bench.py computes it (all M
components' logits, then a logsumexp over them). Where a newer PyTorch is at
hand, --sdpa uses its fused kernel for softmax and fixed.
"""
import argparse, json, time
import torch
import torch.nn.functional as F
from torch_common import Projections, add_attention_args

p = argparse.ArgumentParser()
add_attention_args(p)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--forward-only", action="store_true")
p.add_argument("--bidirectional", action="store_true")
p.add_argument("--sdpa", action="store_true", help="F.scaled_dot_product_attention (PyTorch 2.0+), softmax/fixed")
p.add_argument("--precision", default="float32", choices=["float32", "bf16"],
               help="bf16: torch.autocast on the CPU")
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
if a.sdpa and not hasattr(F, "scaled_dot_product_attention"):
    raise SystemExit(f"--sdpa: PyTorch {torch.__version__} has no scaled_dot_product_attention (2.0+)")


class Attn(Projections):
    def forward(s, x):
        T = x.shape[1]
        q, k, v = s.qkv(x)
        causal = not a.bidirectional
        if a.sdpa and s.m == 1:
            return s.out(F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        att = s.scores(q, k)  # (B, h, T, T)
        if causal:
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        return s.out(att.softmax(-1) @ v)


model = Attn(a)
x = torch.randn(a.batch, a.seq, a.d_model, requires_grad=not a.forward_only)
g = torch.randn(a.batch, a.seq, a.d_model)


def step():
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
        if a.forward_only:
            with torch.no_grad():
                return model(x).float().sum().item()
        out = model(x)
    model.zero_grad(set_to_none=True)
    x.grad = None
    out.float().backward(g)
    return x.grad.sum().item()


checksum = step()  # warm-up
t0 = time.perf_counter()
for _ in range(a.steps):
    step()
dt = (time.perf_counter() - t0) / a.steps
print(json.dumps({"framework": f"torch-{torch.__version__}", "attention": a.attention,
                  "mode": "attention-forward" if a.forward_only else "attention-train",
                  "tokens_per_s": a.batch * a.seq / dt, "step_ms": dt * 1e3,
                  "params": sum(t.numel() for t in model.parameters()), "seq": a.seq, "batch": a.batch,
                  "causal": not a.bidirectional, "precision": a.precision, "threads": a.threads,
                  "checksum": checksum}))
