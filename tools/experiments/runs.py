"""tools/experiments/runs.py — reading a claims list (claims.txt: the runs to
train and the comparisons to print, for run.py and report.py alike) and the
runs tools/experiments/run.py keeps (tools/experiments/kept_runs/claimN/NAME-seedS:
config.json, metrics.jsonl, machine.json, and where the trainer wrote one,
provenance.jsonl), for report.py and heads_figure.py.

A run is finished when its metrics.jsonl holds a test record; one without
it (or without metrics.jsonl) is in progress or not started, and counted as
missing. Everything else about a finished run's files must be whole: a
damaged file (an invalid or truncated JSON line, a line nested too deeply
for Python's parser, a line that is no object, a record without its split,
step, time or metric, a metric that is no finite number, an empty file, a
missing config.json or machine.json) stops
the report with one line naming the file and line, never a traceback and
never a mean over fewer values than the seeds it counts.
Not here: the statistics (stats.py), the tables (report.py), training (run.py).
"""
import collections
import json
import math
import os
import statistics
import sys

SPLITS = ("train", "valid", "test")
# Fields every record of a split carries (tools/train/trainer.cpp writes them all);
# the metric of valid and test records (ppl or accuracy) is checked besides.
FIELDS = {"train": ("loss", "tokens_per_s"), "valid": ("loss",), "test": ("loss",)}


def fail(message):
    """Stop the program with one line on stderr, exit status 1."""
    sys.exit(f"{os.path.basename(sys.argv[0]) or 'report.py'}: {message}")


def is_number(value):
    """A finite int or float (not a bool, which JSON's true would give)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _no_constant(name):
    raise ValueError(f"{name} is not a number a kept result can hold")


def parse_line(path, number, line, last=False):
    """One JSON object from line `number` of `path`, or the program stops naming both."""
    try:
        value = json.loads(line, parse_constant=_no_constant)
    except ValueError as e:
        hint = " (a truncated last line?)" if last and isinstance(e, json.JSONDecodeError) else ""
        fail(f"{path}:{number}: not JSON: {getattr(e, 'msg', e)}{hint}")
    except RecursionError:  # json's decoder recurses once per [ or {
        fail(f"{path}:{number}: nested too deeply")
    if not isinstance(value, dict):
        fail(f"{path}:{number}: a {type(value).__name__}, not a JSON object")
    return value


def read_json_file(path, what):
    """A whole-file JSON object (config.json, machine.json), or the program stops naming the file."""
    if not os.path.isfile(path):
        fail(f"{path}: missing ({what})")
    with open(path) as f:
        text = f.read()
    if not text.strip():
        fail(f"{path}: empty ({what})")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except ValueError as e:
        line = f":{e.lineno}" if isinstance(e, json.JSONDecodeError) else ""
        fail(f"{path}{line}: not JSON: {getattr(e, 'msg', e)}")
    except RecursionError:
        fail(f"{path}: nested too deeply")
    if not isinstance(value, dict):
        fail(f"{path}: a {type(value).__name__}, not a JSON object")
    return value


def read_lines(path):
    """[(line number, object)] of a JSON-lines file, blank lines skipped; an empty file stops the program."""
    with open(path) as f:
        lines = f.read().split("\n")
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if not numbered:
        fail(f"{path}: empty: no records")
    last = numbered[-1][0]
    return [(n, parse_line(path, n, line, last=(n == last))) for n, line in numbered]


# One line `CLAIM NAME CONFIG [KEY=VALUE ...]` of a claims list: the run NAME of
# claim CLAIM, trained from CONFIG with the overrides (each a `--set KEY=VALUE`;
# split at whitespace, so a value holds none), `line` its line number.
ClaimRun = collections.namedtuple("ClaimRun", "claim name config overrides line")
# A claims list: its runs [ClaimRun] in order, its `#vs CLAIM A B` comparisons
# [(claim, A, B)] and its `#escape CLAIM LOSS` lines {claim: LOSS in nats}.
Claims = collections.namedtuple("Claims", "runs pairs escape")


def read_claims(path):
    """The claims list at `path` (its format: the header of tools/experiments/claims.txt).

    Blank lines and comments (a first word starting with '#') hold no run; of
    the comments, `#vs` and `#escape` are directives, checked here. A line the
    format does not allow stops the program naming the file and line number.
    """
    runs, pairs, escape = [], [], {}
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        fail(f"{path}: cannot read the claims list: {e.strerror}")
    for number, line in enumerate(text.split("\n"), 1):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "#vs":
            if len(parts) != 4:
                fail(f"{path}:{number}: expected '#vs CLAIM A B', got {line.strip()!r}")
            pairs.append(tuple(parts[1:]))
        elif parts[0] == "#escape":
            try:
                loss = float(parts[2]) if len(parts) == 3 else None
            except ValueError:
                loss = None
            if loss is None:
                fail(f"{path}:{number}: expected '#escape CLAIM LOSS' (LOSS in nats), got {line.strip()!r}")
            escape[parts[1]] = loss
        elif parts[0].startswith("#"):
            continue
        elif len(parts) < 3:
            fail(f"{path}:{number}: expected 'CLAIM NAME CONFIG [KEY=VALUE ...]', got {line.strip()!r}")
        else:
            runs.append(ClaimRun(parts[0], parts[1], parts[2], tuple(parts[3:]), number))
    return Claims(runs, pairs, escape)


def read_metrics(path):
    """[(line number, record)] of a metrics.jsonl, each record checked (module comment)."""
    records = read_lines(path)
    for n, r in records:
        split = r.get("split")
        if split not in SPLITS:
            fail(f"{path}:{n}: " + ("no \"split\"" if split is None
                                    else f"split {split!r} is none of {', '.join(SPLITS)}"))
        step = r.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            fail(f"{path}:{n}: \"step\" is {json.dumps(step)}, not a step number")
        for key in ("elapsed_s",) + FIELDS[split]:
            if not is_number(r.get(key)):
                fail(f"{path}:{n}: {split} record's {key!r} is {json.dumps(r.get(key))}, not a finite number"
                     if key in r else f"{path}:{n}: {split} record without {key!r}")
    return records


def metric_of(path, records):
    """The run's metric: ppl for token tasks, accuracy for a classifier (named by its last test record)."""
    n, test = [(n, r) for n, r in records if r["split"] == "test"][-1]
    for metric in ("ppl", "accuracy"):
        if metric in test:
            return metric
    fail(f"{path}:{n}: the test record has neither \"ppl\" nor \"accuracy\"")


