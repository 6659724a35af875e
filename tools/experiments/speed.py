#!/usr/bin/env python3
"""tools/experiments/speed.py — times MGK against softmax with half the MGK
heads at the MGK paper's own shapes (and at the model claim 1 trains
here), and keeps every run's raw output, so
RESULTS.md's speed table (report.py's `{{speed}}`) is computed from files in
the repository, not copied from a terminal (issue 56 item 4).

What is timed (each a `keystone bench` run, which prints one JSON line):
  wt103   the WikiText-103 decoder LM of the official code
          (minhtannguyen/transformer-mgk, language-modeling/lmtool-fwms):
          16 layers, d 128, d_ff 2048, heads of 16, softmax 8 heads against
          MGK 4 heads × 2 keys, n 256. Its 267,735-word adaptive softmax is
          not Keystone's: the output layer here is a plain untied one over
          8,192 ids (bench's random tokens), the same for both families.
            train    a training step, batch 16 (forward, backward, AdamW)
            forward  the forward pass alone in eval mode, batch 16
            decode   greedy decoding at batch 1: 128 new tokens after a
                     128-token prompt, on the KV cache
  brown-lm
          the model claim 1's runs train (tools/configs/brown_lm_softmax8.json
          and brown_lm_mgk4.json): 4 layers, d 256, d_ff 1024, heads of 32,
          softmax 8 against MGK 4 × 2 keys, n 128, batch 16, Brown's 14,503
          ids, dropout 0.3 and 0.1 on the attention weights; its training
          step (bench's output layer is untied where the runs tie it)
  lra     the LRA encoders' attention (lra/model.py): d 64, heads of 32,
          softmax 2 heads against MGK 1 head × 2 keys, one bidirectional
          attention sublayer (projections and attention) at n 4,096, batch 4:
            attention-train    forward and backward
            attention-forward  forward only
          (the whole LRA model adds an embedding and a 128-wide feed-forward
          that are the same for both families and only dilute the ratio.)
Each in float32 and bf16, ROUNDS rounds (default 5), the families in turn
and their order swapped every round (A B, B A, ...), so that a machine whose
speed drifts slows both alike; every run is its own process.

  python3 tools/experiments/speed.py [--keystone build/keystone] [--rounds 5]
      [--out tools/experiments/kept_runs/speed/raw.jsonl]

Each run appends one line to --out: the case (shape, mode, precision,
family, round), the command, the commit the binary was built from (bench's
own report), and bench's JSON line (step_ms, its min/median/max, cpu,
cpu_gemm, ...). Started again, it skips the runs --out already holds (a
stopped measurement goes on), so mixing binaries is refused: every line must
name the same commit and CPU.
Run it on a quiet machine (stop background work first).
Not here: the table (report.py's speed_table), the counts of parameters and
FLOPs (cost_table.py), Keystone against PyTorch (docs/performance.md).
"""
import argparse
import json
import os
import subprocess
import sys

DEFAULT_OUT = os.path.join("tools", "experiments", "kept_runs", "speed", "raw.jsonl")

