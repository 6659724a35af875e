"""tools/experiments/page.py — docs/RESULTS.md from its template
(tools/experiments/RESULTS.md.in): the prose is the template's, every figure
of the runs is a placeholder that report.py's Report fills, so the page is
regenerated from docs/results/runs alone:

  python3 tools/experiments/report.py --keystone build/keystone --page tools/experiments/RESULTS.md.in > docs/RESULTS.md

Placeholders, {{KIND ARGS}} (N a run name of claims.txt, A B a `#vs` pair;
prose numbers have one decimal and a true minus sign):
  on a line of their own: table C, steps C S,S,..., analysis C (claim C's tables)
  mean N, valid N (test / best valid mean ± std), n N (seeds), tests N (each seed's test value),
  diff A B (signed), gap A B (unsigned), rel A B (|A − B| in % of B), ci A B (95% interval),
  reading A B, p A B, holm A B, staged A B (the Pocock reading), cost A B (params and FLOPs of A
  against B), loo A B (leave one seed out), ratio A B C D (|A − B| / |C − D|),
  left N ("k of n" seeds off the plateau), fisher A B, escape-range C (thresholds that read the same),
  family (tests in the Holm family), holm-kept, holm-survivors, pocock F (the boundary for a first
  look at F of the information), an N KEY D / anm N KEY D (claim 6: mean ± std / mean, D decimals),
  runs (finished runs), machine (hours, all claims).
An unknown placeholder or name stops it naming the template line.
Not here: the statistics (stats.py), the tables' layout (report.py).
"""
import re
import statistics

import stats
from runs import fail

PLACEHOLDER = re.compile(r"\{\{([^{}]+)\}\}")


def num(x, digits=1, signed=False):
    """x with `digits` decimals and a true minus sign (U+2212), + on request."""
    text = f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
    return text.replace("-", "−")


def interval(lo, hi, digits=1):
    return f"[{num(lo, digits, True)}, {num(hi, digits, True)}]"


def mean_std(values):
    if len(values) == 1:
        return f"{num(values[0])} (one seed)"
    return f"{num(statistics.mean(values))} ± {num(statistics.stdev(values))}"


