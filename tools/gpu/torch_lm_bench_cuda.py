#!/usr/bin/env python3
"""PyTorch reference for `keystone bench`, on the CPU or a CUDA GPU.

A copy of ../shared/bench/torch_lm_bench.py (the project's CPU reference),
made so tools/gpu_check.sh can run it on a GPU machine where shared/ is not
checked out: the model (pre-LN decoder LM: token + learned position
embeddings; LayerNorm -> attention -> residual, LayerNorm -> Linear -> GELU
-> Linear -> residual; final LayerNorm; untied output layer without bias),
the softmax/fixed/mgk attention, AdamW at 3e-4, random tokens, one warm-up
step and the mean over --steps steps are the same lines as there. Added:
--device (cpu or cuda; tensors and the causal mask are made on it, the
tokens are drawn on the CPU first so they are the same on either device),
full-FP32 matmuls on the GPU (TF32 off, as Keystone's GEMMs by default),
--precision tf32 (TF32 on) or bf16 (forward and loss under torch.autocast
with bfloat16, Keystone's --precision bf16 counterpart: bfloat16 GEMMs,
float32 weights), a wait for the GPU before the clock stops, and
"first_loss", "device" and "precision" in the output.
Imports nothing from shared/. Prints one JSON line. Not a benchmark harness:
gpu_check.sh runs it beside keystone and writes the table.
"""
import argparse, json, math, time
import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--attention", default="softmax", choices=["softmax", "fixed", "mgk"])
p.add_argument("--d-model", type=int, default=256)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--heads", type=int, default=8)
p.add_argument("--head-dim", type=int, default=0)
p.add_argument("--d-ff", type=int, default=1024)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--vocab", type=int, default=8192)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--keys", type=int, default=2)
p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
p.add_argument("--precision", default="float32", choices=["float32", "tf32", "bf16"])
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
dev = torch.device(a.device)
if a.device == "cuda":
    if not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    # Keystone's float32 GEMMs run in full FP32 unless asked for TF32; so do these.
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
elif a.precision != "float32":
    raise SystemExit("--precision " + a.precision + " needs --device cuda")


class Attn(nn.Module):
    def __init__(s):
        super().__init__()
        s.h = a.heads
        s.dh = a.head_dim or a.d_model // a.heads
        inner = s.h * s.dh
        s.q = nn.Linear(a.d_model, inner)
        s.v = nn.Linear(a.d_model, inner)
        s.m = a.keys if a.attention == "mgk" else 1
        s.k = nn.Linear(a.d_model, inner * s.m)
        if s.m > 1:
            s.pi = nn.Parameter(torch.zeros(s.h, s.m))
        s.o = nn.Linear(inner, a.d_model)

    def forward(s, x):
        B, T, _ = x.shape
        q = s.q(x).view(B, T, s.h, s.dh).transpose(1, 2)
        v = s.v(x).view(B, T, s.h, s.dh).transpose(1, 2)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        if s.m == 1:
            k = s.k(x).view(B, T, s.h, s.dh).transpose(1, 2)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(s.dh)
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
        else:
            # mixture of Gaussian keys: score = sum_r pi_r exp(-|q-k_r|^2 / 2 sigma^2), sigma^2 = sqrt(dh)
            k = s.k(x).view(B, T, s.h, s.m, s.dh).permute(0, 2, 3, 1, 4)  # B h M T dh
            qq = q.unsqueeze(2)  # B h 1 T dh
            d2 = (qq * qq).sum(-1, keepdim=True) - 2 * qq @ k.transpose(-1, -2) + (k * k).sum(-1).unsqueeze(-2)
            logits = -d2 / (2 * math.sqrt(s.dh)) + F.log_softmax(s.pi, -1).view(1, s.h, s.m, 1, 1)
            logits = logits.masked_fill(mask, float("-inf"))
            att = torch.logsumexp(logits, dim=2).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, s.h * s.dh)
        return s.o(y)


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(a.d_model), nn.LayerNorm(a.d_model)
        s.att = Attn()
        s.ff = nn.Sequential(nn.Linear(a.d_model, a.d_ff), nn.GELU(), nn.Linear(a.d_ff, a.d_model))

    def forward(s, x):
        x = x + s.att(s.ln1(x))
        return x + s.ff(s.ln2(x))


class LM(nn.Module):
    def __init__(s):
        super().__init__()
        s.tok = nn.Embedding(a.vocab, a.d_model)
        s.pos = nn.Embedding(a.seq, a.d_model)
        s.blocks = nn.ModuleList(Block() for _ in range(a.layers))
        s.ln = nn.LayerNorm(a.d_model)
        s.head = nn.Linear(a.d_model, a.vocab, bias=False)

    def forward(s, idx):
        x = s.tok(idx) + s.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in s.blocks:
            x = b(x)
        return s.head(s.ln(x))


m = LM().to(dev)
opt = torch.optim.AdamW(m.parameters(), lr=3e-4)
x = torch.randint(0, a.vocab, (a.batch, a.seq)).to(dev)
y = torch.randint(0, a.vocab, (a.batch, a.seq)).to(dev)


def step():
    with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
        loss = F.cross_entropy(m(x).view(-1, a.vocab), y.view(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()  # waits for the GPU


first_loss = step()
t = time.perf_counter()
for _ in range(a.steps):
    loss = step()
if a.device == "cuda":
    torch.cuda.synchronize()
dt = (time.perf_counter() - t) / a.steps
params = sum(p.numel() for p in m.parameters())
print(json.dumps({"framework": "pytorch-" + torch.__version__, "attention": a.attention,
                  "tokens_per_s": a.batch * a.seq / dt, "step_ms": dt * 1e3,
                  "params": params, "loss": loss, "first_loss": first_loss, "device": str(dev),
                  "precision": a.precision}))
