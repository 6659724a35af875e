"""tools/experiments/speed_table.py — RESULTS.md's speed table, computed from
the raw `keystone bench` lines that speed.py keeps
(tools/experiments/kept_runs/speed/raw.jsonl), for page.py's `{{speed}}`
block and `{{speed-ratio SHAPE MODE PRECISION}}` inline figure.

One row per (shape, mode, precision): each family's median time over its
runs with the range (a run's time is bench's step_ms, the mean of its timed
steps; for decode, one whole generation of 128 tokens), and MGK's time over
softmax's: the median of the per-round ratios (each round times both
families back to back, so a ratio is taken within one stretch of the
machine's speed) with their range. The verdict says "faster" or "slower"
only when every round agrees; otherwise "no consistent difference".

A damaged file (a line that is no record, a missing field, a round timed
for one family only, two commits or two CPUs) stops it with one line
naming the file and line. Not here: the timing itself (speed.py).
"""
import functools
import json
import statistics

from runs import fail

FIELDS = ("shape", "mode", "precision", "family", "round", "commit", "bench")
MODES = {"train": "training step", "forward": "forward pass", "decode": "decoding 128 tokens",
         "attention-train": "attention sublayer, forward + backward",
         "attention-forward": "attention sublayer, forward"}


@functools.lru_cache(maxsize=None)  # a page reads one file for its table and every inline ratio
def read(path):
    """The records of path, checked (read once per path; callers do not modify the result): {(shape, mode, precision): {family: {round: step_ms}}}, plus
    the commit, CPU and bf16 GEMM path they share."""
    cells, seen = {}, {}
    try:
        f = open(path)
    except OSError as e:
        fail(f"{path}: cannot read the speed runs ({e.strerror}); make them with tools/experiments/speed.py")
    with f:
        for number, line in enumerate(f, 1):
            where = f"{path}:{number}"
            try:
                rec = json.loads(line)
            except ValueError:
                fail(f"{where}: not JSON")
            if not isinstance(rec, dict) or any(k not in rec for k in FIELDS) or not isinstance(rec["bench"], dict):
                fail(f"{where}: not a speed record (it needs {', '.join(FIELDS)})")
            bench = rec["bench"]
            ms = bench.get("step_ms")
            if not isinstance(ms, (int, float)) or not ms > 0:
                fail(f"{where}: step_ms is {ms!r}, not a positive time")
            for key, value in (("commit", rec["commit"]), ("cpu", bench.get("cpu")),
                               ("cpu_gemm", bench.get("cpu_gemm"))):
                if seen.setdefault(key, value) != value:
                    fail(f"{where}: {key} {value!r} where earlier lines have {seen[key]!r}: one table, one "
                         "binary on one machine")
            rounds = cells.setdefault((rec["shape"], rec["mode"], rec["precision"]), {}).setdefault(rec["family"], {})
            if rec["round"] in rounds:
                fail(f"{where}: round {rec['round']} of {rec['family']} {rec['shape']} {rec['mode']} "
                     f"{rec['precision']} is timed twice")
            rounds[rec["round"]] = float(ms)
    if not cells:
        fail(f"{path}: no speed runs")
    for (shape, mode, precision), families in cells.items():
        if len(families) != 2:
            fail(f"{path}: {shape} {mode} {precision} has {len(families)} families ({', '.join(families)}); "
                 "a row compares two")
        a, b = (set(r) for r in families.values())
        if a != b:
            fail(f"{path}: {shape} {mode} {precision}: rounds {sorted(a ^ b)} are timed for one family only")
    return cells, seen


def baseline_first(families):
    """(softmax's name, MGK's name): the baseline is the family whose name starts with softmax."""
    names = sorted(families, key=lambda n: not n.startswith("softmax"))
    return names[0], names[1]


def row(families):
    """(softmax name, MGK name, softmax times, MGK times, per-round ratios MGK / softmax)."""
    base, other = baseline_first(families)
    rounds = sorted(families[base])
    return (base, other, [families[base][r] for r in rounds], [families[other][r] for r in rounds],
            [families[other][r] / families[base][r] for r in rounds])


def verdict(ratios):
    if all(r < 1 for r in ratios):
        return "MGK faster"
    if all(r > 1 for r in ratios):
        return "**MGK slower**"
    return "no consistent difference"


def ms(values):
    return f"{statistics.median(values):,.1f} ({min(values):,.1f}–{max(values):,.1f})"


def table(path):
    """The markdown lines of the table, and a closing line with the runs' commit and CPU."""
    cells, seen = read(path)
    out = ["| shape | what is timed | precision | rounds | softmax ms | MGK ms | MGK / softmax | reading |",
           "|---|---|---|---:|---:|---:|---:|---|"]
    for (shape, mode, precision), families in cells.items():
        base, other, a, b, ratios = row(families)
        out.append(f"| {shape} | {MODES.get(mode, mode)} | {precision} | {len(ratios)} | {base}: {ms(a)} "
                   f"| {other}: {ms(b)} | {statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) "
                   f"| {verdict(ratios)} |")
    out += ["", f"Measured at commit {seen['commit']} on {seen['cpu']} (bf16 GEMMs: {seen['cpu_gemm']}); "
            "times are medians over the rounds (range in brackets), the ratio the median of the rounds' own ratios."]
    return out


def ratio(path, shape, mode, precision):
    """The median MGK / softmax ratio of one row, e.g. "0.87×"."""
    cells, _ = read(path)
    if (shape, mode, precision) not in cells:
        fail(f"{path}: no runs of {shape} {mode} {precision} (rows: "
             f"{', '.join(' '.join(k) for k in cells)})")
    return f"{statistics.median(row(cells[(shape, mode, precision)])[4]):.2f}×"
