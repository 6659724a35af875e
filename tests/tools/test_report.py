"""tests/tools/test_report.py — tools/experiments/report.py on damaged kept
results: each damage of a run's files stops it with exit status 1 and one
line naming the file (and the line of metrics.jsonl), never a traceback; and
the seeds a row counts are exactly the values its mean is taken over; the
readings (Holm, two-stage, plateau escape); round 3's pre-registration (its
hash printed, a comparison of a round-3 run it does not list refused, its
own Holm family and equivalence interval); and the page's figures (refused
while older than a run they draw, redrawn and stamped by --figures).
A stand-in `keystone` (a shell script printing `keystone info`'s fields) lets
this run without the C++ build. Run: python3 -m unittest discover -s tests/tools -p 'test_*.py'
Not here: the statistics (test_stats.py), the CLI's other paths (test_cli.sh).
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "tools", "experiments", "report.py")
PREREGISTRATION = os.path.join(ROOT, "tools", "experiments", "round3", "PREREGISTRATION.md")

TRAIN = {"split": "train", "step": 1, "elapsed_s": 1.0, "loss": 5.0, "tokens_per_s": 1000.0}
VALID = {"split": "valid", "step": 1, "elapsed_s": 2.0, "loss": 5.0, "ppl": 151.0}
TEST = {"split": "test", "step": 1, "elapsed_s": 3.0, "loss": 5.0, "ppl": 150.0, "checkpoint_step": 1}


def lines(*records):
    return "".join(json.dumps(r) + "\n" for r in records)


class Runs:
    """A temporary runs folder with a claims file and a stand-in keystone."""

    def __init__(self, test):
        folder = tempfile.TemporaryDirectory()
        test.addCleanup(folder.cleanup)
        self.root = folder.name
        self.claims = os.path.join(self.root, "claims.txt")
        self.keystone = os.path.join(self.root, "keystone")
        with open(self.keystone, "w") as f:
            # `keystone plot ... --out FILE DIR...` writes a small SVG naming its run folders; anything
            # else prints `keystone info`'s fields.
            f.write('#!/bin/sh\nif [ "$1" = plot ]; then\n  out=""; prev=""\n'
                    '  for a in "$@"; do [ "$prev" = --out ] && out="$a"; prev="$a"; done\n'
                    '  printf \'<svg xmlns="http://www.w3.org/2000/svg">\\n<text>%s</text>\\n</svg>\\n\' "$*"'
                    ' > "$out"\n'
                    '  exit 0\nfi\n'
                    'echo \'{"params": 1000000, "non_embedding_params": 500000, '
                    '"forward_flops_per_token": 2000000}\'\n')
        os.chmod(self.keystone, 0o755)
        with open(self.claims, "w") as f:
            f.write("1 a x\n1 b x\n#vs 1 a b\n")

    def run(self, name, seed, metrics, config=True, machine=True):
        d = os.path.join(self.root, "runs", "claim1", f"{name}-seed{seed}")
        os.makedirs(d)
        if metrics is not None:
            with open(os.path.join(d, "metrics.jsonl"), "w") as f:
                f.write(metrics)
        if config:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump({"model": {"attention": {"heads": 8}}}, f)
        if machine:
            with open(os.path.join(d, "machine.json"), "w") as f:
                json.dump({"bf16_gemm_path": "amx"}, f)
        return d

    def report(self, *extra):
        return subprocess.run([sys.executable, REPORT, "--runs", os.path.join(self.root, "runs"),
                               "--claims", self.claims, "--keystone", self.keystone, *extra],
                              capture_output=True, text=True)


# (what is damaged, the damaged metrics.jsonl, the line it names, a pattern of the message)
DAMAGES = [
    ("an invalid JSON line", lines(TRAIN) + "{split: valid}\n" + lines(TEST), 2, "not JSON"),
    ("a line that is no object", lines(TRAIN) + "[1, 2]\n" + lines(TEST), 2, "a list, not a JSON object"),
    ("a record without split", lines(TRAIN, {k: v for k, v in VALID.items() if k != "split"}, TEST), 2, "no \"split\""),
    ("an unknown split", lines(TRAIN, dict(VALID, split="dev"), TEST), 2, "split 'dev' is none of"),
    ("a test record without its metric", lines(TRAIN, VALID, {k: v for k, v in TEST.items() if k != "ppl"}), 3,
     "neither \"ppl\" nor \"accuracy\""),
    ("a valid record without the metric", lines(TRAIN, {k: v for k, v in VALID.items() if k != "ppl"}, TEST), 2,
     "valid record without 'ppl'"),
    ("a null test metric", lines(TRAIN, VALID, dict(TEST, ppl=None)), 3, "'ppl' is null, not a finite number"),
    ("a string test metric", lines(TRAIN, VALID, dict(TEST, ppl="150")), 3, "'ppl' is \"150\", not a finite number"),
    ("a boolean metric", lines(TRAIN, dict(VALID, ppl=True), TEST), 2, "'ppl' is true, not a finite number"),
    ("a string step", lines(TRAIN, dict(VALID, step="1"), TEST), 2, "\"step\" is \"1\", not a step number"),
    ("a string tokens/s", lines(dict(TRAIN, tokens_per_s="fast"), VALID, TEST), 1, "'tokens_per_s' is \"fast\""),
    ("a missing elapsed_s", lines({k: v for k, v in TRAIN.items() if k != "elapsed_s"}, VALID, TEST), 1,
     "train record without 'elapsed_s'"),
    ("NaN", lines(TRAIN) + '{"split": "valid", "step": 1, "elapsed_s": 2, "loss": 5, "ppl": NaN}\n' + lines(TEST), 2,
     "NaN is not a number"),
    ("Infinity", lines(TRAIN, VALID) + '{"split": "test", "step": 1, "elapsed_s": 3, "loss": 5, "ppl": Infinity}\n', 3,
     "Infinity is not a number"),
    ("an overflowing number",
     lines(TRAIN, VALID) + '{"split": "test", "step": 1, "elapsed_s": 3, "loss": 5, "ppl": 1e999}\n', 3,
     "'ppl' is Infinity, not a finite number"),
    ("a line nested 100,000 deep (Python's RecursionError)",
     lines(TRAIN) + '{"split": "valid", "x": ' + "[" * 100000 + "]" * 100000 + "}\n" + lines(TEST), 2,
     "nested too deeply"),
    ("a truncated last line", lines(TRAIN, VALID, TEST) + '{"split": "test", "step": 1, "elaps', 4,
     "not JSON.*truncated last line"),
]


class DamagedRuns(unittest.TestCase):
    def check_refused(self, runs, pattern):
        done = runs.report("1")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertRegex(done.stderr, pattern)

    def test_each_damage_of_metrics_is_refused_naming_file_and_line(self):
        for what, metrics, line, pattern in DAMAGES:
            with self.subTest(what):
                runs = Runs(self)
                runs.run("a", 0, lines(TRAIN, VALID, TEST))
                bad = runs.run("a", 1, metrics)
                self.check_refused(runs, f"{bad}/metrics.jsonl:{line}: .*{pattern}")

    def test_an_empty_metrics_file_is_refused(self):
        runs = Runs(self)
        bad = runs.run("a", 0, "")
        self.check_refused(runs, f"{bad}/metrics.jsonl: empty: no records")

    def test_a_finished_run_without_config_or_machine_is_refused(self):
        for missing in ("config", "machine"):
            with self.subTest(missing):
                runs = Runs(self)
                bad = runs.run("a", 0, lines(TRAIN, VALID, TEST), **{missing: False})
                self.check_refused(runs, f"{bad}/{missing}.json: missing")

    def test_a_damaged_machine_json_is_refused(self):
        runs = Runs(self)
        bad = runs.run("a", 0, lines(TRAIN, VALID, TEST))
        with open(os.path.join(bad, "machine.json"), "w") as f:
            f.write('{"bf16_gemm_path": ')
        self.check_refused(runs, f"{bad}/machine.json:1: not JSON")

    def test_a_machine_json_nested_too_deeply_is_refused(self):
        runs = Runs(self)
        bad = runs.run("a", 0, lines(TRAIN, VALID, TEST))
        with open(os.path.join(bad, "machine.json"), "w") as f:
            f.write('{"x": ' + "[" * 100000 + "]" * 100000 + "}")
        self.check_refused(runs, f"{bad}/machine.json: nested too deeply")

    def test_an_unfinished_run_is_missing_not_damaged(self):
        runs = Runs(self)
        runs.run("a", 0, lines(TRAIN, VALID, TEST))
        runs.run("a", 1, lines(TRAIN, VALID))  # no test record yet
        runs.run("a", 2, None)  # not started
        done = runs.report("1")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"\| a \| 1 \| .*150\.0 \(one seed\)")

    def test_the_seeds_counted_are_the_values_averaged(self):
        runs = Runs(self)
        for seed, ppl in enumerate((150.0, 152.0)):
            runs.run("a", seed, lines(TRAIN, dict(VALID, ppl=ppl + 1), dict(TEST, ppl=ppl)))
        runs.run("a", 2, lines(TRAIN, VALID, dict(TEST, ppl=None)))
        self.check_refused(runs, "a-seed2/metrics.jsonl:3: test record's 'ppl' is null")
        os.remove(os.path.join(runs.root, "runs", "claim1", "a-seed2", "metrics.jsonl"))
        done = runs.report("1")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"\| a \| 2 \| .* \| 152\.0 ± 1\.4 \| 151\.0 ± 1\.4 \|")


def finished(ppl, valid_losses=(5.0,), accuracy=None):
    """A finished run's metrics: one validation record per loss (steps 500, 1000, ...), then its test record."""
    metric = {"ppl": ppl} if accuracy is None else {"accuracy": accuracy}
    valid = [dict(VALID, step=500 * (i + 1), loss=loss, **metric) for i, loss in enumerate(valid_losses)]
    for v in valid:
        if accuracy is not None:
            v.pop("ppl")
    test = {k: v for k, v in dict(TEST, **metric).items() if accuracy is None or k != "ppl"}
    return lines(TRAIN, *valid, test)


