#!/usr/bin/env python3
"""PyTorch CPU counterpart of `keystone bench --decode`: greedy generation of
--new-tokens tokens after a random prompt of --prompt tokens, for --batch
sequences at once, with a key/value cache, in eager PyTorch under no_grad.

The model is ../shared/bench/torch_lm_bench.py's reference decoder LM (pre-LN,
learned positions, GELU feed-forward, untied output layer without bias), in
eval mode; the cache is what a PyTorch user writes by hand (torch 1.13 has no
generate outside the transformers package): per layer the keys and values of
the positions so far, (B, h, S, p), concatenated one step at a time; MGK keeps
its M keys per position, (B, h, M, S, p), and mixes them the unfused way, as
torch_lm_bench.py does. Prints one JSON line (tokens_per_s counts new tokens;
prefill_ms is the prompt's pass alone).
"""
import argparse, json, time
import torch
import torch.nn as nn
from torch_common import Projections, add_attention_args

p = argparse.ArgumentParser()
add_attention_args(p)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--d-ff", type=int, default=1024)
p.add_argument("--vocab", type=int, default=8192)
p.add_argument("--batch", type=int, default=1)
p.add_argument("--prompt", type=int, default=128)
p.add_argument("--new-tokens", type=int, default=128)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
max_len = a.prompt + a.new_tokens


class Attn(Projections):
    def forward(s, x, cache):
        T = x.shape[1]
        q, k, v = s.qkv(x)
        if cache:
            k = torch.cat([cache["k"], k], dim=-2)
            v = torch.cat([cache["v"], v], dim=-2)
        cache["k"], cache["v"] = k, v
        S = v.shape[-2]
        # query i sits at position S - T + i and sees keys 0 .. S - T + i
        mask = torch.ones(T, S, dtype=torch.bool).triu(S - T + 1)
        return s.out(s.scores(q, k).masked_fill(mask, float("-inf")).softmax(-1) @ v)


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(a.d_model), nn.LayerNorm(a.d_model)
        s.att = Attn(a)
        s.ff = nn.Sequential(nn.Linear(a.d_model, a.d_ff), nn.GELU(), nn.Linear(a.d_ff, a.d_model))

    def forward(s, x, cache):
        x = x + s.att(s.ln1(x), cache)
        return x + s.ff(s.ln2(x))


class LM(nn.Module):
    def __init__(s):
        super().__init__()
        s.tok = nn.Embedding(a.vocab, a.d_model)
        s.pos = nn.Embedding(max_len, a.d_model)
        s.blocks = nn.ModuleList(Block() for _ in range(a.layers))
        s.ln = nn.LayerNorm(a.d_model)
        s.head = nn.Linear(a.d_model, a.vocab, bias=False)

    def forward(s, idx, caches, offset):
        x = s.tok(idx) + s.pos(torch.arange(offset, offset + idx.shape[1]))
        for b, c in zip(s.blocks, caches):
            x = b(x, c)
        return s.head(s.ln(x))


m = LM().eval()
prompt = torch.randint(0, a.vocab, (a.batch, a.prompt))


@torch.no_grad()
def generate():
    caches = [{} for _ in m.blocks]
    logits = m(prompt, caches, 0)
    out = [prompt]
    for i in range(a.new_tokens):
        nxt = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        out.append(nxt)
        if i + 1 < a.new_tokens:
            logits = m(nxt, caches, a.prompt + i)
    return torch.cat(out, 1)


checksum = float(generate().double().sum())  # warm-up
t0 = time.perf_counter()
for _ in range(a.steps):
    generate()
dt = (time.perf_counter() - t0) / a.steps
with torch.no_grad():
    t1 = time.perf_counter()
    for _ in range(a.steps):
        m(prompt, [{} for _ in m.blocks], 0)
    prefill = (time.perf_counter() - t1) / a.steps
print(json.dumps({"framework": f"torch-{torch.__version__}", "attention": a.attention, "mode": "decode",
                  "tokens_per_s": a.batch * a.new_tokens / dt, "step_ms": dt * 1e3, "prefill_ms": prefill * 1e3,
                  "params": sum(t.numel() for t in m.parameters()), "batch": a.batch, "prompt": a.prompt,
                  "new_tokens": a.new_tokens, "threads": a.threads, "checksum": checksum}))
