#!/usr/bin/env python3
"""tools/experiments/report.py — the tables of docs/RESULTS.md, made from the
results tools/experiments/run.sh keeps alone (docs/results/runs: each run's
metrics.jsonl, config.json and analysis/analysis.json, plus `keystone info`
for parameters and FLOPs; a run folder of the same layout also serves).

  python3 tools/experiments/report.py [--runs docs/results/runs] [--claims FILE]
                                      [--keystone build/keystone] [--analysis] [CLAIM...]
  python3 tools/experiments/report.py --steps STEP,STEP,... CLAIM...

Prints, per claim, a markdown table with one row per run name of claims.txt:
the seeds finished, parameters (all, and without the embedding tables),
forward FLOPs per token, the median training tokens/s of the seeds (noisy
on a shared machine: the bench in docs/performance.md is the speed figure),
the best validation perplexity and the test perplexity of the best checkpoint
(for a classifier, such as claim 4's ListOps, accuracy in % instead: the
best validation accuracy and the test accuracy) as mean ± sample standard
deviation over the seeds, the machine time, and the bf16 GEMM path of the
machines that trained them (machine.json: amx, avx512bf16 or float32, which
set the speed; the products are the same rounded ones).
A run still in progress or not started is counted as missing, never guessed;
a damaged file of a finished run stops the report with one line naming it
(runs.py), so a row's seeds are exactly the values of its means.

After each claim's table come its comparisons, the lines `#vs CLAIM A B`
of claims.txt (a comment to run.sh): the difference A − B of the test
metric, its mean and Welch's 95% confidence interval over the seeds (each
run's seeds counted as independent samples), and what that interval says
with a margin of 1% of B: "A better" or "A worse" where it excludes 0,
"equal within 1%" where it lies inside ± the margin, else "not
distinguishable" (it holds 0 but reaches past the margin: more seeds could
tell). One seed on either side gives no interval.

With --analysis (claim 6), the table is instead the heads of the analysed
runs (run.sh analyses claims 1, 3 and 5 as each run finishes): `keystone analyze --compare` over all of
a claim's analyses gives one row per run (its compare.json; the definitions
are the C++ ones of tools/analysis_report.h), averaged here over the seeds:
mean Jensen–Shannon divergence and cosine between heads, mean effective
rank of the score and attention matrices, and the heads that can be masked
before the loss rises over 1%.
With --steps, the table is instead each finished seed's validation metric
at the given steps (the records at those steps; "—" where a run has none)
and its test metric: when a run learned, not only how far (claim 4's
plateau table).
Not here: training (run.sh), the figures (`keystone plot`).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runs import fail, finished_seeds  # noqa: E402


def read_claims(path):
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) < 3:
                fail(f"{path}:{number}: expected 'CLAIM NAME CONFIG [KEY=VALUE ...]', got {line.strip()!r}")
            rows.append((parts[0], parts[1]))
    return rows


def read_comparisons(path):
    """The `#vs CLAIM A B` lines: (claim, A, B), in order."""
    pairs = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            parts = line.split()
            if parts and parts[0] == "#vs":
                if len(parts) != 4:
                    fail(f"{path}:{number}: expected '#vs CLAIM A B', got {line.strip()!r}")
                pairs.append(tuple(parts[1:]))
    return pairs


# Student's t, 97.5% quantile, for 1..30 degrees of freedom (then the normal's).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def welch_interval(a, b):
    """(mean of a − mean of b, half-width of its 95% interval), or None under two seeds a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.mean(a) - statistics.mean(b)
    if va + vb == 0:
        return diff, 0.0
    # Welch–Satterthwaite degrees of freedom, rounded down (a wider interval).
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    t = T975[min(int(df), 30) - 1] if df < 31 else 1.960
    return diff, t * math.sqrt(va + vb)


def reading(diff, half, reference, higher_is_better):
    margin = 0.01 * abs(reference)
    lo, hi = diff - half, diff + half
    if lo > 0 or hi < 0:
        return "A better" if (lo > 0) == higher_is_better else "A worse"
    if -margin <= lo and hi <= margin:
        return "equal within 1%"
    return "not distinguishable"


