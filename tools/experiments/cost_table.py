#!/usr/bin/env python3
"""tools/experiments/cost_table.py — what the MGK paper's own models cost,
counted by `keystone info`: parameters (all, and without the embedding
tables), forward FLOPs per token and the decoding cache of one sequence, for
softmax with the baseline's heads against MGK with half of them at the same
head size, at the shapes of the official code (minhtannguyen/transformer-mgk):

  WikiText-103 (language-modeling/lmtool-fwms/src/script.sh): a decoder LM,
    16 layers, d 128, d_ff 2048, head size 16, 8 heads (MGK: 4), n = 256.
    Its vocabulary (267,735 words) goes through an adaptive input and
    softmax there; here the output layer is a plain tied softmax, so the
    embedding columns and the output layer's FLOPs are not the paper's —
    read the non-embedding parameters and the attention share.
  LRA (lra/run_tasks.py, model.py, model_wrapper.py): an encoder
    classifier, 2 layers, d 64, d_ff 128, head size 32, 2 heads (MGK: 1),
    learned positions, mean pooling, the two-layer head (Linear(d, d_ff),
    ReLU, Linear(d_ff, C)); ListOps n = 2000 (vocabulary 32, 10 classes),
    Text n = 4000 (bytes, 2 classes), Retrieval two documents of 4000
    (the dual encoder's [u, v, |u−v|, u·v] head, 2 classes).

  python3 tools/experiments/cost_table.py [--keystone build/keystone] > docs/results/cost.md

The paper's own parameter and FLOP figures are not quoted here: this
project has no copy of the paper's tables, only its code.
Not here: speed (keystone bench, docs/performance.md), quality (RESULTS.md).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

WT103 = {"model": "decoder_lm", "vocab_size": 267735, "d_model": 128, "d_ff": 2048, "layers": 16,
         "max_len": 256, "tie_embeddings": True, "attention": {"head_dim": 16}}
LRA = {"model": "encoder_classifier", "d_model": 64, "d_ff": 128, "layers": 2, "pooling": "mean",
       "head": "mlp", "embedding_std": 0.02, "attention": {"head_dim": 32}}
TASKS = [  # (task, base config, task keys, sequence length, softmax heads)
    ("WikiText-103", WT103, {}, 256, 8),
    ("LRA ListOps", LRA, {"vocab_size": 32, "num_classes": 10, "max_len": 2000}, 2000, 2),
    ("LRA Text", LRA, {"vocab_size": 256, "num_classes": 2, "max_len": 4000}, 4000, 2),
    ("LRA Retrieval", LRA, {"vocab_size": 256, "num_classes": 2, "max_len": 4000, "dual": True,
                            "head": "linear", "activation": "relu"}, 4000, 2),
]


def info(keystone, config, seq):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        out = subprocess.run([keystone, "info", "--config", f.name, "--seq", str(seq)],
                             capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        sys.exit(f"cost_table.py: keystone info failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def row_config(base, task_keys, family, heads):
    c = json.loads(json.dumps(base))
    c.update(task_keys)
    c["attention"] = dict(c["attention"], type=family, heads=heads)
    return c


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--keystone", default="build/keystone")
    a = p.parse_args()
    print("| task | attention | params | non-embedding | FLOPs/token (fwd) | decoding cache / sequence |")
    print("|---|---|---:|---:|---:|---:|")
    for task, base, keys, seq, heads in TASKS:
        rows = []
        for family, h in (("softmax", heads), ("mgk", heads // 2)):
            r = info(a.keystone, row_config(base, keys, family, h), seq)
            rows.append((f"{family} {h} × {base['attention']['head_dim']}", r))
        ref = rows[0][1]
        for name, r in rows:
            ratio = "" if r is ref else (f" ({r['non_embedding_params'] / ref['non_embedding_params']:.2f}×)",
                                         f" ({r['forward_flops_per_token'] / ref['forward_flops_per_token']:.2f}×)")
            cache = (f"{r['kv_cache_mib_per_sequence']:.2f} MiB" if r["kv_cache_mib_per_sequence"] > 0
                     else "— (no decoding)")
            print(f"| {task} (n = {seq}) | {name} | {r['params']:,} | {r['non_embedding_params']:,}"
                  f"{ratio[0] if ratio else ''} | {r['forward_flops_per_token'] / 1e6:.2f} M"
                  f"{ratio[1] if ratio else ''} | {cache} |")


if __name__ == "__main__":
    main()
