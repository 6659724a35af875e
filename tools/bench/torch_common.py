"""What the PyTorch counterparts of `keystone bench` modes share
(torch_attention_bench.py, torch_decode_bench.py, torch_blocks_bench.py and
../gpu/torch_lm_bench_cuda.py): the attention flags, as
../shared/bench/torch_lm_bench.py spells them, the attention sublayer's
projections and score functions, as that script computes them, and its
decoder LM around a block (pre-norm residual block, embeddings, final norm,
untied output layer) with its timing loop (one warm-up step, then the mean
over --steps steps). Not a script.
"""
import math
import time
import torch
import torch.nn as nn
import torch.nn.functional as F


def add_attention_args(p):
    p.add_argument("--attention", default="softmax", choices=["softmax", "fixed", "mgk"])
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=0)
    p.add_argument("--keys", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)


class Projections(nn.Module):
    """q, k (M keys per position for MGK), v and o of one attention sublayer; split heads."""

    def __init__(s, a):
        super().__init__()
        s.h = a.heads
        s.dh = a.head_dim or a.d_model // a.heads
        inner = s.h * s.dh
        s.m = a.keys if a.attention == "mgk" else 1
        s.q = nn.Linear(a.d_model, inner)
        s.k = nn.Linear(a.d_model, inner * s.m)
        s.v = nn.Linear(a.d_model, inner)
        if s.m > 1:
            s.pi = nn.Parameter(torch.zeros(s.h, s.m))
        s.o = nn.Linear(inner, a.d_model)

    def qkv(s, x):
        """x (B, T, d) -> q, v (B, h, T, p) and k (B, h, T, p), or (B, h, M, T, p) for MGK."""
        B, T, _ = x.shape
        q = s.q(x).view(B, T, s.h, s.dh).transpose(1, 2)
        v = s.v(x).view(B, T, s.h, s.dh).transpose(1, 2)
        if s.m == 1:
            k = s.k(x).view(B, T, s.h, s.dh).transpose(1, 2)
        else:
            k = s.k(x).view(B, T, s.h, s.m, s.dh).permute(0, 2, 3, 1, 4)
        return q, k, v

    def scores(s, q, k):
        """(B, h, T, S) logits: q·k/√p, or MGK's log Σ_r π_r exp(-|q - k_r|² / 2σ²), σ² = √p, unfused."""
        if s.m == 1:
            return (q @ k.transpose(-1, -2)) / math.sqrt(s.dh)
        qq = q.unsqueeze(2)  # (B, h, 1, T, p)
        d2 = (qq * qq).sum(-1, keepdim=True) - 2 * qq @ k.transpose(-1, -2) + (k * k).sum(-1).unsqueeze(-2)
        logits = -d2 / (2 * math.sqrt(s.dh)) + F.log_softmax(s.pi, -1).view(1, s.h, s.m, 1, 1)
        return torch.logsumexp(logits, dim=2)

    def out(s, y):
        """(B, h, T, p) -> (B, T, d)."""
        B, _, T, _ = y.shape
        return s.o(y.transpose(1, 2).reshape(B, T, s.h * s.dh))


class PreNormBlock(nn.Module):
    """x + att(n1(x)), then + ff(n2(x)): the reference's block, whatever norm, attention and feed-forward."""

    def __init__(s, n1, n2, att, ff):
        super().__init__()
        s.n1, s.n2, s.att, s.ff = n1, n2, att, ff

    def forward(s, x):
        x = x + s.att(s.n1(x))
        return x + s.ff(s.n2(x))


class DecoderLM(nn.Module):
    """The reference decoder LM over a.layers of block(): token embeddings plus a learned position table (none when
    learned_positions is False, the position being in the attention), the blocks, a final norm(a.d_model) and an
    untied output layer without bias. Built in that order, so a seed draws the same weights."""

    def __init__(s, a, block, norm=nn.LayerNorm, learned_positions=True):
        super().__init__()
        s.tok = nn.Embedding(a.vocab, a.d_model)
        s.pos = nn.Embedding(a.seq, a.d_model) if learned_positions else None
        s.blocks = nn.ModuleList(block() for _ in range(a.layers))
        s.n = norm(a.d_model)
        s.head = nn.Linear(a.d_model, a.vocab, bias=False)

    def forward(s, idx):
        """idx (B, T) -> logits (B, T, vocab)."""
        x = s.tok(idx)
        if s.pos is not None:
            x = x + s.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in s.blocks:
            x = b(x)
        return s.head(s.n(x))


def time_steps(step, steps, wait=lambda: None):
    """One warm-up step(), then `steps` timed ones: (the warm-up's loss, the last loss, seconds per step). `wait`
    runs before the clock stops (a GPU's synchronize)."""
    first = step()
    t = time.perf_counter()
    for _ in range(steps):
        loss = step()
    wait()
    return first, loss, (time.perf_counter() - t) / steps