def mean_std(values, seeds):
    """Mean ± sample std of one value per seed; where fewer than the row's `seeds` have one, it says how many."""
    if not values:
        return "—"
    fewer = "" if len(values) == seeds else f" ({len(values)} of {seeds} seeds)"
    if len(values) == 1:
        return f"{values[0]:.1f} (one seed)" + fewer
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}" + fewer


def unit_of(metric):
    """A metric's column label: perplexity, or accuracy in %."""
    return "ppl" if metric == "ppl" else "accuracy (%)"


def test_values(runs, claim, name):
    return [s["test"] for _, s in finished_seeds(runs, claim, name)]


def model_cost(keystone, config):
    out = subprocess.run([keystone, "info", "--config", config], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"keystone info --config {config} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def analysis_table(a, rows, claim):
    """Claim `claim`'s analysed runs, averaged over seeds (see --analysis)."""
    import tempfile
    folder = os.path.join(a.runs, f"claim{claim}")
    names = [name for c, name in rows if c == claim]
    analysed = {}
    if os.path.isdir(folder):
        for entry in sorted(os.listdir(folder)):
            path = os.path.join(folder, entry, "analysis", "analysis.json")
            for name in names:
                if entry.startswith(name + "-seed") and os.path.isfile(path):
                    analysed.setdefault(name, []).append(os.path.join(folder, entry))
    print(f"\n### Claim {claim}: heads (claim 6)\n")
    print("| run | seeds analysed | JS between heads | cosine between heads | effective rank, scores "
          "| effective rank, attention | heads maskable within 1% |")
    print("|---|---|---|---|---|---|---|")
    dirs = [d for name in names for d in analysed.get(name, [])]
    by_run = {}
    if len(dirs) >= 2:  # --compare takes two or more
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run([a.keystone, "analyze", "--compare", *dirs, "--out", out],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                fail(f"keystone analyze --compare failed: {done.stderr.strip()}")
            with open(os.path.join(out, "compare.json")) as f:
                # One row per analysis, in the order given (a row's "run" is
                # where it was trained, not where its results are kept).
                by_run = dict(zip((os.path.normpath(d) for d in dirs), json.load(f)["runs"]))
    for name in names:
        got = [by_run[os.path.normpath(d)] for d in analysed.get(name, []) if os.path.normpath(d) in by_run]
        if not got:
            print(f"| {name} | 0 | | | | | |")
            continue
        def col(key, digits=3):
            values = [r[key] for r in got if isinstance(r.get(key), (int, float))]
            if not values:
                return "—"
            if len(values) == 1:
                return f"{values[0]:.{digits}f} (one seed)"
            return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"
        total = got[0]["total_heads"]
        print(f"| {name} | {len(got)} | {col('js')} | {col('cosine')} | {col('erank_scores', 2)} "
              f"| {col('erank_attention', 2)} | {col('maskable', 1)} of {total} |")


def steps_table(a, rows, claim, steps):
    """Claim `claim`'s finished seeds: the validation metric at `steps`, then the test metric."""
    print(f"\n### Claim {claim}: validation at steps {', '.join(map(str, steps))}\n")
    unit = None
    lines = []
    for c, name in rows:
        if c != claim:
            continue
        for entry, summary in finished_seeds(a.runs, claim, name):
            unit = unit_of(summary["metric"])
            at = summary["valid_at"]
            cells = ", ".join(f"{at[s]:.1f}" if s in at else "—" for s in steps)
            seed = entry[len(name) + len("-seed"):]
            lines.append(f"| {name} seed {seed} | {cells} | {summary['test']:.1f} |")
    if unit is None:
        print("(no finished runs)")
        return
    print(f"| run | valid {unit} at steps {', '.join(map(str, steps))} | test {unit} |")
    print("|---|---|---|")
    for line in lines:
        print(line)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="docs/results/runs")
    p.add_argument("--claims", default="tools/experiments/claims.txt")
    p.add_argument("--keystone", default="build/keystone")
    p.add_argument("--analysis", action="store_true", help="claim 6: the analysed runs' heads, over seeds")
    p.add_argument("--steps", help="STEP,STEP,...: each seed's validation metric at these steps")
    p.add_argument("claim", nargs="*")
    a = p.parse_args()
    rows = read_claims(a.claims)
    claims = sorted({c for c, _ in rows}, key=lambda c: (len(c), c))
    claim_of = {name: c for c, name in rows}
    for c, x, y in read_comparisons(a.claims):
        for n in (x, y):
            if n not in claim_of:
                fail(f"{a.claims}: '#vs {c} {x} {y}' names {n}, which is no run of the list")
    if a.steps:
        try:
            steps = [int(x) for x in a.steps.split(",")]
        except ValueError:
            fail(f"--steps {a.steps}: expected steps separated by commas, e.g. 1500,2000")
        if not a.claim:
            fail("--steps needs the claims to tabulate, e.g. --steps 1500,2000 4")
        for claim in a.claim:
            steps_table(a, rows, claim, steps)
        return
    if a.analysis:
        for claim in a.claim or ["1", "5"]:
            analysis_table(a, rows, claim)
        return
    total = 0.0
    for claim in claims:
        if a.claim and claim not in a.claim:
            continue
        table = []
        metric = "ppl"
        for c, name in rows:
            if c != claim:
                continue
            folder = os.path.join(a.runs, f"claim{claim}")
            seeds = finished_seeds(a.runs, claim, name)
            if not seeds:
                table.append(f"| {name} | 0 | | | | | | | |")
                continue
            metric = seeds[0][1]["metric"]
            cost = model_cost(a.keystone, os.path.join(folder, seeds[0][0], "config.json"))
            minutes = sum(s["elapsed_s"] for _, s in seeds) / 60
            total += minutes
            speed = [s["tokens_per_s"] for _, s in seeds if s["tokens_per_s"] is not None]
            table.append(f"| {name} | {len(seeds)} | {cost['params'] / 1e6:.2f} M ({cost['non_embedding_params'] / 1e6:.2f} M) "
                         f"| {cost['forward_flops_per_token'] / 1e6:.1f} M | {f'{statistics.median(speed):,.0f}' if speed else '—'} "
                         f"| {mean_std([s['best_valid'] for _, s in seeds if s['best_valid'] is not None], len(seeds))} "
                         f"| {mean_std([s['test'] for _, s in seeds], len(seeds))} | {minutes:.0f} min "
                         f"| {' / '.join(sorted({s['gemm_path'] for _, s in seeds}))} |")
        unit = unit_of(metric)
        print(f"\n### Claim {claim}\n")
        print(f"| run | seeds | params (non-embedding) | FLOPs/token | tokens/s | best valid {unit} | test {unit} "
              "| machine time | bf16 GEMMs |")
        print("|---|---|---|---|---|---|---|---|---|")
        for line in table:
            print(line)
        comparisons = [(x, y) for c, x, y in read_comparisons(a.claims) if c == claim]
        if comparisons:
            print(f"\n| A | B | seeds (A, B) | A − B, test {unit} | 95% interval | reading |")
            print("|---|---|---|---|---|---|")
        for x, y in comparisons:
            ta, tb = (test_values(a.runs, claim_of.get(n), n) for n in (x, y))
            interval = welch_interval(ta, tb)
            if interval is None:
                print(f"| {x} | {y} | {len(ta)}, {len(tb)} | | | needs two seeds a side |")
                continue
            diff, half = interval
            print(f"| {x} | {y} | {len(ta)}, {len(tb)} | {diff:+.2f} | [{diff - half:+.2f}, {diff + half:+.2f}] "
                  f"| {reading(diff, half, statistics.mean(tb), metric != 'ppl')} |")
    print(f"\nMachine time of the finished runs: {total / 60:.1f} h")


if __name__ == "__main__":
    main()
