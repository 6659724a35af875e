#!/usr/bin/env python3
"""PyTorch reference for `keystone bench`, on the CPU or a CUDA GPU.

The model of ../shared/bench/torch_lm_bench.py (the project's CPU
reference), for tools/gpu_check.sh to run on a GPU machine where shared/ is
not checked out: the pre-LN decoder LM (token + learned position embeddings;
LayerNorm -> attention -> residual, LayerNorm -> Linear -> GELU -> Linear ->
residual; final LayerNorm; untied output layer without bias), the
softmax/fixed/mgk attention, AdamW at 3e-4, random tokens, one warm-up step
and the mean over --steps steps, built from ../bench/torch_common.py (the
attention flags, the sublayer's projections and scores, DecoderLM,
PreNormBlock, time_steps), which the CPU counterparts share (so k's weights
are drawn before v's, as there). Added:
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
import argparse, json, os, sys
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from torch_common import DecoderLM, PreNormBlock, Projections, add_attention_args, time_steps  # noqa: E402

p = argparse.ArgumentParser()
add_attention_args(p)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--d-ff", type=int, default=1024)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--vocab", type=int, default=8192)
p.add_argument("--steps", type=int, default=10)
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


class Attn(Projections):
    """The causal attention sublayer: torch_common's projections and scores, masked, softmax over the keys."""

    def forward(s, x):
        T = x.shape[1]
        q, k, v = s.qkv(x)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = s.scores(q, k).masked_fill(mask, float("-inf")).softmax(-1)
        return s.out(att @ v)


def block():
    return PreNormBlock(nn.LayerNorm(a.d_model), nn.LayerNorm(a.d_model), Attn(a),
                        nn.Sequential(nn.Linear(a.d_model, a.d_ff), nn.GELU(), nn.Linear(a.d_ff, a.d_model)))


m = DecoderLM(a, block).to(dev)
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


first_loss, loss, dt = time_steps(step, a.steps, torch.cuda.synchronize if a.device == "cuda" else lambda: None)
params = sum(p.numel() for p in m.parameters())
print(json.dumps({"framework": "pytorch-" + torch.__version__, "attention": a.attention,
                  "tokens_per_s": a.batch * a.seq / dt, "step_ms": dt * 1e3,
                  "params": params, "loss": loss, "first_loss": first_loss, "device": str(dev),
                  "precision": a.precision}))
