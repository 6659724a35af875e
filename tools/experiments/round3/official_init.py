#!/usr/bin/env python3
"""tools/experiments/round3/official_init.py — rewrites the model weights of a
Keystone checkpoint with the official MGK code's initialisation, for stage C
of the round-3 pre-registration (PREREGISTRATION.md beside this file):
every weight matrix and embedding drawn from N(0, 0.02²), every bias zero,
norm scales one, norm shifts zero, MGK's mixture logits zero (pi = 1/M, as
Keystone starts them). The pinned binary has no such init option, so
run.py makes a run folder with that binary (one step), this script
overwrites its checkpoints' model tensors in place, and the real run starts
from them with `keystone train --init-from` (a fresh optimizer): the binary
that trains stays the pre-registered one.

  python3 official_init.py RUN_DIR SEED     (rewrites RUN_DIR/best.safetensors and latest.safetensors)

Deterministic: tensors are drawn in sorted name order from Python's own
Mersenne Twister (random.Random(SEED).gauss; the standard library only, as
the runner's Python may have no numpy), so a seed gives the same weights on
every machine. A
tensor it has no rule for is an error (nothing is written), so a model with
other parameters cannot start from a half-official init. Writes
RUN_DIR/official_init.json: the rule per tensor, the seed and this
script's SHA-256. Not here: the runs (run.py), the comparisons (report.py).
"""
import array
import hashlib
import json
import math
import os
import random
import struct
import sys

STD = 0.02


def rule(name, shape):
    """What the official init gives tensor `name` of `shape`: 'normal', 'zeros' or 'ones'; None: no rule."""
    leaf = name.rsplit(".", 1)[-1]
    module = name.rsplit(".", 2)[-2] if name.count(".") >= 1 else ""
    is_norm = module.startswith("ln") or module.startswith("norm")
    if leaf == "pi_logits":
        return "zeros"
    if leaf == "bias":
        return "zeros"
    if leaf == "weight" and is_norm and len(shape) == 1:
        return "ones"
    if leaf == "weight" and len(shape) == 2:
        return "normal"  # Linear weights, token and position tables
    return None


def read_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), 8 + n


def official(path, seed):
    """{name: (rule, bytes)} for the model tensors of checkpoint `path`."""
    header, base = read_header(path)
    rng = random.Random(seed)
    out = {}
    for name in sorted(k for k in header if k != "__metadata__" and not k.startswith("optimizer/")):
        t = header[name]
        if t["dtype"] != "F32":
            raise SystemExit(f"official_init.py: {path}: {name} is {t['dtype']}, not F32")
        r = rule(name, t["shape"])
        if r is None:
            raise SystemExit(f"official_init.py: {path}: no official init for {name} {t['shape']}")
        n = math.prod(t["shape"])
        if r == "normal":
            v = array.array("f", (rng.gauss(0.0, STD) for _ in range(n)))
        else:
            v = array.array("f", [1.0 if r == "ones" else 0.0]) * n
        if sys.byteorder != "little":
            v.byteswap()  # safetensors is little-endian
        begin, end = t["data_offsets"]
        assert end - begin == 4 * n, name
        out[name] = (r, base + begin, v.tobytes())
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    run_dir, seed = sys.argv[1], int(sys.argv[2])
    files = [os.path.join(run_dir, f) for f in ("best.safetensors", "latest.safetensors")]
    files = [f for f in files if os.path.isfile(f)]
    if not files:
        raise SystemExit(f"official_init.py: {run_dir} has no checkpoint")
    plans = {f: official(f, seed) for f in files}  # every file checked before any is written
    for f, plan in plans.items():
        with open(f, "r+b") as out:
            for _, offset, data in plan.values():
                out.seek(offset)
                out.write(data)
    with open(os.path.abspath(__file__), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    record = {"seed": seed, "std": STD, "script_sha256": digest,
              "rules": {name: r for name, (r, _, _) in plans[files[0]].items()}}
    with open(os.path.join(run_dir, "official_init.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"official_init.py: {len(record['rules'])} tensors of {', '.join(files)} from seed {seed}")


if __name__ == "__main__":
    main()
