"""tools/experiments/figures.py — the figures of docs/RESULTS.md kept in step
with the runs they draw. The template declares each figure and its runs
(page.py: `{{figure NAME RUN...}}`, `keystone plot --seeds` over the finished
seeds of the runs named; `{{heads-figure NAME}}`, heads_figure.py's
head-count curve), and every SVG written here carries a stamp, an XML
comment after its first line:

  <!-- report.py figure: N runs, sha256 HEX: claim1/a-seed0 claim1/a-seed1 ... -->

naming the finished run folders it drew (relative to tools/experiments/kept_runs) and
a SHA-256 over their names, metrics.jsonl and config.json. A figure is stale
when the finished runs it should draw now differ from its stamp: a seed
finished since it was drawn, one gone, a file changed; one without a stamp
is stale too. The runs' own files decide, never file times (git keeps none).
report.py --page refuses a stale figure, naming it and what changed;
--figures redraws it first.
Not here: the curves (`keystone plot`, tools/figures/plot.cpp; heads_figure.py),
which figure draws which runs (the template).
"""
import hashlib
import os
import re
import subprocess
import tempfile

from runs import fail

STAMP = re.compile(r"<!-- report\.py figure: (\d+) runs, sha256 ([0-9a-f]{64}): ([^<>]*?) -->")


def names(runs_root, dirs):
    """The run folders as a stamp names them: relative to the kept runs' root, in order."""
    return [os.path.relpath(d, runs_root).replace(os.sep, "/") for d in dirs]


def digest(runs_root, dirs):
    """SHA-256 over each folder's name, metrics.jsonl and config.json, in sorted order."""
    h = hashlib.sha256()
    for name, d in sorted(zip(names(runs_root, dirs), dirs)):
        h.update(name.encode() + b"\0")
        for f in ("metrics.jsonl", "config.json"):
            path = os.path.join(d, f)
            with open(path, "rb") as data:
                h.update(hashlib.sha256(data.read()).digest())
    return h.hexdigest()


def stamp(runs_root, dirs):
    listed = names(runs_root, dirs)
    if any("--" in n or "<" in n or ">" in n for n in listed):
        fail(f"a run folder name holds '--', '<' or '>', which an SVG comment cannot: {' '.join(listed)}")
    return f"<!-- report.py figure: {len(dirs)} runs, sha256 {digest(runs_root, dirs)}: {' '.join(listed)} -->"


def read_stamp(path):
    """(sha256, [run folder names]) of the figure's stamp; None without a file or a stamp."""
    try:
        with open(path, errors="replace") as f:
            m = STAMP.search(f.read())
    except OSError:
        return None
    return (m.group(2), m.group(3).split()) if m else None


def staleness(path, runs_root, dirs):
    """None where the figure at `path` drew exactly these runs as they are now, else what differs, in words."""
    if not os.path.isfile(path):
        return "it does not exist"
    got = read_stamp(path)
    if got is None:
        return "it has no stamp of the runs it drew (drawn before report.py stamped figures)"
    sha, drawn = got
    now = names(runs_root, dirs)
    new, gone = [n for n in now if n not in drawn], [n for n in drawn if n not in now]
    if new or gone:
        parts = []
        if new:
            parts.append(f"{len(new)} finished run{'s' * (len(new) != 1)} it does not draw ({', '.join(new)})")
        if gone:
            parts.append(f"{len(gone)} it drew that {'are' if len(gone) != 1 else 'is'} no longer finished here "
                         f"({', '.join(gone)})")
        return "; ".join(parts)
    if sha != digest(runs_root, dirs):
        return "the metrics or config of a run it draws changed since it was drawn"
    return None


def with_stamp(svg, line):
    """The SVG with the stamp as its second line (inside the root element) and no older stamp."""
    svg = re.sub(r"^" + STAMP.pattern + r"\n", "", svg, flags=re.MULTILINE)
    first, _, rest = svg.partition("\n")
    return f"{first}\n{line}\n{rest}"


def write(path, text):
    """Writes `text` to `path` through a temporary file beside it, so a failure leaves the old file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would carry over to the page and its figures
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def draw_plot(keystone, runs_root, dirs, path):
    """`keystone plot --seeds` of the run folders into `path`, stamped."""
    with tempfile.TemporaryDirectory() as out:
        svg = os.path.join(out, "plot.svg")
        try:
            done = subprocess.run([keystone, "plot", "--seeds", "--out", svg, *dirs], capture_output=True, text=True)
        except OSError as e:
            fail(f"{keystone} plot: {e.strerror} (--keystone names the binary that draws the figures)")
        if done.returncode != 0 or not os.path.isfile(svg):
            fail(f"{keystone} plot --seeds --out {path} failed: {(done.stderr or done.stdout).strip()}")
        with open(svg) as f:
            text = f.read()
    write(path, with_stamp(text, stamp(runs_root, dirs)))


def draw_text(text, runs_root, dirs, path):
    """An SVG drawn here (heads_figure.py's) into `path`, stamped."""
    write(path, with_stamp(text, stamp(runs_root, dirs)))
