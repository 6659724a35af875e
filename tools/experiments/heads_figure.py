#!/usr/bin/env python3
"""tools/experiments/heads_figure.py — claim 3's head-count curve for
docs/RESULTS.md: test perplexity against the number of heads h at d = 256,
one curve with the standard head size p = d/h and one with a fixed p = 32,
each point the mean over the finished seeds with a bar of ± one sample
standard deviation, drawn from the kept results alone (tools/experiments/kept_runs).

  python3 tools/experiments/heads_figure.py [--runs tools/experiments/kept_runs] [--out docs/results/claim3_heads.svg]

The points are the runs of tools/experiments/claims.txt named in CURVES
(h = 8 is claim 1's softmax8x32 on both curves, where d/h = 32; fixed h = 4 is
claim 1's fixed4x32); h is read from each run's config.json. A point with no
finished seed is left out and named on stderr, never guessed. report.py
--figures draws it through draw() and stamps it (figures.py).
Not here: the tables (report.py), the training curves (`keystone plot`).
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runs import run_summary  # noqa: E402  (the same finished-run rule as the tables)

# (legend, colour, [(claim, run name), ...]) in order of h.
CURVES = [
    ("p = d/h (softmax)", "#1f77b4",
     [("3", "h1-softmax"), ("3", "h2-softmax"), ("3", "h4-softmax"), ("1", "softmax8x32"), ("3", "h16-softmax")]),
    ("p = 32 (fixed head size)", "#d62728",
     [("3", "h1-fixed32"), ("3", "h2-fixed32"), ("1", "fixed4x32"), ("1", "softmax8x32"), ("3", "h16-fixed32")]),
]


def point(runs, claim, name):
    """(h, mean, std or None, seeds) over the finished seeds of one run name, or None."""
    folder = os.path.join(runs, f"claim{claim}")
    if not os.path.isdir(folder):
        return None
    tests, heads = [], None
    for entry in sorted(os.listdir(folder)):
        run = os.path.join(folder, entry)
        if not entry.startswith(name + "-seed") or not os.path.isdir(run):
            continue
        s = run_summary(run)
        if not s:
            continue
        with open(os.path.join(run, "config.json")) as f:
            h = json.load(f)["model"]["attention"]["heads"]
        if heads is not None and h != heads:
            sys.exit(f"heads_figure.py: {run}: {h} heads, but the other seeds of {name} have {heads}")
        heads = h
        tests.append(s["test"])
    if not tests:
        return None
    return heads, statistics.mean(tests), statistics.stdev(tests) if len(tests) > 1 else None, len(tests)


def svg(curves, title):
    width, height, left, right, top, bottom = 640, 420, 70, 190, 40, 50
    ys = [m + (s or 0) for _, _, pts in curves for _, m, s, _ in pts] + \
         [m - (s or 0) for _, _, pts in curves for _, m, s, _ in pts]
    lo, hi = min(ys), max(ys)
    pad = max((hi - lo) * 0.08, 0.5)
    lo, hi = lo - pad, hi + pad
    xs = [h for _, _, pts in curves for h, _, _, _ in pts]
    x_lo, x_hi = math.log2(min(xs)), max(math.log2(max(xs)), math.log2(min(xs)) + 1)

    def px(h):
        return left + (math.log2(h) - x_lo) / (x_hi - x_lo) * (width - left - right)

    def py(v):
        return top + (hi - v) / (hi - lo) * (height - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="14">{title}</text>',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>']
    h = 2 ** math.floor(x_lo)
    while h <= 2 ** x_hi:
        out.append(f'<text x="{px(h):.1f}" y="{height - bottom + 16}" text-anchor="middle">{h}</text>')
        h *= 2
    out.append(f'<text x="{(left + width - right) / 2:.1f}" y="{height - 12}" text-anchor="middle">heads h (d = 256)</text>')
    for i in range(6):
        v = lo + (hi - lo) * i / 5
        out.append(f'<line x1="{left - 4}" y1="{py(v):.1f}" x2="{width - right}" y2="{py(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    out.append(f'<text x="16" y="{(top + height - bottom) / 2:.1f}" transform="rotate(-90 16 {(top + height - bottom) / 2:.1f})" '
               f'text-anchor="middle">test perplexity (mean ± std over seeds)</text>')
    for n, (legend, colour, pts) in enumerate(curves):
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(h):.1f},{py(m):.1f}" for i, (h, m, _, _) in enumerate(pts))
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for h, m, s, seeds in pts:
            if s is not None:
                out.append(f'<line x1="{px(h):.1f}" y1="{py(m - s):.1f}" x2="{px(h):.1f}" y2="{py(m + s):.1f}" '
                           f'stroke="{colour}" stroke-width="1.5"/>')
            out.append(f'<circle cx="{px(h):.1f}" cy="{py(m):.1f}" r="4" fill="{colour}">'
                       f'<title>h {h}: {m:.2f}{f" ± {s:.2f}" if s is not None else ""} ({seeds} seed{"s" if seeds > 1 else ""})</title></circle>')
        y = top + 10 + 22 * n
        out.append(f'<line x1="{width - right + 12}" y1="{y}" x2="{width - right + 36}" y2="{y}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 42}" y="{y + 4}">{legend}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def runs_drawn():
    """[(claim, run name)] of every point, each once, in the order of CURVES."""
    return list(dict.fromkeys(pair for _, _, names in CURVES for pair in names))


def draw(runs):
    """(the SVG, its curves [(legend, colour, points)], [(claim, name)] of the points left out); None without any."""
    curves, missing = [], []
    for legend, colour, names in CURVES:
        pts = []
        for claim, name in names:
            got = point(runs, claim, name)
            if got is None:
                missing.append((claim, name))
            else:
                pts.append(got)
        if pts:
            curves.append((legend, colour, pts))
    if not curves:
        return None
    return svg(curves, "Claim 3: the head-count curve (Brown LM)"), curves, list(dict.fromkeys(missing))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="tools/experiments/kept_runs")
    p.add_argument("--out", default="docs/results/claim3_heads.svg")
    a = p.parse_args()
    drawn = draw(a.runs)
    if drawn is None:
        sys.exit(f"heads_figure.py: no finished run of the head-count curve under {a.runs}")
    text, curves, missing = drawn
    for claim, name in missing:
        print(f"heads_figure.py: no finished seed of claim {claim}'s {name}: left out", file=sys.stderr)
    with open(a.out, "w") as f:
        f.write(text)
    for legend, _, pts in curves:
        print(f"{legend}: " + ", ".join(f"h {h} {m:.1f}{f' ± {s:.1f}' if s is not None else ''} ({n})" for h, m, s, n in pts))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