def run_summary(run_dir):
    """The finished run's figures (metric scaled: accuracy in %), or None if it is not finished."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.isfile(path):
        return None
    records = read_metrics(path)
    if not any(r["split"] == "test" for _, r in records):
        return None
    metric = metric_of(path, records)
    scale = 1 if metric == "ppl" else 100
    for n, r in records:
        if r["split"] != "train" and not is_number(r.get(metric)):
            fail(f"{path}:{n}: {r['split']} record's {metric!r} is {json.dumps(r.get(metric))}, not a finite number"
                 if metric in r else f"{path}:{n}: {r['split']} record without {metric!r}")
    read_json_file(os.path.join(run_dir, "config.json"), "a kept run's configuration")
    machine = read_json_file(os.path.join(run_dir, "machine.json"), "`keystone info --machine` of a kept run")
    valid = [r for _, r in records if r["split"] == "valid"]
    valid_at = {r["step"]: r[metric] * scale for r in valid}
    best = (min if metric == "ppl" else max)(valid_at.values()) if valid_at else None
    return {
        "metric": metric,
        "test": [r for _, r in records if r["split"] == "test"][-1][metric] * scale,
        "best_valid": best,
        "valid_at": valid_at,  # step -> the validation metric (scaled as "test")
        "valid_loss_at": {r["step"]: r["loss"] for r in valid},  # step -> validation loss (nats)
        "tokens_per_s": statistics.median(r["tokens_per_s"] for _, r in records if r["split"] == "train")
                        if any(r["split"] == "train" for _, r in records) else None,
        "elapsed_s": max(r["elapsed_s"] for _, r in records),
        "gemm_path": str(machine.get("bf16_gemm_path", "?")),
    }


def finished_seeds(runs, claim, name):
    """[(folder name, run_summary)] of NAME's finished seeds in claim CLAIM's folder."""
    folder = os.path.join(runs, f"claim{claim}")
    seeds = []
    if os.path.isdir(folder):
        for entry in sorted(os.listdir(folder)):
            if entry.startswith(name + "-seed") and os.path.isdir(os.path.join(folder, entry)):
                s = run_summary(os.path.join(folder, entry))
                if s:
                    seeds.append((entry, s))
    return seeds


def read_provenance(run_dir):
    """The run's provenance.jsonl records (one per `keystone train` start or resume), or None without the file.

    Each names at least the binary's "commit" (a string), whether its tree was
    "dirty" (a bool) and the "cpu" (a string); older runs predate the file.
    """
    path = os.path.join(run_dir, "provenance.jsonl")
    if not os.path.isfile(path):
        return None
    records = read_lines(path)
    for n, r in records:
        for key, kind, what in (("commit", str, "a string"), ("dirty", bool, "true or false"),
                                ("cpu", str, "a string")):
            if not isinstance(r.get(key), kind):
                fail(f"{path}:{n}: " + (f"{key!r} is {json.dumps(r[key])}, not {what}" if key in r else f"no {key!r}"))
    return [r for _, r in records]
