"""tools/experiments/page.py — docs/RESULTS.md from its template
(tools/experiments/RESULTS.md.in): the prose is the template's, every figure
of the runs is a placeholder that report.py's Report fills, so the page is
regenerated from tools/experiments/kept_runs alone:

  python3 tools/experiments/report.py --keystone build/keystone --figures --page tools/experiments/RESULTS.md.in \
      --out docs/RESULTS.md

Placeholders, {{KIND ARGS}} (N a run name of claims.txt, A B a `#vs` pair;
prose numbers have one decimal and a true minus sign):
  on a line of their own: table C, steps C S,S,..., analysis C (claim C's tables);
  figure NAME N... (the image results/NAME.svg, `keystone plot --seeds` of the runs N...),
  heads-figure NAME (heads_figure.py's curve): each checked against its runs (figures.py)
  mean N, valid N (test / best valid mean ± std), n N (seeds), tests N (each seed's test value),
  sd N (sample std of the tests, 2 decimals), spread N (max − min of the tests),
  diff A B (signed), gap A B (unsigned), rel A B (|A − B| in % of B), ci A B (95% interval),
  mgap N M (|mean N − mean M| of any two runs, no interval),
  reading A B, p A B, holm A B, staged A B (the Pocock reading), cost A B (params and FLOPs of A
  against B), loo A B (leave one seed out), ratio A B C D (|A − B| / |C − D|),
  margin B (±1% of B's mean), clearance A B (how far the 95% interval lies inside the margin),
  first A B (reading and interval over the first-look seeds), ci-spread A B C (the interval with
  B's standard deviation taken from run C), ci-equiv A B (the equivalence interval corrected for
  the family, 1 − 2α/m, and its reading),
  left N... ("k of n" seeds off the plateau, several runs summed), fisher A B, escape-range C
  (thresholds that read the same), family (tests in the Holm family), holm-kept, holm-survivors,
  pocock F (the boundary for a first look at F of the information),
  an N KEY D / anm N KEY D (claim 6: mean ± std / mean, D decimals),
  runs (finished runs), machine (hours, all claims), minutes [N...] (the range of the runs'
  machine minutes; of all runs with their median), dates N... (the days provenance.jsonl
  records), binary N... (the commits that trained them),
  prereg (round 3's pre-registration and its SHA-256; refused while git holds another version),
  family-r3 (its comparisons), r3-level (its equivalence interval), r3-compared (how many are here),
  speed (on a line of its own: speed_table.py's table of kept_runs/speed/raw.jsonl), speed-ratio
  SHAPE MODE PRECISION (one row's median MGK / softmax ratio).
An unknown placeholder or name stops it naming the template line, and so does an image of
results/ written by hand (a figure nothing checks).
Not here: the statistics (stats.py), the tables' layout (report.py), the stamps (figures.py).
"""
import math
import os
import re
import statistics

import figures
import heads_figure
import speed_table
import stats
from runs import fail, read_provenance

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


# An image of docs/results/ written into the template by hand: report.py could not check it against its runs.
PLAIN_FIGURE = re.compile(r"!\[[^\]]*\]\(results/[^)]*\.svg\)")


