#!/usr/bin/env python3
"""tools/experiments/report.py — docs/RESULTS.md and its tables, made from the
results tools/experiments/run.py keeps alone (tools/experiments/kept_runs: each run's
metrics.jsonl, config.json, machine.json, provenance.jsonl where recorded and
analysis/analysis.json, plus `keystone info` for parameters and FLOPs).

  python3 tools/experiments/report.py [--runs tools/experiments/kept_runs] [--claims FILE] [--more-seeds FILE]
                                      [--keystone build/keystone] [--analysis] [CLAIM...]
  python3 tools/experiments/report.py --steps STEP,STEP,... CLAIM...
  python3 tools/experiments/report.py --keystone build/keystone --figures --page tools/experiments/RESULTS.md.in \
                                      --out docs/RESULTS.md     (the page and its figures: one command)

Prints, per claim, a markdown table with one row per run name of claims.txt:
the seeds finished, parameters (all, and without the embedding tables),
forward FLOPs per token, the median training tokens/s of the seeds (noisy
on a shared machine: the bench in docs/performance.md is the speed figure),
the best validation perplexity and the test perplexity of the checkpoint of
lowest validation loss (for a classifier, such as claim 4's ListOps,
accuracy in % instead) as mean ± sample standard deviation over the seeds,
the machine time, and the bf16 GEMM path of the machines that trained them
(machine.json); then the binary commits that trained them (provenance.jsonl,
"not recorded" for runs that predate it).
A run still in progress or not started is counted as missing, never guessed;
a damaged file of a finished run stops the report with one line naming it
(runs.py), so a row's seeds are exactly the values of its means.

After each claim's table come its comparisons, the lines `#vs CLAIM A B` of
claims.txt: A − B of the test metric with Welch's 95% interval over the
seeds (stats.py), read with an equivalence margin of ±1% of B (an
assumption of this page, not a figure of the papers): "A better" or "A
worse" where the interval excludes 0, "equal within 1%" where it lies inside
the margin, else "not distinguishable"; one seed on either side gives no
interval. Beside it: the two-sided p-value; Holm's step-down across every
comparison of claims.txt (the family-wise reading at 0.05); and for a
two-stage comparison (both rows in more_seeds.txt, whose seeds 3 and 4 were
added because three seeds read "not distinguishable") the interval at
Pocock's nominal level for a first look at FIRST_LOOK seeds.
A claim with a line `#escape CLAIM LOSS` has a bimodal outcome (a run leaves
the majority-class plateau or not): a seed has left it at the first
validation evaluation whose loss is below LOSS nats, and a comparison in
which some seed stayed is read on the share of seeds that left (Fisher's
exact test), not on Welch. Where every seed of both rows left, the outcome is
not bimodal: the comparison is read on Welch as any other, and its Fisher
row is printed for the escape rate only (outside the Holm family).

Round 3 (issue 56) is pre-registered in tools/experiments/round3/PREREGISTRATION.md
(--prereg): the tables start with the file's SHA-256 and its comparisons
table (R3-1 ...). A `#vs` line that compares a run of round 3 (a name with a
`-tuned` part, or one the file names: Preregistration) must be a row of that
table, or the report stops naming it. Those rows are their own Holm family
(all the table's rows, a row without two seeds a side counting as p = 1),
printed under the claim's other comparisons as the file reads them: a
difference only where Holm keeps it, else "equal within 1%" where the
(1 − 2α/m) interval (98% for its five) lies inside the margin, else "not
distinguishable"; no second stage.

--analysis (claim 6): the heads of the analysed runs, `keystone analyze
--compare` over a claim's analyses averaged over seeds (the C++ definitions of
tools/analyze/analysis_report.h). --steps: each finished seed's validation metric at
the given steps and its test metric. --page: the template with its
{{...}} placeholders filled from the runs (page.py lists them), to stdout or
--out FILE (written only when whole). The template declares each figure and
the runs it draws; --page refuses to write while a figure does not draw
exactly the finished runs kept now (figures.py: each SVG is stamped with
the runs it drew), and --figures redraws such figures first (`keystone plot
--seeds`, heads_figure.py).
Not here: training (run.py), reading claims.txt (runs.py), the curves (`keystone plot`, heads_figure.py).
"""
import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402
from runs import fail, finished_seeds, read_claims, read_json_file, read_provenance  # noqa: E402