class Page:
    def __init__(self, report, template):
        self.r, self.template = report, template

    def need(self, where, args, count):
        if len(args) != count:
            fail(f"{where}: expected {count} argument{'s' * (count != 1)}, got {' '.join(args) or 'none'}")
        return args

    def run(self, where, name):
        if name not in self.r.claim_of:
            fail(f"{where}: {name} is no run of the claims file")
        if not self.r.seeds(name):
            fail(f"{where}: {name} has no finished seed")
        return self.r.tests(name)

    def welch(self, where, x, y):
        self.run(where, x), self.run(where, y)
        if not any((v["a"], v["b"]) == (x, y) for v in self.r.comparisons):
            fail(f"{where}: no '#vs CLAIM {x} {y}' line in the claims")
        v = self.r.comparison(x, y)
        if v["welch"] is None:
            fail(f"{where}: {x} against {y} needs two seeds a side")
        return v

    def block(self, where, kind, args):
        if kind == "table":
            return self.r.claim_table(self.need(where, args, 1)[0])[0]
        if kind == "steps":
            claim, steps = self.need(where, args, 2)
            return self.r.steps_table(claim, [int(s) for s in steps.split(",")])
        if kind == "analysis":
            return self.r.analysis_table(self.need(where, args, 1)[0])
        return None

    def inline(self, where, kind, args):
        r = self.r
        if kind in ("mean", "valid", "n", "tests", "left"):
            (name,) = self.need(where, args, 1)
            tests = self.run(where, name)
            if kind == "mean":
                return mean_std(tests)
            if kind == "valid":
                return mean_std([s["best_valid"] for _, s in r.seeds(name) if s["best_valid"] is not None])
            if kind == "n":
                return str(len(tests))
            if kind == "tests":
                return ", ".join(num(t) for t in tests)
            went = sum(step is not None for _, step, _ in r.left(name))
            return f"{went} of {len(tests)}"
        if kind == "cost":
            x, y = self.need(where, args, 2)
            self.run(where, x), self.run(where, y)
            ca, cb = r.cost(x), r.cost(y)
            parts = []
            for key, what in (("params", "parameters"), ("forward_flops_per_token", "FLOPs per token")):
                change = 100 * (ca[key] / cb[key] - 1)
                parts.append(f"{abs(change):.0f}% {'more' if change > 0 else 'fewer'} {what}")
            return " and ".join(parts)
        if kind in ("diff", "gap", "rel", "ci", "reading", "p", "holm", "staged", "loo", "fisher"):
            x, y = self.need(where, args, 2)
            v = self.welch(where, x, y)
            w = v["welch"]
            if kind == "diff":
                return num(w["diff"], 1, True)
            if kind == "gap":
                return num(abs(w["diff"]))
            if kind == "rel":
                return f"{num(100 * abs(w['diff']) / statistics.mean(r.tests(y)))}%"
            if kind == "ci":
                return interval(w["diff"] - w["half"], w["diff"] + w["half"])
            if kind == "reading":
                return v["reading"]
            if kind == "p":
                return f"p = {v['p']:.3f}"
            if kind == "fisher":
                if "fisher" not in v:
                    fail(f"{where}: {x} against {y} is no plateau-escape comparison")
                return f"p = {v['fisher']:.3f}"
            if kind == "holm":
                kept = v["holm"][0] != "not distinguishable"
                return (f"{'kept' if kept else 'not kept'} by Holm across the {r.family} tests, "
                        f"adjusted p {'< 0.001' if v['holm'][1] < 0.0005 else format(v['holm'][1], '.3f')}")
            if kind == "staged":
                if v["staged"] is None:
                    fail(f"{where}: {x} against {y} is no two-stage comparison")
                c, nominal = v["pocock"]
                if v["bimodal"]:
                    return f"p = {v['p']:.3f} against α′ = {nominal:.4f}: {v['staged']}"
                return f"{interval(*v['staged_interval'])} at α′ = {nominal:.4f}: {v['staged']}"
            return self.loo(x, y, v)
        if kind == "ratio":
            a, b, c, d = self.need(where, args, 4)
            first, second = self.welch(where, a, b)["welch"]["diff"], self.welch(where, c, d)["welch"]["diff"]
            return f"{abs(first) / abs(second):.1f}"
        if kind == "escape-range":
            (claim,) = self.need(where, args, 1)
            threshold = r.escape.get(claim)
            if threshold is None:
                fail(f"{where}: claim {claim} has no '#escape' line")
            losses = [loss for c, name in r.rows if c == claim for _, s in r.seeds(name)
                      for loss in s["valid_loss_at"].values()]
            below = max(x for x in losses if x < threshold)
            above = min(x for x in losses if x >= threshold)
            return f"{below:.3f} and {above:.3f}"
        if kind == "family":
            return str(r.family)
        if kind in ("holm-kept", "holm-survivors"):
            directional = [v for v in r.comparisons if v["p"] is not None and v["p"] < stats.ALPHA]
            kept = [v for v in directional if v["holm"][0] != "not distinguishable"]
            if kind == "holm-kept":
                return f"{len(kept)} of the {len(directional)}"
            return ", ".join(f"{v['a']} against {v['b']}" for v in kept) or "none"
        if kind == "pocock":
            (fraction,) = self.need(where, args, 1)
            c, nominal = stats.pocock(float(fraction))
            return f"c = {c:.3f}, α′ = {nominal:.4f}"
        if kind in ("an", "anm"):
            name, key, digits = self.need(where, args, 3)
            rows = r.analysis(r.claim_of.get(name, "?")).get(name)
            values = [row[key] for row in rows or [] if isinstance(row.get(key), (int, float))]
            if not values:
                fail(f"{where}: {name} has no analysed {key!r}")
            d = int(digits)
            mean = f"{statistics.mean(values):.{d}f}".replace("-", "−")
            return mean if kind == "anm" or len(values) < 2 else f"{mean} ± {statistics.stdev(values):.{d}f}"
        if kind == "runs":
            return str(sum(len(r.seeds(name)) for _, name in r.rows))
        if kind == "machine":
            minutes = sum(s["elapsed_s"] for _, name in r.rows for _, s in r.seeds(name)) / 60
            return f"{minutes / 60:.1f}"
        fail(f"{where}: unknown placeholder {{{{{kind}}}}}")

    def loo(self, x, y, v):
        full = v["reading"]
        out = self.r.leave_one_out(x, y)
        changed = [(name, seed, value, w, reading) for name, seed, value, w, reading in out if reading != full]
        text = f"leaving one seed out ({len(out)} ways), {len(out) - len(changed)} keep \"{full}\""
        if changed:
            text += "; " + "; ".join(f"without {name} seed {seed} ({num(value)}) it reads \"{reading}\", "
                                     f"{interval(w['diff'] - w['half'], w['diff'] + w['half'], 2)}"
                                     for name, seed, value, w, reading in changed)
        return text

    def render(self):
        out = []
        with open(self.template) as f:
            for number, line in enumerate(f, 1):
                where = f"{self.template}:{number}"
                whole = PLACEHOLDER.fullmatch(line.strip())
                if whole:
                    kind, *args = whole.group(1).split()
                    lines = self.block(where, kind, args)
                    if lines is not None:
                        out += [x + "\n" for x in lines]
                        continue
                out.append(PLACEHOLDER.sub(lambda m: self.inline(where, *split(m.group(1))), line))
        return "".join(out)


def split(text):
    kind, *args = text.split()
    return kind, args


def render(report, template):
    return Page(report, template).render()