# shape -> (flags common to both families, {family: its flags}, [(mode, mode flags)])
SHAPES = {
    "wt103": (["--d-model", "128", "--layers", "16", "--d-ff", "2048", "--head-dim", "16", "--seq", "256",
               "--vocab", "8192"],
              {"softmax-8": ["--attention", "softmax", "--heads", "8"],
               "mgk-4": ["--attention", "mgk", "--heads", "4", "--keys", "2"]},
              [("train", ["--batch", "16", "--steps", "4"]),
               ("forward", ["--batch", "16", "--steps", "4", "--forward-only"]),
               ("decode", ["--batch", "1", "--steps", "2", "--decode", "--prompt", "128", "--new-tokens", "128"])]),
    "brown-lm": (["--d-model", "256", "--layers", "4", "--d-ff", "1024", "--head-dim", "32", "--seq", "128",
                  "--batch", "16", "--vocab", "14503", "--dropout", "0.3", "--attention-dropout", "0.1",
                  "--steps", "10"],
                 {"softmax-8": ["--attention", "softmax", "--heads", "8"],
                  "mgk-4": ["--attention", "mgk", "--heads", "4", "--keys", "2"]},
                 [("train", [])]),
    "lra": (["--d-model", "64", "--layers", "2", "--d-ff", "128", "--head-dim", "32", "--seq", "4096",
             "--batch", "4", "--vocab", "256", "--steps", "4", "--attention-only", "--bidirectional"],
            {"softmax-2": ["--attention", "softmax", "--heads", "2"],
             "mgk-1": ["--attention", "mgk", "--heads", "1", "--keys", "2"]},
            [("attention-train", []), ("attention-forward", ["--forward-only"])]),
}
PRECISIONS = ["float32", "bf16"]


def plan(rounds):
    """Every run in the order it is made: (shape, mode, precision, family, round, flags)."""
    for r in range(1, rounds + 1):
        for shape, (common, families, modes) in SHAPES.items():
            for mode, mode_flags in modes:
                for precision in PRECISIONS:
                    order = list(families) if r % 2 else list(reversed(families))
                    for family in order:
                        yield (shape, mode, precision, family, r,
                               common + families[family] + mode_flags + ["--precision", precision])


def source(bench):
    """The commit the binary was built from (bench's own report), marked when its tree was not clean."""
    return bench["commit"][:12] + ("+dirty" if bench["dirty"] else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keystone", default=os.path.join("build", "keystone"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("speed.py: --rounds must be at least 1")
    if not os.access(args.keystone, os.X_OK):
        sys.exit(f"speed.py: {args.keystone} is not an executable keystone binary (build it first)")
    done, cpu, built = set(), None, None
    if os.path.exists(args.out):
        with open(args.out) as f:
            for number, line in enumerate(f, 1):
                try:
                    rec = json.loads(line)
                    key = (rec["shape"], rec["mode"], rec["precision"], rec["family"], rec["round"])
                    rec_cpu, rec_commit = rec["bench"]["cpu"], rec["commit"]
                except (ValueError, KeyError, TypeError) as e:
                    sys.exit(f"speed.py: {args.out}:{number}: not a speed record ({e})")
                if built is not None and rec_commit != built:
                    sys.exit(f"speed.py: {args.out}:{number} was measured at {rec_commit}, an earlier line at {built}: "
                             "one table, one binary")
                built = rec_commit
                if cpu is not None and rec_cpu != cpu:
                    sys.exit(f"speed.py: {args.out}:{number} ran on {rec_cpu}, an earlier line on {cpu}: one CPU")
                cpu = rec_cpu
                done.add(key)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for shape, mode, precision, family, r, flags in plan(args.rounds):
        if (shape, mode, precision, family, r) in done:
            continue
        argv = [args.keystone, "bench"] + flags
        run = subprocess.run(argv, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"speed.py: {' '.join(argv)} failed ({run.returncode}):\n{run.stderr.strip()}")
        bench = json.loads(run.stdout.strip().splitlines()[-1])
        if cpu is not None and bench["cpu"] != cpu:
            sys.exit(f"speed.py: this run is on {bench['cpu']}, {args.out} holds runs on {cpu}: one CPU")
        if built is not None and source(bench) != built:
            sys.exit(f"speed.py: {args.keystone} was built from {source(bench)}, {args.out} holds runs of {built}: "
                     "one table, one binary (move the old file away to start again)")
        cpu, built = bench["cpu"], source(bench)
        rec = {"shape": shape, "mode": mode, "precision": precision, "family": family, "round": r,
               "argv": ["keystone", "bench"] + flags, "commit": built, "bench": bench}
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(f"{shape} {mode} {precision} {family} round {r}: {bench['step_ms']:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
