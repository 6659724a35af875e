"""tests/tools/test_speed_table.py — RESULTS.md's speed table against the raw
runs it is made from: every figure of the table in docs/RESULTS.md
recomputed from tools/experiments/kept_runs/speed/raw.jsonl by code of its
own (no line shared with speed_table.py), so a table edited by hand, or left
behind when the runs change, fails; and speed_table.py on damaged raw files
(each damage one line naming the file and line, exit status 1) and on the
order of a round (the ratio taken within a round, not across rounds).
Run: python3 -m unittest discover -s tests/tools -p 'test_*.py'
Not here: the timing (tools/experiments/speed.py runs keystone bench).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RAW = os.path.join(ROOT, "tools", "experiments", "kept_runs", "speed", "raw.jsonl")
RESULTS = os.path.join(ROOT, "docs", "RESULTS.md")
EXPERIMENTS = os.path.join(ROOT, "tools", "experiments")


def middle(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def recompute(path):
    """{(shape, precision, 'softmax'|'mgk'): ...} rows: (median, min, max) per family and of the ratios."""
    times = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            side = "softmax" if r["family"].startswith("softmax") else "mgk"
            times.setdefault((r["shape"], r["mode"], r["precision"]), {}).setdefault(side, {})[r["round"]] = \
                r["bench"]["step_ms"]
    rows = {}
    for key, sides in times.items():
        rounds = sorted(sides["softmax"])
        soft = [sides["softmax"][i] for i in rounds]
        mgk = [sides["mgk"][i] for i in rounds]
        ratios = [m / s for m, s in zip(mgk, soft)]
        rows[key] = [(middle(v), min(v), max(v)) for v in (soft, mgk, ratios)] + [len(rounds)]
    return rows


NUMBER = re.compile(r"[\d,]+\.\d+")


def numbers(cell):
    return [float(x.replace(",", "")) for x in NUMBER.findall(cell)]


class KeptTable(unittest.TestCase):
    def test_every_figure_of_the_page_is_the_raw_runs(self):
        self.assertTrue(os.path.isfile(RAW), f"{RAW}: the kept speed runs are missing")
        rows = recompute(RAW)
        with open(RESULTS) as f:
            page = f.read()
        header = "| shape | what is timed | precision | rounds | softmax ms | MGK ms | MGK / softmax | reading |"
        self.assertIn(header, page, "docs/RESULTS.md has no speed table")
        body = page.split(header, 1)[1].splitlines()[2:]
        body = body[:next(i for i, line in enumerate(body) if not line.startswith("|"))]
        modes = {"training step": "train", "forward pass": "forward", "decoding 128 tokens": "decode",
                 "attention sublayer, forward + backward": "attention-train",
                 "attention sublayer, forward": "attention-forward"}
        seen = set()
        for line in body:
            cells = [c.strip() for c in line.strip("|").split("|")]
            key = (cells[0], modes[cells[1]], cells[2])
            self.assertIn(key, rows, f"the page's row {key} is in no raw run")
            soft, mgk, ratio, count = rows[key]
            self.assertEqual(int(cells[3]), count, key)
            for cell, want, digits in ((cells[4], soft, 1), (cells[5], mgk, 1), (cells[6], ratio, 2)):
                got = numbers(cell)
                self.assertEqual(got, [round(x, digits) for x in want], f"{key}: {cell}")
            word = "faster" if ratio[2] < 1 else "slower" if ratio[1] > 1 else "no consistent difference"
            self.assertIn(word, cells[7], key)
            seen.add(key)
        self.assertEqual(seen, set(rows), "rows of the raw runs missing from the page")
        self.assertGreaterEqual(min(r[3] for r in rows.values()), 5, "fewer than 5 rounds in a row")


def record(family, rnd, ms, **extra):
    r = {"shape": "s", "mode": "train", "precision": "float32", "family": family, "round": rnd, "commit": "abc",
         "bench": {"step_ms": ms, "cpu": "CPU", "cpu_gemm": "avx512bf16"}}
    r.update(extra)
    return json.dumps(r) + "\n"


def table(text):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(text)
    try:
        code = f"import sys; sys.path.insert(0, {EXPERIMENTS!r}); import speed_table; " \
               f"print('\\n'.join(speed_table.table({f.name!r})))"
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True), f.name
    finally:
        os.unlink(f.name)


class Damage(unittest.TestCase):
    def refused(self, text, words, line=None):
        run, name = table(text)
        self.assertEqual(run.returncode, 1, run.stdout)
        self.assertNotIn("Traceback", run.stderr)
        self.assertIn(name + (f":{line}" if line else ""), run.stderr)
        self.assertIn(words, run.stderr)

    def test_damage(self):
        good = record("softmax-8", 1, 10.0) + record("mgk-4", 1, 9.0)
        self.refused(good + "{not json\n", "not JSON", 3)
        self.refused(good + '{"shape": "s"}\n', "not a speed record", 3)
        self.refused(good.replace("10.0", "-1.0"), "not a positive time", 1)
        self.refused(good + record("softmax-8", 2, 10.0), "timed for one family only")
        self.refused(good + record("softmax-8", 1, 11.0), "timed twice", 3)
        self.refused(good + record("softmax-8", 2, 10.0, commit="def") + record("mgk-4", 2, 9.0), "one binary", 3)
        self.refused(good.replace('"cpu": "CPU"', '"cpu": "other"', 1), "one binary", 2)
        self.refused(good + record("linear-4", 1, 9.0), "3 families", None)
        self.refused("", "no speed runs")

    def test_ratio_within_a_round(self):
        # Round 2 is twice as slow for both: within-round ratios are 0.9 each; across rounds they are not.
        text = "".join(record("softmax-8", r, 10.0 * r) + record("mgk-4", r, 9.0 * r) for r in (1, 2, 3))
        run, _ = table(text)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("| 0.90× (0.90–0.90) | MGK faster |", run.stdout)
        mixed = record("softmax-8", 1, 10.0) + record("mgk-4", 1, 9.0) + record("softmax-8", 2, 10.0) + \
            record("mgk-4", 2, 11.0)
        run, _ = table(mixed)
        self.assertIn("no consistent difference", run.stdout)
        slower = record("softmax-8", 1, 10.0) + record("mgk-4", 1, 12.0)
        self.assertIn("**MGK slower**", table(slower)[0].stdout)


if __name__ == "__main__":
    unittest.main()