MARGIN = 0.01     # "equal within 1%": the equivalence margin, a share of B's mean
FIRST_LOOK = 3    # seeds per row at a two-stage comparison's first look (run.py's SEEDS "0 1 2")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PREREGISTRATION = os.path.join(HERE, "round3", "PREREGISTRATION.md")
# A run of round 3 by its name: a `-tuned` part (stage B, and stage A's bracket, `-tuned-lr...`);
# the pre-registration's other runs are named in it (Preregistration.names).
ROUND3_NAME = re.compile(r"(^|-)tuned(-|$)")


def reading(diff, half, reference, higher_is_better):
    margin = MARGIN * abs(reference)
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


def p_text(p):
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def shown_path(path):
    """A path as the page prints it: relative to the repository root where it lies inside it."""
    full = os.path.abspath(path)
    return os.path.relpath(full, ROOT) if full.startswith(ROOT + os.sep) else path


class Preregistration:
    """Round 3's pre-registration (tools/experiments/round3/PREREGISTRATION.md): its SHA-256, the
    comparisons its table lists (`| R3-n | A | B | question |`) and the names of its runs.

    A run is of round 3 when its name has a `-tuned` part (ROUND3_NAME) or the file names it (an
    A or B of the table, or a word in backquotes, such as `softmax8x32-official`); a `#vs` line
    that compares a run of round 3 must be a row of the table (Report refuses any other).
    """

    ROW = re.compile(r"^\|\s*(R3-\d+)\s*\|\s*([^|\s]+)\s*\|\s*([^|\s]+)\s*\|")

    def __init__(self, path):
        self.path = path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            fail(f"{path}: cannot read round 3's pre-registration: {e.strerror} (--prereg names it)")
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.shown = shown_path(path)
        text = data.decode("utf-8", errors="replace")
        self.rows = [m.groups() for m in map(self.ROW.match, text.split("\n")) if m]
        if not self.rows:
            fail(f"{path}: no comparisons table (rows '| R3-n | A | B | question |')")
        self.names = {n for _, a, b in self.rows for n in (a, b)} | set(re.findall(r"`([^`\s]+)`", text))

    def is_round3(self, name):
        return name in self.names or ROUND3_NAME.search(name) is not None

    def listed(self, a, b):
        """The id of comparison A against B in the table, or None."""
        return next((i for i, x, y in self.rows if (x, y) == (a, b)), None)

    def uncommitted(self):
        """Whether git holds another version of the file than the one read (None where git cannot tell)."""
        try:
            done = subprocess.run(["git", "status", "--porcelain", "--", os.path.basename(self.path)],
                                  cwd=os.path.dirname(os.path.abspath(self.path)), capture_output=True, text=True)
        except OSError:
            return None
        return bool(done.stdout.strip()) if done.returncode == 0 else None

    def line(self):
        return (f"Round 3's pre-registration: {self.shown}, SHA-256 {self.sha256}; its comparisons: "
                + ", ".join(f"{i} {a} against {b}" for i, a, b in self.rows) + ".")


