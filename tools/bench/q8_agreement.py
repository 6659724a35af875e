#!/usr/bin/env python3
"""tools/bench/q8_agreement.py — how often a decoder LM with Q8_0 weights
(`--dtype q8_0`, weight-only int8) makes the greedy choice the same model in
bf16 (`--dtype bf16`) makes, on a trained run.

Ten fixed English prompts (the run's tokenizer, through ks_tokenize), NEW new
tokens each, greedy. Two measures over the PROMPTS × NEW generated tokens:
  - teacher-forced agreement: the bf16 model's continuation is fed to the
    other model, and each position counts when that model's largest logit is
    the token bf16 chose there (every one of the PROMPTS × NEW choices
    counts, whatever came before);
  - free-running: each model decodes on its own; how many tokens match the
    bf16 text position by position, and how long the common prefix is.
The same for float32 against bf16 as a yardstick (bf16's own rounding moves
some choices too).

    /usr/bin/python3 tools/bench/q8_agreement.py RUN [--new 100] [--bin build/tests]

Needs ks_logits and ks_tokenize (built with the tests). Prints one JSON object.
Not a test: docs/performance.md quotes a run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

PROMPTS = [
    "the jury said it did not find any evidence that",
    "in the afternoon the two men walked down to the",
    "the president told the committee that the new program would",
    "she looked at him for a long time and then",
    "the church has always been a place where the people of the",
    "after the war the city began to grow and",
    "it is not easy to say what the best way",
    "the company reported that its sales for the first",
    "he had never seen anything like it before , and",
    "the water was cold and the wind from the",
]


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ...: exit {out.returncode}: {out.stderr.strip()}")
    return out.stdout


def joined(seqs):
    args = []
    for i, s in enumerate(seqs):
        if i:
            args.append("--")
        args += [str(x) for x in s]
    return args


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run")
    p.add_argument("--new", type=int, default=100)
    p.add_argument("--bin", default="build/tests")
    a = p.parse_args()
    logits, tokenize = os.path.join(a.bin, "ks_logits"), os.path.join(a.bin, "ks_tokenize")
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, text in enumerate(PROMPTS):
            files.append(os.path.join(tmp, f"p{i}.txt"))
            with open(files[-1], "w") as f:
                f.write(text)
        lines = run([tokenize, os.path.join(a.run, "tokenizer.json")] + files).splitlines()
    prompts = [[int(x) for x in lines[3 * i].split()] for i in range(len(PROMPTS))]

    def greedy(dtype):
        out = run([logits, "--dtype", dtype, "--greedy", str(a.new), a.run] + joined(prompts)).splitlines()
        return [[int(x) for x in line.split()] for line in out]

    base = greedy("bf16")
    fed = [p + g[:-1] for p, g in zip(prompts, base)]  # the bf16 continuation, fed back

    def compare(dtype):
        argmax = run([logits, "--dtype", dtype, "--argmax", a.run] + joined(fed)).splitlines()
        forced = total = 0
        for p, g, line in zip(prompts, base, argmax):
            best = [int(x) for x in line.split()]
            for k in range(len(g)):  # position len(p) - 1 + k predicts g[k]
                forced += best[len(p) - 1 + k] == g[k]
                total += 1
        own = greedy(dtype)
        same = sum(x == y for o, g in zip(own, base) for x, y in zip(o, g))
        prefix = []
        for o, g in zip(own, base):
            n = 0
            while n < len(g) and o[n] == g[n]:
                n += 1
            prefix.append(n)
        return {"teacher_forced": forced / total, "tokens": total, "free_running_same": same / total,
                "common_prefix_mean": sum(prefix) / len(prefix), "common_prefix_min": min(prefix)}

    print(json.dumps({"run": a.run, "prompts": len(PROMPTS), "new": a.new, "against": "bf16",
                      "q8_0": compare("q8_0"), "float32": compare("float32")}))


if __name__ == "__main__":
    main()