class Page:
    def __init__(self, report, template, figures_dir="docs/results", redraw=False):
        self.r, self.template = report, template
        self.figures_dir, self.redraw = figures_dir, redraw

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
        if kind in ("figure", "heads-figure"):
            return [self.figure(where, kind, args)]
        if kind == "speed":
            self.need(where, args, 0)
            return speed_table.table(self.speed_runs())
        return None

    def speed_runs(self):
        return os.path.join(self.r.runs, "speed", "raw.jsonl")

    def figure(self, where, kind, args):
        """The image line of a figure, after checking it against its runs (or redrawing it, --figures)."""
        if kind == "figure":
            if len(args) < 2:
                fail(f"{where}: expected {{{{figure NAME RUN...}}}}, got {' '.join(args) or 'none'}")
            name, shown = args[0], args[1:]
        else:
            name, shown = self.need(where, args, 1)[0], None
            pairs = heads_figure.runs_drawn()
            for claim, run in pairs:
                if self.r.claim_of.get(run) != claim:
                    fail(f"{where}: heads_figure.py draws claim {claim}'s {run}, which is no run of claim {claim} "
                         "in the claims file")
            shown = [run for _, run in pairs]
        for run in shown:
            self.run(where, run)
        dirs = [self.r.folder(run, entry) for run in shown for entry, _ in self.r.seeds(run)]
        path = os.path.join(self.figures_dir, name + ".svg")
        stale = figures.staleness(path, self.r.runs, dirs)
        if stale and self.redraw:
            if kind == "figure":
                figures.draw_plot(self.r.keystone, self.r.runs, dirs, path)
            else:
                figures.draw_text(heads_figure.draw(self.r.runs)[0], self.r.runs, dirs, path)
        elif stale:
            fail(f"{where}: {path} is older than the runs it draws: {stale}; redraw it with report.py --figures")
        what = "the head-count curve" if kind == "heads-figure" else "training curves of " + ", ".join(shown)
        return f"![{name}: {what}](results/{name}.svg)"

    def inline(self, where, kind, args):
        r = self.r
        if kind == "left" and len(args) > 1:  # several runs: their seeds together
            seeds = [len(self.run(where, name)) for name in args]
            went = sum(step is not None for name in args for _, step, _ in r.left(name))
            return f"{went} of {sum(seeds)}"
        if kind in ("mean", "valid", "n", "tests", "left", "spread", "sd"):
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
            if kind == "spread":
                return num(max(tests) - min(tests))
            if kind == "sd":
                if len(tests) < 2:
                    fail(f"{where}: {name} has one seed, no standard deviation")
                return num(statistics.stdev(tests), 2)
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
                return (f"{'kept' if kept else 'not kept'} by Holm across the "
                        f"{r.family_r3 if v['r3'] else r.family} tests, "
                        f"adjusted p {'< 0.001' if v['holm'][1] < 0.0005 else format(v['holm'][1], '.3f')}")
            if kind == "staged":
                if v["staged"] is None:
                    fail(f"{where}: {x} against {y} is no two-stage comparison")
                c, nominal = v["pocock"]
                if v["bimodal"]:
                    return f"p = {v['p']:.3f} against α′ = {nominal:.4f}: {v['staged']}"
                return f"{interval(*v['staged_interval'])} at α′ = {nominal:.4f}: {v['staged']}"
            return self.loo(x, y, v)
        if kind == "mgap":  # two runs' means, with no comparison (no interval)
            x, y = self.need(where, args, 2)
            return num(abs(statistics.mean(self.run(where, x)) - statistics.mean(self.run(where, y))))
        if kind in ("margin", "clearance", "ci-equiv", "first", "ci-spread"):
            return self.equivalence(where, kind, args)
        if kind == "minutes":
            names = args or [name for _, name in r.rows]
            for name in args:
                self.run(where, name)
            minutes = [s["elapsed_s"] / 60 for name in names for _, s in r.seeds(name)]
            if not minutes:
                fail(f"{where}: no finished run")
            text = f"{min(minutes):.0f}–{max(minutes):.0f} minutes"
            return text if args else f"{text} (median {statistics.median(minutes):.0f})"
        if kind == "dates":  # the days their training started, from provenance.jsonl
            days = set()
            for name in args:
                self.run(where, name)
                for entry, _ in r.seeds(name):
                    days |= {str(rec.get("time", ""))[:10] for rec in read_provenance(r.folder(name, entry)) or []}
            days.discard("")
            if not days:
                fail(f"{where}: no provenance.jsonl of {' '.join(args)} records a time")
            return min(days) if len(days) == 1 else f"{min(days)} to {max(days)}"
        if kind == "binary":
            for name in args:
                self.run(where, name)
            note = r.provenance_note(args)
            return note.split(": ", 1)[1].rstrip(".") if ": " in note else note
        if kind == "prereg":
            self.need(where, args, 0)
            p = r.prereg
            if p.uncommitted():
                fail(f"{where}: {p.path} differs from the version git holds: the page prints the hash of "
                     "the committed file, so commit it first")
            return f"`{p.shown}`, SHA-256 `{p.sha256}`"
        if kind == "family-r3":
            return str(r.family_r3)
        if kind == "r3-level":
            return f"{100 * (1 - 2 * stats.ALPHA / r.family_r3):g}%"
        if kind == "r3-compared":
            k = sum(1 for v in r.comparisons if v["r3"])
            return (f"{'none' if k == 0 else k} of its {r.family_r3} comparisons "
                    f"{'is' if k <= 1 else 'are'}")
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
            directional = [v for v in r.comparisons if v["p"] is not None and v["p"] < stats.ALPHA and not v["r3"]]
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
        if kind == "speed-ratio":
            return speed_table.ratio(self.speed_runs(), *self.need(where, args, 3))
        if kind == "runs":
            return str(sum(len(r.seeds(name)) for _, name in r.rows))
        if kind == "machine":
            minutes = sum(s["elapsed_s"] for _, name in r.rows for _, s in r.seeds(name)) / 60
            return f"{minutes / 60:.1f}"
        fail(f"{where}: unknown placeholder {{{{{kind}}}}}")

    def equivalence(self, where, kind, args):
        """The equivalence placeholders: how far an "equal within 1%" reading carries."""
        r = self.r
        if kind == "margin":
            (y,) = self.need(where, args, 1)
            return f"±{num(r.margin * statistics.mean(self.run(where, y)))}"
        if kind == "ci-spread":
            x, y, z = self.need(where, args, 3)
            v = self.welch(where, x, y)
            a, b, spread = r.tests(x), r.tests(y), statistics.stdev(self.run(where, z))
            # B's mean and seeds with C's sample standard deviation: Welch's interval as stats.welch computes it.
            va, vb = statistics.variance(a) / len(a), spread ** 2 / len(b)
            df = int((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)))
            t = 1.960 if df >= 31 else stats.T975[max(df, 1) - 1]
            diff, half = statistics.mean(a) - statistics.mean(b), t * math.sqrt(va + vb)
            return f"{interval(diff - half, diff + half)}: {r.reading_of(v, diff, half, statistics.mean(b))}"
        x, y = self.need(where, args, 2)
        v = self.welch(where, x, y)
        w, ref = v["welch"], statistics.mean(r.tests(y))
        if kind == "clearance":
            gap = r.margin * ref - max(abs(w["diff"] - w["half"]), abs(w["diff"] + w["half"]))
            return num(gap, 2)
        if kind == "ci-equiv":  # the interval of two one-sided tests at α/m each, m the page's family
            alpha = 2 * stats.ALPHA / r.family
            we = stats.welch(r.tests(x), r.tests(y), alpha=alpha)
            lo, hi = we["diff"] - we["half"], we["diff"] + we["half"]
            inside = -r.margin * ref <= lo and hi <= r.margin * ref
            level = f"the {100 * (1 - alpha):.1f}% interval (1 − 2 × {stats.ALPHA:g}/{r.family})"
            return f"{interval(lo, hi)}, {level}: {'equal within 1%' if inside else 'equivalence not shown'}"
        # first: the reading at the first look, seeds 0 to FIRST_LOOK − 1 of each side
        a, b = r.tests(x)[:r.first_look], r.tests(y)[:r.first_look]
        w = stats.welch(a, b)
        return (f"\"{r.reading_of(v, w['diff'], w['half'], statistics.mean(b))}\", "
                f"{interval(w['diff'] - w['half'], w['diff'] + w['half'])}")

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
                if PLAIN_FIGURE.search(line):
                    fail(f"{where}: a figure of docs/results written by hand; declare it as {{{{figure NAME RUN...}}}} "
                         "so that report.py checks it against its runs")
                out.append(PLACEHOLDER.sub(lambda m: self.inline(where, *split(m.group(1))), line))
        return "".join(out)


def split(text):
    kind, *args = text.split()
    return kind, args


def render(report, template, figures_dir="docs/results", redraw=False):
    return Page(report, template, figures_dir, redraw).render()