class Report:
    """The runs of claims.txt, their seeds and every comparison's statistics, read once."""

    margin, first_look = MARGIN, FIRST_LOOK

    @staticmethod
    def reading_of(v, diff, half, reference):
        """The page's reading of an interval diff ± half of comparison v (reading())."""
        return reading(diff, half, reference, v["higher_is_better"])

    def __init__(self, runs, claims, more_seeds, keystone, prereg=PREREGISTRATION):
        self.runs, self.keystone = runs, keystone
        self.prereg = Preregistration(prereg)
        listed = read_claims(claims)
        self.rows = [(r.claim, r.name) for r in listed.runs]
        self.claims = sorted({c for c, _ in self.rows}, key=lambda c: (len(c), c))
        self.claim_of = {}
        for c, name in self.rows:
            if self.claim_of.setdefault(name, c) != c:
                fail(f"{claims}: {name} is a run of claims {self.claim_of[name]} and {c}")
        pairs, self.escape = listed.pairs, listed.escape
        for c, x, y in pairs:
            for n in (x, y):
                if n not in self.claim_of:
                    fail(f"{claims}: '#vs {c} {x} {y}' names {n}, which is no run of the list")
            if (self.prereg.is_round3(x) or self.prereg.is_round3(y)) and not self.prereg.listed(x, y):
                fail(f"{claims}: '#vs {c} {x} {y}' compares a run of round 3, and {shown_path(prereg)} does not "
                     f"list it (its comparisons are {', '.join(i for i, _, _ in self.prereg.rows)}): "
                     "a comparison it does not list is no verdict of round 3")
        self.staged = set()
        if more_seeds and os.path.isfile(more_seeds):
            self.staged = {r.name for r in read_claims(more_seeds).runs}
        self._seeds, self._cost, self._analysis = {}, {}, {}
        self.comparisons = [self._compare(c, x, y) for c, x, y in pairs]
        # Two Holm families: the page's comparisons, and round 3's pre-registered ones (its
        # table's rows all count, so a comparison not yet computable holds p = 1).
        family = [v for v in self.comparisons if v["p"] is not None and not v["r3"]]
        rejected, adjusted = stats.holm([v["p"] for v in family], stats.ALPHA)
        for v, r, adj in zip(family, rejected, adjusted):
            v["holm"] = (v["direction"] if r else "not distinguishable", adj)
        self.family = len(family)
        self.family_r3 = len(self.prereg.rows)
        r3 = [v for v in self.comparisons if v["p"] is not None and v["r3"]]
        rejected, adjusted = stats.holm([v["p"] for v in r3] + [1.0] * (self.family_r3 - len(r3)), stats.ALPHA)
        for v, r, adj in zip(r3, rejected, adjusted):
            v["holm"] = (v["direction"] if r else "not distinguishable", adj)
            v["reading"] = v["holm"][0] if r else v["equivalence"]

    # ---- the runs

    def seeds(self, name):
        """[(folder name, run_summary)] of NAME's finished seeds."""
        if name not in self._seeds:
            self._seeds[name] = finished_seeds(self.runs, self.claim_of[name], name)
        return self._seeds[name]

    def tests(self, name):
        return [s["test"] for _, s in self.seeds(name)]

    def folder(self, name, entry):
        return os.path.join(self.runs, f"claim{self.claim_of[name]}", entry)

    def cost(self, name):
        """`keystone info` of NAME's first finished seed: params, non_embedding_params, forward_flops_per_token."""
        if name not in self._cost:
            config = os.path.join(self.folder(name, self.seeds(name)[0][0]), "config.json")
            out = subprocess.run([self.keystone, "info", "--config", config], capture_output=True, text=True)
            if out.returncode != 0:
                fail(f"keystone info --config {config} failed: {out.stderr.strip()}")
            self._cost[name] = json.loads(out.stdout)
        return self._cost[name]

    def left(self, name):
        """[(seed, step it left the plateau or None, test metric)] under its claim's #escape rule."""
        threshold = self.escape[self.claim_of[name]]
        out = []
        for entry, s in self.seeds(name):
            steps = [step for step, loss in sorted(s["valid_loss_at"].items()) if loss < threshold]
            out.append((entry[len(name) + len("-seed"):], steps[0] if steps else None, s["test"]))
        return out

    # ---- the comparisons

    def _compare(self, claim, x, y):
        a, b = self.tests(x), self.tests(y)
        metric = (self.seeds(y) or self.seeds(x) or [(None, {"metric": "ppl"})])[0][1]["metric"]
        v = {"claim": claim, "a": x, "b": y, "na": len(a), "nb": len(b), "metric": metric,
             "higher_is_better": metric != "ppl", "welch": stats.welch(a, b), "p": None, "holm": None,
             "bimodal": False, "pocock": None, "staged": None, "r3": self.prereg.listed(x, y)}
        w = v["welch"]
        if w is None:
            return v
        if v["r3"]:
            # The pre-registered readings: a difference only under Holm across its table (set in
            # __init__), equivalence where the (1 − 2α/m) interval lies inside the margin; no
            # second stage, no plateau escape.
            v["p"] = w["p"]
            v["direction"] = "A better" if (w["diff"] > 0) == v["higher_is_better"] else "A worse"
            v["level"] = 1 - 2 * stats.ALPHA / len(self.prereg.rows)
            we = stats.welch(a, b, alpha=2 * stats.ALPHA / len(self.prereg.rows))
            v["equivalence_interval"] = (we["diff"] - we["half"], we["diff"] + we["half"])
            margin = MARGIN * abs(statistics.mean(b))
            inside = -margin <= v["equivalence_interval"][0] and v["equivalence_interval"][1] <= margin
            v["equivalence"] = "equal within 1%" if inside else "not distinguishable"
            v["reading"] = v["equivalence"]
            return v
        if claim in self.escape:
            ka, kb = (sum(step is not None for _, step, _ in self.left(n)) for n in (x, y))
            v["left"] = (ka, kb)
            v["fisher"] = stats.fisher_exact([[ka, len(a) - ka], [kb, len(b) - kb]])
            v["bimodal"] = ka < len(a) or kb < len(b)  # read on the escape only where some seed stayed
        v["reading"] = reading(w["diff"], w["half"], statistics.mean(b), v["higher_is_better"])
        staged = x in self.staged and y in self.staged and min(len(a), len(b)) > FIRST_LOOK
        if staged:
            v["pocock"] = stats.pocock(FIRST_LOOK / min(len(a), len(b)), stats.ALPHA)
        if v["bimodal"]:
            ka, kb = v["left"]
            v["p"] = v["fisher"]
            v["direction"] = "A better" if ka / len(a) > kb / len(b) else "A worse"
            if staged:
                v["staged"] = v["direction"] if v["p"] < v["pocock"][1] else "not distinguishable"
        else:
            v["p"] = w["p"]
            v["direction"] = "A better" if (w["diff"] > 0) == v["higher_is_better"] else "A worse"
            if staged:
                w2 = stats.welch(a, b, alpha=v["pocock"][1])
                v["staged_interval"] = (w2["diff"] - w2["half"], w2["diff"] + w2["half"])
                v["staged"] = reading(w2["diff"], w2["half"], statistics.mean(b), v["higher_is_better"])
        return v

    def comparison(self, x, y):
        for v in self.comparisons:
            if (v["a"], v["b"]) == (x, y):
                return v
        fail(f"no '#vs CLAIM {x} {y}' line in the claims")

    def leave_one_out(self, x, y):
        """[(run, seed, its value, Welch without it, reading)] for every seed of either side."""
        v = self.comparison(x, y)
        out = []
        for side, name in ((0, x), (1, y)):
            values = [self.tests(x), self.tests(y)]
            for i, (entry, s) in enumerate(self.seeds(name)):
                rest = [list(values[0]), list(values[1])]
                del rest[side][i]
                w = stats.welch(*rest)
                out.append((name, entry[len(name) + len("-seed"):], s["test"], w,
                            reading(w["diff"], w["half"], statistics.mean(rest[1]), v["higher_is_better"])))
        return out

    # ---- the tables (lists of markdown lines)

    def claim_table(self, claim):
        """(lines, machine minutes) of one claim: its runs, comparisons, plateau escape, provenance."""
        lines, minutes, metric = [], 0.0, "ppl"
        names = [name for c, name in self.rows if c == claim]
        table = []
        for name in names:
            seeds = self.seeds(name)
            if not seeds:
                table.append(f"| {name} | 0 | | | | | | | |")
                continue
            metric = seeds[0][1]["metric"]
            cost = self.cost(name)
            run_minutes = sum(s["elapsed_s"] for _, s in seeds) / 60
            minutes += run_minutes
            speed = [s["tokens_per_s"] for _, s in seeds if s["tokens_per_s"] is not None]
            best = [s["best_valid"] for _, s in seeds if s["best_valid"] is not None]
            table.append(f"| {name} | {len(seeds)} | {cost['params'] / 1e6:.2f} M "
                         f"({cost['non_embedding_params'] / 1e6:.2f} M) "
                         f"| {cost['forward_flops_per_token'] / 1e6:.1f} M "
                         f"| {f'{statistics.median(speed):,.0f}' if speed else '—'} | {mean_std(best, len(seeds))} "
                         f"| {mean_std([s['test'] for _, s in seeds], len(seeds))} | {run_minutes:.0f} min "
                         f"| {' / '.join(sorted({s['gemm_path'] for _, s in seeds}))} |")
        unit = unit_of(metric)
        lines += [f"| run | seeds | params (non-embedding) | FLOPs/token | tokens/s | best valid {unit} | test {unit} "
                  "| machine time | bf16 GEMMs |", "|---|---|---|---|---|---|---|---|---|"] + table
        comparisons = [v for v in self.comparisons if v["claim"] == claim and not v["r3"]]
        if comparisons:
            lines += ["", f"| A | B | seeds (A, B) | A − B, test {unit} | 95% interval | reading | p "
                          f"| Holm, {self.family} tests | two-stage (Pocock) |",
                      "|---|---|---|---|---|---|---|---|---|"]
        for v in comparisons:
            w = v["welch"]
            if w is None:
                lines.append(f"| {v['a']} | {v['b']} | {v['na']}, {v['nb']} | | | needs two seeds a side | | | |")
                continue
            cells = f"| {v['a']} | {v['b']} | {v['na']}, {v['nb']} | {w['diff']:+.2f} " \
                    f"| [{w['diff'] - w['half']:+.2f}, {w['diff'] + w['half']:+.2f}] "
            if v["bimodal"]:
                lines.append(cells + "| bimodal: read the plateau escape below | | | |")
                continue
            staged = "—" if v["staged"] is None else \
                f"[{v['staged_interval'][0]:+.2f}, {v['staged_interval'][1]:+.2f}], {v['staged']}"
            lines.append(cells + f"| {v['reading']} | {p_text(v['p'])} | {v['holm'][0]} ({p_text(v['holm'][1])}) "
                                 f"| {staged} |")
        r3 = [v for v in self.comparisons if v["claim"] == claim and v["r3"]]
        if r3:
            lines += [""] + self.round3_table(r3, unit)
        if claim in self.escape:
            lines += [""] + self.escape_table(claim)
        if any(v["pocock"] for v in comparisons):
            c, nominal = next(v["pocock"] for v in comparisons if v["pocock"])
            lines += ["", f"Two-stage: Pocock's boundary for looks at {FIRST_LOOK} and "
                          f"{min(min(v['na'], v['nb']) for v in comparisons if v['pocock'])} seeds, "
                          f"c = {c:.3f}, nominal level α′ = {nominal:.4f} per look."]
        lines += ["", self.provenance_note(names), "", f"Machine time of the finished runs: {minutes / 60:.1f} h"]
        return lines, minutes

    def round3_table(self, comparisons, unit):
        """Round 3's pre-registered comparisons of one claim, read as the pre-registration says."""
        level = 100 * (1 - 2 * stats.ALPHA / self.family_r3)
        lines = [f"Round 3, pre-registered ({self.prereg.shown}, SHA-256 {self.prereg.sha256[:16]}…): "
                 f"a difference only where Holm across its {self.family_r3} comparisons keeps it, equivalence "
                 f"where the {level:g}% interval lies inside ±1% of B.", "",
                 f"| id | A | B | seeds (A, B) | A − B, test {unit} | 95% interval | {level:g}% interval | p "
                 f"| Holm, {self.family_r3} tests | reading |", "|---|---|---|---|---|---|---|---|---|---|"]
        for v in comparisons:
            w = v["welch"]
            if w is None:
                lines.append(f"| {v['r3']} | {v['a']} | {v['b']} | {v['na']}, {v['nb']} | | | | | "
                             "| needs two seeds a side |")
                continue
            lo, hi = v["equivalence_interval"]
            lines.append(f"| {v['r3']} | {v['a']} | {v['b']} | {v['na']}, {v['nb']} | {w['diff']:+.2f} "
                         f"| [{w['diff'] - w['half']:+.2f}, {w['diff'] + w['half']:+.2f}] | [{lo:+.2f}, {hi:+.2f}] "
                         f"| {p_text(v['p'])} | {v['holm'][0]} ({p_text(v['holm'][1])}) | {v['reading']} |")
        return lines

    def escape_table(self, claim):
        threshold = self.escape[claim]
        lines = [f"Plateau escape (a seed has left the majority-class plateau at the first validation evaluation "
                 f"whose loss is below {threshold:g} nats):", "",
                 "| run | seeds | left the plateau | at step | test accuracy (%) of the seeds that left "
                 "| test accuracy (%) of the seeds that stayed |", "|---|---|---|---|---|---|"]
        for c, name in self.rows:
            if c != claim:
                continue
            got = self.left(name)
            went = [t for _, step, t in got if step is not None]
            stayed = [t for _, step, t in got if step is None]
            steps = ", ".join(str(step) for _, step, _ in got if step is not None) or "—"
            lines.append(f"| {name} | {len(got)} | {len(went)} | {steps} | {mean_std(went, len(went))} "
                         f"| {mean_std(stayed, len(stayed))} |")
        lines += ["", f"| A | B | left (A, B) | Fisher's exact p, two-sided | reading | Holm, {self.family} tests "
                      "| two-stage (Pocock) |", "|---|---|---|---|---|---|---|"]
        for v in self.comparisons:
            if v["claim"] != claim or v["welch"] is None or v["r3"]:
                continue
            ka, kb = v["left"]
            if not v["bimodal"]:  # every seed left: read on Welch above, this row is the escape rate only
                lines.append(f"| {v['a']} | {v['b']} | {ka} of {v['na']}, {kb} of {v['nb']} | {p_text(v['fisher'])} "
                             "| every seed left: read on Welch above | — | — |")
                continue
            direct = v["direction"] if v["p"] < stats.ALPHA else "not distinguishable"
            staged = "—" if v["staged"] is None else \
                f"p {'<' if v['p'] < v['pocock'][1] else '≥'} α′: {v['staged']}"
            lines.append(f"| {v['a']} | {v['b']} | {ka} of {v['na']}, {kb} of {v['nb']} | {p_text(v['p'])} | {direct} "
                         f"| {v['holm'][0]} ({p_text(v['holm'][1])}) | {staged} |")
        return lines

    def provenance_note(self, names):
        """One line: the binary commits that trained these runs' finished seeds (provenance.jsonl)."""
        commits, unrecorded, total = {}, 0, 0
        for name in names:
            for entry, _ in self.seeds(name):
                total += 1
                records = read_provenance(self.folder(name, entry))
                if not records:
                    unrecorded += 1
                    continue
                key = " then ".join(dict.fromkeys(r["commit"][:12] + ("-dirty" if r["dirty"] else "") for r in records))
                commits[key] = commits.get(key, 0) + 1
        if not commits:
            return f"Binary commit: not recorded (the {total} runs predate provenance.jsonl)." if total else \
                   "Binary commit: —."
        text = ", ".join(f"{k} ({n} run{'s' * (n != 1)})" for k, n in sorted(commits.items()))
        return f"Binary commits: {text}" + (f"; not recorded for {unrecorded} older runs." if unrecorded else ".")

    def analysis(self, claim):
        """{name: [compare.json row per analysed seed]} of claim `claim` (keystone analyze --compare)."""
        if claim in self._analysis:
            return self._analysis[claim]
        names = [name for c, name in self.rows if c == claim]
        analysed = {name: [self.folder(name, entry) for entry, _ in self.seeds(name)
                           if os.path.isfile(os.path.join(self.folder(name, entry), "analysis", "analysis.json"))]
                    for name in names}
        dirs = [d for name in names for d in analysed[name]]
        by_run = {}
        if len(dirs) >= 2:  # --compare takes two or more
            with tempfile.TemporaryDirectory() as out:
                done = subprocess.run([self.keystone, "analyze", "--compare", *dirs, "--out", out],
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    fail(f"keystone analyze --compare failed: {done.stderr.strip()}")
                # One row per analysis, in the order given (a row's "run" is
                # where it was trained, not where its results are kept).
                rows = read_json_file(os.path.join(out, "compare.json"), "keystone analyze --compare")["runs"]
                by_run = dict(zip(dirs, rows))
        self._analysis[claim] = {name: [by_run[d] for d in analysed[name] if d in by_run] for name in names}
        return self._analysis[claim]

    def analysis_table(self, claim):
        lines = ["| run | seeds analysed | JS between heads | cosine between heads | effective rank, scores "
                 "| effective rank, attention | heads maskable within 1% |", "|---|---|---|---|---|---|---|"]
        for name, got in self.analysis(claim).items():
            if not got:
                lines.append(f"| {name} | 0 | | | | | |")
                continue
            lines.append(f"| {name} | {len(got)} | {analysis_value(got, 'js', 3)} | {analysis_value(got, 'cosine', 3)} "
                         f"| {analysis_value(got, 'erank_scores', 2)} | {analysis_value(got, 'erank_attention', 2)} "
                         f"| {analysis_value(got, 'maskable', 1)} of {got[0]['total_heads']} |")
        return lines

    def steps_table(self, claim, steps):
        """Claim `claim`'s finished seeds: the validation metric at `steps`, then the test metric."""
        unit, lines = None, []
        for c, name in self.rows:
            if c != claim:
                continue
            for entry, summary in self.seeds(name):
                unit = unit_of(summary["metric"])
                at = summary["valid_at"]
                cells = ", ".join(f"{at[s]:.1f}" if s in at else "—" for s in steps)
                lines.append(f"| {name} seed {entry[len(name) + len('-seed'):]} | {cells} | {summary['test']:.1f} |")
        if unit is None:
            return ["(no finished runs)"]
        return [f"| run | valid {unit} at steps {', '.join(map(str, steps))} | test {unit} |", "|---|---|---|"] + lines


def analysis_value(rows, key, digits):
    values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (one seed)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="tools/experiments/kept_runs")
    p.add_argument("--claims", default="tools/experiments/claims.txt")
    p.add_argument("--more-seeds", default="tools/experiments/more_seeds.txt",
                   help="the rows given seeds 3 and 4 after a first look (two-stage comparisons)")
    p.add_argument("--keystone", default="build/keystone")
    p.add_argument("--analysis", action="store_true", help="claim 6: the analysed runs' heads, over seeds")
    p.add_argument("--steps", help="STEP,STEP,...: each seed's validation metric at these steps")
    p.add_argument("--page", metavar="TEMPLATE", help="print the template with its placeholders filled")
    p.add_argument("--out", metavar="FILE", help="with --page: write the page to FILE (only once it is whole)")
    p.add_argument("--figures", action="store_true",
                   help="with --page: redraw each figure the template declares whose runs changed since it was drawn")
    p.add_argument("--figures-dir", default="docs/results", help="where the page's results/*.svg figures are")
    p.add_argument("--prereg", default=PREREGISTRATION, help="round 3's pre-registration")
    p.add_argument("claim", nargs="*")
    a = p.parse_args()
    if a.steps:
        try:
            steps = [int(x) for x in a.steps.split(",")]
        except ValueError:
            fail(f"--steps {a.steps}: expected steps separated by commas, e.g. 1500,2000")
        if not a.claim:
            fail("--steps needs the claims to tabulate, e.g. --steps 1500,2000 4")
    if (a.out or a.figures) and not a.page:
        fail("--out and --figures go with --page TEMPLATE")
    r = Report(a.runs, a.claims, a.more_seeds, a.keystone, a.prereg)
    if a.page:
        import figures
        import page
        text = page.render(r, a.page, a.figures_dir, a.figures)
        if a.out:
            figures.write(a.out, text)
        else:
            sys.stdout.write(text)
        return
    if a.steps:
        for claim in a.claim:
            print(f"\n### Claim {claim}: validation at steps {', '.join(map(str, steps))}\n")
            print("\n".join(r.steps_table(claim, steps)))
        return
    if a.analysis:
        for claim in a.claim or ["1", "5"]:
            print(f"\n### Claim {claim}: heads (claim 6)\n")
            print("\n".join(r.analysis_table(claim)))
        return
    print(r.prereg.line())
    total, printed = 0.0, 0
    for claim in r.claims:
        if a.claim and claim not in a.claim:
            continue
        lines, minutes = r.claim_table(claim)
        total, printed = total + minutes, printed + 1
        print(f"\n### Claim {claim}\n")
        print("\n".join(lines))
    if printed > 1:
        print(f"\nMachine time of the finished runs of these {printed} claims: {total / 60:.1f} h")


if __name__ == "__main__":
    main()