class Readings(unittest.TestCase):
    def test_holm_and_two_stage_columns(self):
        runs = Runs(self)
        for seed, (a, b) in enumerate([(100, 110), (101, 111), (102, 112), (100.5, 110.5), (101.5, 111.5)]):
            runs.run("a", seed, finished(a))
            runs.run("b", seed, finished(b))
        more = os.path.join(runs.root, "more.txt")
        with open(more, "w") as f:
            f.write("1 a x\n1 b x\n")
        done = runs.report("--more-seeds", more, "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        # Each side's variance 2.5/4, so the standard error is 0.5 and Welch's df 8:
        # 95% half-width 2.306 × 0.5. One test in the family: Holm's adjusted p is
        # the p-value. The two-stage interval is Welch's at Pocock's α′ = 0.0307
        # (looks at 3 and 5 seeds): t_8 at 1 − α′/2 is 2.62, half-width 1.31.
        self.assertRegex(done.stdout, r"\| a \| b \| 5, 5 \| -10\.00 \| \[-11\.15, -8\.85\] \| A better \| < 0\.001 "
                                      r"\| A better \(< 0\.001\) \| \[-11\.31, -8\.69\], A better \|")
        self.assertIn("looks at 3 and 5 seeds, c = 2.161, nominal level α′ = 0.0307", done.stdout)
        done = runs.report("1")  # no more_seeds.txt: no two-stage comparison
        self.assertRegex(done.stdout, r"\| A better \(< 0\.001\) \| — \|")

    def test_escape_reads_the_share_that_left_the_plateau(self):
        runs = Runs(self)
        with open(runs.claims, "a") as f:
            f.write("#escape 1 2.1\n")
        for seed in range(3):
            runs.run("a", seed, finished(None, (2.27, 2.26), accuracy=0.17))
            runs.run("b", seed, finished(None, (2.27, 1.9 if seed else 2.05), accuracy=0.33))
        done = runs.report("1")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("| bimodal: read the plateau escape below | | | |", done.stdout)
        self.assertIn("| a | 3 | 0 | — | — | 17.0 ± 0.0 |", done.stdout)
        self.assertIn("| b | 3 | 3 | 1000, 1000, 1000 | 33.0 ± 0.0 | — |", done.stdout)
        # [[0, 3], [3, 0]]: the observed table and its mirror, 1/20 each.
        self.assertIn("| a | b | 0 of 3, 3 of 3 | 0.100 | not distinguishable | not distinguishable (0.100) | — |",
                      done.stdout)

    def test_escape_where_every_seed_left_is_read_on_welch(self):
        runs = Runs(self)
        with open(runs.claims, "a") as f:
            f.write("#escape 1 2.1\n")
        for seed, (a, b) in enumerate([(0.34, 0.33), (0.35, 0.34), (0.36, 0.35)]):
            runs.run("a", seed, finished(None, (2.27, 1.9), accuracy=a))
            runs.run("b", seed, finished(None, (1.95, 1.9), accuracy=b))
        done = runs.report("1")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("bimodal", done.stdout)
        # Both sides' sd 1 point, so Welch's interval is 1 ± t(4)·√(2/3) = 1 ± 2.267: not distinguishable.
        self.assertRegex(done.stdout, r"\| a \| b \| 3, 3 \| \+1\.00 \| \[-1\.27, \+3\.27\] \| not distinguishable \|")
        self.assertIn("| a | 3 | 3 | 1000, 1000, 1000 | 35.0 ± 1.0 | — |", done.stdout)
        self.assertIn("| b | 3 | 3 | 500, 500, 500 | 34.0 ± 1.0 | — |", done.stdout)
        self.assertIn("| a | b | 3 of 3, 3 of 3 | 1.000 | every seed left: read on Welch above | — | — |", done.stdout)

    def test_a_bad_escape_line_is_refused(self):
        runs = Runs(self)
        with open(runs.claims, "a") as f:
            f.write("#escape 1 low\n")
        runs.run("a", 0, finished(150))
        done = runs.report("1")
        self.assertEqual(done.returncode, 1)
        self.assertIn("claims.txt:4: expected '#escape CLAIM LOSS'", done.stderr)


class Provenance(unittest.TestCase):
    def test_commits_are_named_and_older_runs_not_recorded(self):
        runs = Runs(self)
        runs.run("a", 0, finished(150))
        d = runs.run("a", 1, finished(151))
        with open(os.path.join(d, "provenance.jsonl"), "w") as f:
            f.write(json.dumps({"event": "start", "commit": "0123456789abcdef", "dirty": False, "cpu": "x"}) + "\n")
            f.write(json.dumps({"event": "resume", "commit": "fedcba9876543210", "dirty": True, "cpu": "y"}) + "\n")
        done = runs.report("1")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("Binary commits: 0123456789ab then fedcba987654-dirty (1 run); not recorded for 1 older runs.",
                      done.stdout)
        os.remove(os.path.join(d, "provenance.jsonl"))
        self.assertIn("Binary commit: not recorded (the 2 runs predate provenance.jsonl).", runs.report("1").stdout)

    def test_a_damaged_provenance_is_refused(self):
        runs = Runs(self)
        d = runs.run("a", 0, finished(150))
        with open(os.path.join(d, "provenance.jsonl"), "w") as f:
            f.write(json.dumps({"commit": "abc", "dirty": "no", "cpu": "x"}) + "\n")
        done = runs.report("1")
        self.assertEqual(done.returncode, 1)
        self.assertRegex(done.stderr, r"a-seed0/provenance.jsonl:1: 'dirty' is \"no\", not true or false$")


class Page(unittest.TestCase):
    def page(self, text):
        runs = Runs(self)
        for seed, (a, b) in enumerate([(100, 110), (101, 111), (102, 112)]):
            runs.run("a", seed, finished(a))
            runs.run("b", seed, finished(b))
        template = os.path.join(runs.root, "page.md.in")
        with open(template, "w") as f:
            f.write(text)
        return runs.report("--page", template), template

    def test_placeholders_are_filled_from_the_runs(self):
        done, _ = self.page("a: {{mean a}} ({{n a}} seeds: {{tests a}}), a − b {{diff a b}}, {{ci a b}}, "
                            "{{reading a b}}, {{holm a b}}\n{{table 1}}\nloo: {{loo a b}}\n")
        self.assertEqual(done.returncode, 0, done.stderr)
        first = done.stdout.splitlines()[0]
        self.assertEqual(first, "a: 101.0 ± 1.0 (3 seeds: 100.0, 101.0, 102.0), a − b −10.0, [−12.3, −7.7], "
                                "A better, "
                                "kept by Holm across the 1 tests, adjusted p < 0.001")
        self.assertIn("| a | 3 | 1.00 M (0.50 M) | 2.0 M | 1,000 |", done.stdout)
        # Dropping the middle seed of a side leaves [100, 102] against three: the
        # standard error √(1 + 1/3), Welch's df 1.7 rounded down to 1, t 12.706.
        self.assertIn("loo: leaving one seed out (6 ways), 4 keep \"A better\"; without a seed 1 (101.0) it reads "
                      "\"not distinguishable\", [−24.67, +4.67]; without b seed 1 (111.0)", done.stdout)

    def test_an_unknown_placeholder_names_the_template_line(self):
        done, template = self.page("fine\n{{frobnicate a}}\n")
        self.assertEqual(done.returncode, 1)
        self.assertIn(f"{template}:2: unknown placeholder {{{{frobnicate}}}}", done.stderr)
        done, template = self.page("{{mean nosuch}}\n")
        self.assertIn(f"{template}:1: nosuch is no run of the claims file", done.stderr)


def preregistration(runs, *rows):
    """A pre-registration in the runs' folder whose comparisons table holds `rows` [(id, A, B)]."""
    path = os.path.join(runs.root, "PREREGISTRATION.md")
    with open(path, "w") as f:
        f.write("# Pre-registration\n\nRuns: `x-official`.\n\n| id | A | B | question |\n|---|---|---|---|\n")
        f.writelines(f"| {i} | {a} | {b} | q |\n" for i, a, b in rows)
    return path


class Round3(unittest.TestCase):
    def test_the_hash_of_the_pre_registration_is_printed(self):
        runs = Runs(self)
        runs.run("a", 0, finished(150))
        done = runs.report("1")  # the committed file, found beside report.py
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(PREREGISTRATION, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        self.assertIn(f"Round 3's pre-registration: tools/experiments/round3/PREREGISTRATION.md, SHA-256 {want}; "
                      "its comparisons: R3-1 mgk4x32-tuned against softmax8x32-tuned", done.stdout)
        path = preregistration(runs, ("R3-1", "a", "b"))
        with open(path, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        done = runs.report("--prereg", path, "1")
        self.assertIn(f"SHA-256 {want}; its comparisons: R3-1 a against b.", done.stdout)

    def test_the_page_prints_the_hash_of_the_committed_file(self):
        runs = Runs(self)
        runs.run("a", 0, finished(150))
        template = os.path.join(runs.root, "page.md.in")
        with open(template, "w") as f:
            f.write("Pre-registered: {{prereg}}.\n")
        folder = os.path.join(runs.root, "git")
        os.makedirs(folder)
        path = preregistration(runs, ("R3-1", "a", "b"))
        os.replace(path, os.path.join(folder, "PREREGISTRATION.md"))
        path = os.path.join(folder, "PREREGISTRATION.md")
        with open(path, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        done = runs.report("--prereg", path, "--page", template)  # not in a repository: nothing to compare
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, f"Pre-registered: `{path}`, SHA-256 `{want}`.\n")
        git = ["git", "-C", folder, "-c", "user.name=t", "-c", "user.email=t@t"]
        try:
            subprocess.run(git + ["init", "-q"], check=True)
        except (OSError, subprocess.CalledProcessError):
            self.skipTest("no git")
        subprocess.run(git + ["add", "PREREGISTRATION.md"], check=True)
        subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
        self.assertEqual(runs.report("--prereg", path, "--page", template).returncode, 0)
        with open(path, "a") as f:
            f.write("an edit not committed\n")
        done = runs.report("--prereg", path, "--page", template)
        self.assertEqual(done.returncode, 1)
        self.assertIn("differs from the version git holds: the page prints the hash of the committed file", done.stderr)

    def test_a_comparison_of_a_round3_run_it_does_not_list_is_refused(self):
        for a, b in (("a-tuned", "b"), ("b", "a-tuned-lr2e-3"), ("x-official", "b")):
            with self.subTest(f"{a} against {b}"):
                runs = Runs(self)
                with open(runs.claims, "w") as f:
                    f.write(f"1 {a} x\n1 b x\n1 c-tuned x\n#vs 1 {a} b\n")
                path = preregistration(runs, ("R3-1", "c-tuned", "b"))
                done = runs.report("--prereg", path, "1")
                self.assertEqual(done.returncode, 1, done.stdout)
                self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
                self.assertIn(f"'#vs 1 {a} b' compares a run of round 3, and {path} does not list it "
                              "(its comparisons are R3-1)", done.stderr)

    def test_a_table_without_rows_is_refused(self):
        runs = Runs(self)
        path = os.path.join(runs.root, "empty.md")
        with open(path, "w") as f:
            f.write("# nothing\n")
        done = runs.report("--prereg", path, "1")
        self.assertEqual(done.returncode, 1)
        self.assertIn("no comparisons table", done.stderr)

    def test_listed_comparisons_are_their_own_holm_family_with_the_registered_readings(self):
        runs = Runs(self)
        with open(runs.claims, "w") as f:
            f.write("1 a x\n1 b x\n1 a-tuned x\n1 b-tuned x\n1 c-tuned x\n1 d-tuned x\n"
                    "#vs 1 a b\n#vs 1 a-tuned b-tuned\n#vs 1 c-tuned d-tuned\n")
        for seed, (a, b, c, d) in enumerate([(100, 110, 100.0, 100.05), (101, 111, 100.1, 100.1),
                                            (102, 112, 100.2, 100.15)]):
            for name, ppl in (("a", a), ("b", b), ("a-tuned", a), ("b-tuned", b), ("c-tuned", c), ("d-tuned", d)):
                runs.run(name, seed, finished(ppl))
        path = preregistration(runs, ("R3-1", "a-tuned", "b-tuned"), ("R3-2", "c-tuned", "d-tuned"))
        done = runs.report("--prereg", path, "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        # The page's family holds a against b alone.
        self.assertIn("| Holm, 1 tests | two-stage (Pocock) |", done.stdout)
        self.assertIn("| a | b | 3, 3 | -10.00 | [-12.27, -7.73] | A better | < 0.001 | A better (< 0.001) | — |",
                      done.stdout)
        # Round 3's: two rows (m = 2), so its equivalence interval is the 1 − 2 × 0.05/2 = 95% one.
        # c-tuned against d-tuned: ±0.28 inside ±1.00, equal within 1% though Holm finds no difference.
        self.assertIn("| id | A | B | seeds (A, B) | A − B, test ppl | 95% interval | 95% interval | p "
                      "| Holm, 2 tests | reading |", done.stdout)
        self.assertIn("| R3-1 | a-tuned | b-tuned | 3, 3 | -10.00 | [-12.27, -7.73] | [-12.27, -7.73] | < 0.001 "
                      "| A better (< 0.001) | A better |", done.stdout)
        self.assertIn("| R3-2 | c-tuned | d-tuned | 3, 3 | +0.00 | [-0.28, +0.28] | [-0.28, +0.28] | 1.000 "
                      "| not distinguishable (1.000) | equal within 1% |", done.stdout)
        # With five rows (m = 5) the equivalence interval is the 98% one, wider.
        path = preregistration(runs, ("R3-1", "a-tuned", "b-tuned"), ("R3-2", "c-tuned", "d-tuned"),
                               ("R3-3", "x", "y"), ("R3-4", "x", "z"), ("R3-5", "y", "z"))
        done = runs.report("--prereg", path, "1")
        self.assertIn("| Holm, 5 tests | reading |", done.stdout)
        self.assertIn("| R3-2 | c-tuned | d-tuned | 3, 3 | +0.00 | [-0.28, +0.28] | [-0.45, +0.45] |", done.stdout)


class Figures(unittest.TestCase):
    """A figure of the page is stamped with the runs it drew; a stale one is refused, or redrawn (--figures)."""

    def setUp(self):
        self.runs = Runs(self)
        for seed, (a, b) in enumerate([(100, 110), (101, 111)]):
            self.runs.run("a", seed, finished(a))
            self.runs.run("b", seed, finished(b))
        self.template = os.path.join(self.runs.root, "page.md.in")
        self.figures = os.path.join(self.runs.root, "figures")
        self.svg = os.path.join(self.figures, "f.svg")
        self.write_template("{{figure f a b}}\n")

    def write_template(self, text):
        with open(self.template, "w") as f:
            f.write(text)

    def page(self, *extra):
        return self.runs.report("--figures-dir", self.figures, "--page", self.template, *extra)

    def refused(self, pattern):
        done = self.page()
        self.assertEqual(done.returncode, 1, done.stdout)
        self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
        self.assertRegex(done.stderr, pattern)

    def test_a_missing_figure_is_refused_then_drawn_and_stamped(self):
        self.refused(r"page\.md\.in:1: .*f\.svg is older than the runs it draws: it does not exist; "
                     r"redraw it with report\.py --figures")
        done = self.page("--figures")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "![f: training curves of a, b](results/f.svg)\n")
        with open(self.svg) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines[0].startswith("<svg"))
        self.assertRegex(lines[1], r"^<!-- report\.py figure: 4 runs, sha256 [0-9a-f]{64}: claim1/a-seed0 "
                                   r"claim1/a-seed1 claim1/b-seed0 claim1/b-seed1 -->$")
        self.assertIn("plot --seeds --out", lines[2])
        self.assertEqual(self.page().returncode, 0)  # in step: no --figures needed

    def test_a_figure_without_a_stamp_is_refused(self):
        os.makedirs(self.figures)
        with open(self.svg, "w") as f:
            f.write("<svg>\n</svg>\n")
        self.refused("it has no stamp of the runs it drew")

    def test_a_run_finished_after_the_figure_makes_it_stale(self):
        self.assertEqual(self.page("--figures").returncode, 0)
        self.runs.run("a", 2, finished(102))
        self.refused(r"f\.svg is older than the runs it draws: 1 finished run it does not draw \(claim1/a-seed2\)")
        self.assertEqual(self.page("--figures").returncode, 0)
        with open(self.svg) as f:
            text = f.read()
        self.assertEqual(text.count("report.py figure:"), 1)
        self.assertIn("5 runs", text)
        self.assertEqual(self.page().returncode, 0)

    def test_a_changed_or_unfinished_run_makes_it_stale(self):
        self.assertEqual(self.page("--figures").returncode, 0)
        metrics = os.path.join(self.runs.root, "runs", "claim1", "b-seed1", "metrics.jsonl")
        with open(metrics, "w") as f:
            f.write(finished(111.5))
        self.refused("the metrics or config of a run it draws changed since it was drawn")
        with open(metrics, "w") as f:
            f.write(lines(TRAIN, VALID))  # no test record: no longer finished
        self.refused(r"1 it drew that is no longer finished here \(claim1/b-seed1\)")

    def test_a_figure_linked_by_hand_is_refused(self):
        self.write_template("text\n![f](results/f.svg)\n")
        self.refused(r"page\.md\.in:2: a figure of docs/results written by hand")

    def test_out_writes_the_page_only_when_whole(self):
        out = os.path.join(self.runs.root, "PAGE.md")
        with open(out, "w") as f:
            f.write("old\n")
        done = self.page("--out", out)  # the figure is missing: refused, the old page stays
        self.assertEqual(done.returncode, 1)
        with open(out) as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(self.page("--figures", "--out", out).returncode, 0)
        with open(out) as f:
            self.assertEqual(f.read(), "![f: training curves of a, b](results/f.svg)\n")


class ReadmeQuotesThePage(unittest.TestCase):
    """The results paragraphs that quote docs/RESULTS.md, README.md's short one and docs/configs.md's in full (issue
    52 moved it there): every number in each is on the page, and the size of the Holm family each names is the
    page's (issue 56)."""

    QUOTING = ("README.md", os.path.join("docs", "configs.md"))

    def paragraphs(self):
        found = {}
        for name in self.QUOTING:
            try:
                with open(os.path.join(ROOT, name)) as f:
                    text = f.read()
            except OSError:
                self.skipTest("no " + name)
            paragraphs = [p for p in text.split("\n\n") if p.startswith("Across families at this budget")]
            self.assertEqual(len(paragraphs), 1, name + ": no paragraph starting 'Across families at this budget'")
            found[name] = paragraphs[0]
        return found

    def page(self):
        with open(os.path.join(ROOT, "docs", "RESULTS.md")) as f:
            return f.read().replace("−", "-")

    def test_every_number_of_the_results_paragraph_is_on_the_page(self):
        page = self.page()
        for name, paragraph in self.paragraphs().items():
            paragraph = paragraph.replace("−", "-")
            missing = sorted({n for n in re.findall(r"\d+(?:[.,]\d+)*", paragraph)
                              if not re.search(r"(?<![\d.,])" + re.escape(n) + r"(?![\d]|[.,]\d)", page)})
            self.assertEqual(missing, [], name + ": numbers of its results paragraph not in docs/RESULTS.md")

    def test_the_holm_family_is_the_pages(self):
        # The page's family heads its comparison tables (round 3's has its own, beside it).
        families = set(re.findall(r"\| Holm, (\d+) tests \| two-stage", self.page()))
        for name, paragraph in self.paragraphs().items():
            named = re.findall(r"Holm's\s+correction\s+across\s+the\s+page's\s+(\d+)\s+comparisons", paragraph)
            self.assertEqual(len(named), 1, name + "'s results paragraph names the Holm family once")
            self.assertEqual(families, set(named), name)


if __name__ == "__main__":
    unittest.main()
