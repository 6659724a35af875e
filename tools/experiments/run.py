#!/usr/bin/env python3
"""tools/experiments/run.py — trains the runs of tools/experiments/claims.txt,
seed by seed (every run of seed 0 first, so partial results stay balanced),
skipping finished runs and resuming interrupted ones: it may be stopped at
any moment (Ctrl-C or SIGTERM: the current step finishes and is saved) and
started again later.
  python3 tools/experiments/run.py [CLAIM...]      (default: every claim)
Environment (an empty value is the default): SEEDS (default "0 1 2"),
KS_EXPERIMENTS (run folders, default runs/experiments), KS_RESULTS (the
committed results, default tools/experiments/kept_runs), KEYSTONE (the binary, default
build/keystone), CLAIMS (the list, default tools/experiments/claims.txt),
ANALYZE_CLAIMS (claims whose trained models `keystone analyze` reads for
claim 6, default "1 3 5"; " " for none), ANALYZE_FLAGS (default: the analysis
defaults, 8 validation batches). CLAIMS is read from the caller's folder;
the other paths, and the configs the list names, from the repository root.

Two places: a run folder (checkpoints, megabytes, lost with the machine)
and its results (config.json, metrics.jsonl, provenance.jsonl (the commit
and machine of each training session), machine.json from `keystone
info --machine` and, for ANALYZE_CLAIMS, analysis/analysis.json without its
singular values: kilobytes, copied into KS_RESULTS as each run
finishes, to be committed). A run is finished when its results hold the
final test record; sessions on fresh machines therefore skip it. An
unfinished run with a checkpoint is resumed; one without (stopped before its
first checkpoint) is started again by the trainer itself, in the same folder:
nothing here deletes a run folder, so a second runner started by mistake
cannot take a folder from under a trainer (its own trainer finds the folder
locked and fails, naming the lock). Each run's output goes to RUN.log (beside
the run folder RUN); a failure's last lines are also printed.
A run whose overrides hold `init=official` starts from the official MGK
code's initialisation (initial_weights; round 3's stage C) rather than the
binary's own. The claims list is read once, at the start: editing it (or checking out
another commit) while runs train changes nothing in the running queue.
Exit status: 0 when every run is finished, 1 when a run or its analysis
failed (or the claims list is damaged: one line naming its line), 2 without
a keystone binary, 130 when stopped by a signal.
Not here: the claims list's format (runs.py reads it, for report.py too), the
tables and figures (docs/RESULTS.md, made by report.py and `keystone plot`
from the results alone).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runs import read_claims  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def env(name, default):
    """The environment variable, or `default` where it is unset or empty (bash's ${NAME:-default})."""
    return os.environ.get(name) or default


def log(what, path):
    """One line of the runner's log: UTC time, what happened, to which folder."""
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {what} {path}", flush=True)


def has_test(run_dir):
    """Whether the run's metrics.jsonl holds the final test record (the run is finished)."""
    try:
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            return re.search(r'"split": *"test"', f.read()) is not None
    except OSError:
        return False


def compact(src, dst):
    """An analysis.json without the singular values of every head and example.

    They are 95% of its 0.6 MB, and `keystone analyze --compare`, which the
    tables read, needs only their effective ranks.
    """
    with open(src) as f:
        a = json.load(f)
    for site in a["sites"]:
        for example in site.get("rank", {}).get("examples", []):
            for head in example.get("heads", []):
                for spectrum in head.values():
                    if isinstance(spectrum, dict):
                        spectrum.pop("singular_values", None)
    with open(dst, "w") as f:
        json.dump(a, f, indent=1)
        f.write("\n")


class Runner:
    """The queue of one start: its runs, seed by seed, and the trainer now running (for the signals)."""

    def __init__(self, claims, wanted):
        self.claims = claims
        self.wanted = set(wanted)
        self.seeds = env("SEEDS", "0 1 2").split()
        self.root = env("KS_EXPERIMENTS", "runs/experiments")
        self.results = env("KS_RESULTS", "tools/experiments/kept_runs")
        self.analyze_claims = env("ANALYZE_CLAIMS", "1 3 5").split()
        self.analyze_flags = env("ANALYZE_FLAGS", "").split()
        self.ks = env("KEYSTONE", "build/keystone")
        self.stop = False
        self.child = None

    def on_signal(self, signum, frame):
        """SIGINT or SIGTERM: no new run; the running trainer is told to save and exit."""
        self.stop = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)

    def keep(self, claim, run_dir):
        """The finished run's results into KS_RESULTS, analysed first when its claim is in ANALYZE_CLAIMS.

        The analysis needs the checkpoint, which does not outlive the machine.
        """
        kept = os.path.join(self.results, f"claim{claim}", os.path.basename(run_dir))
        analysis = os.path.join(run_dir, "analysis", "analysis.json")
        if claim in self.analyze_claims and not os.path.isfile(analysis):
            log("analyze", run_dir)
            with open(run_dir + ".analysis.log", "w") as out:
                rc = subprocess.run([self.ks, "analyze", "--run", run_dir, *self.analyze_flags],
                                    stdout=out, stderr=subprocess.STDOUT).returncode
            if rc != 0:
                print(f"run.py: keystone analyze --run {run_dir} failed, see {run_dir}.analysis.log", file=sys.stderr)
                return False
        try:
            os.makedirs(kept, exist_ok=True)
            for name in ("config.json", "metrics.jsonl"):
                shutil.copy(os.path.join(run_dir, name), kept)
            # Which binary (commit) on which machine trained each session of the run.
            if os.path.isfile(os.path.join(run_dir, "provenance.jsonl")):
                shutil.copy(os.path.join(run_dir, "provenance.jsonl"), kept)
            # The official init's record (init=official runs): seed, rules, the script's hash.
            if os.path.isfile(os.path.join(run_dir + ".init", "official_init.json")):
                shutil.copy(os.path.join(run_dir + ".init", "official_init.json"), kept)
            # The CPU and bf16 GEMM path that finished it.
            with open(os.path.join(kept, "machine.json"), "w") as out:
                rc = subprocess.run([self.ks, "info", "--machine"], stdout=out).returncode
            if rc != 0:
                print(f"run.py: keystone info --machine failed (exit {rc})", file=sys.stderr)
                return False
            if os.path.isfile(analysis):
                os.makedirs(os.path.join(kept, "analysis"), exist_ok=True)
                compact(analysis, os.path.join(kept, "analysis", "analysis.json"))
        except (OSError, ValueError, KeyError) as e:
            print(f"run.py: keeping {run_dir} in {kept} failed: {e}", file=sys.stderr)
            return False
        log("kept  ", kept)
        return True

    def initial_weights(self, run, seed, run_dir, inits, sets):
        """The folder whose weights a run with `init=official` starts from (None: it failed).

        The pinned binary has no official init (N(0, 0.02²) weights, zero
        biases: tools/experiments/round3/official_init.py), so it trains the
        run's own config for one step into RUN.init, and the script rewrites
        that folder's model tensors from the seed; the run then starts there
        with --init-from (a fresh optimizer). Made once; kept with the run.
        """
        if inits != ["official"]:
            print(f"run.py: {run.name}: unknown init {' '.join(inits)} (expected init=official)", file=sys.stderr)
            return None
        init_dir = run_dir + ".init"
        if os.path.isfile(os.path.join(init_dir, "official_init.json")):
            return init_dir
        if os.path.isdir(init_dir):  # an init stopped before the script ran: made again from the start
            shutil.rmtree(init_dir)
        log("init  ", init_dir)
        cmd = [self.ks, "train", "--config", run.config, "--out", init_dir, "--quiet"]
        for kv in [*sets, "train.steps=1", "train.eval_batches=1", "train.log_every=1"]:
            cmd += ["--set", kv]
        script = os.path.join(ROOT, "tools", "experiments", "round3", "official_init.py")
        with open(init_dir + ".log", "w") as out:
            for step in (cmd, [sys.executable, script, init_dir, str(seed)]):
                rc = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode
                if rc != 0 or self.stop:
                    print(f"run.py: making {init_dir} failed (exit {rc}), see {init_dir}.log", file=sys.stderr)
                    return None
        return init_dir

    def train(self, run, seed, run_dir):
        """Starts or resumes one run and waits for it; its exit status (a stop leaves self.stop set)."""
        if os.path.isfile(os.path.join(run_dir, "latest.safetensors")):
            log("resume", run_dir)
            cmd = [self.ks, "train", "--out", run_dir, "--resume", "--quiet"]
        else:
            # A folder left before its first checkpoint is the trainer's to restart:
            # it does so under the folder's lock, which a trainer still running holds.
            overrides = [o for o in run.overrides if not o.startswith("init=")]
            inits = [o.split("=", 1)[1] for o in run.overrides if o.startswith("init=")]
            sets = [f"seed={seed}", "train.precision=bf16", f"name={run.name}-seed{seed}", *overrides]
            cmd = [self.ks, "train", "--config", run.config, "--out", run_dir, "--quiet"]
            for kv in sets:
                cmd += ["--set", kv]
            if inits:
                init_dir = self.initial_weights(run, seed, run_dir, inits, sets)
                if init_dir is None:
                    return 1
                cmd += ["--init-from", init_dir]
            log("start ", run_dir)
        with open(run_dir + ".log", "a") as out:
            self.child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        if self.stop:  # a signal between the last check and the start, before self.child was set
            self.child.send_signal(signal.SIGTERM)
        rc = self.child.wait()
        self.child = None
        return rc

    def run(self):
        """Every wanted run of every seed, seed by seed; the exit status (module comment)."""
        for seed in self.seeds:
            for run in self.claims.runs:
                if self.wanted and run.claim not in self.wanted:
                    continue
                if self.stop:
                    return 130
                run_dir = os.path.join(self.root, f"claim{run.claim}", f"{run.name}-seed{seed}")
                if has_test(os.path.join(self.results, f"claim{run.claim}", f"{run.name}-seed{seed}")):
                    continue  # finished, results kept
                if has_test(run_dir):  # finished here, not yet kept
                    if not self.keep(run.claim, run_dir):
                        return 1
                    continue
                os.makedirs(os.path.dirname(run_dir), exist_ok=True)
                rc = self.train(run, seed, run_dir)
                if self.stop:
                    # A stop that came as the run ended leaves it finished (kept by the next start), not resumable.
                    if has_test(run_dir):
                        log("finished", run_dir)
                    else:
                        log("stopped", run_dir + " (resumable)")
                    return 130
                if rc != 0:
                    print(f"run.py: {run_dir} failed (exit {rc}), see {run_dir}.log; its last lines:",
                          file=sys.stderr)
                    with open(run_dir + ".log", errors="replace") as f:
                        sys.stderr.write("".join(f.readlines()[-3:]))
                    return 1
                log("finished", run_dir)
                if not self.keep(run.claim, run_dir):
                    return 1
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} every run is finished", flush=True)
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("claim", nargs="*", help="train only these claims' runs (default: every claim)")
    a = p.parse_args()
    # Read once, from the caller's folder, before anything trains.
    claims = read_claims(env("CLAIMS", os.path.join(ROOT, "tools", "experiments", "claims.txt")))
    os.chdir(ROOT)
    runner = Runner(claims, a.claim)
    if not (os.path.isfile(runner.ks) and os.access(runner.ks, os.X_OK)):
        print(f"run.py: {runner.ks} is not an executable keystone binary (build first, or set KEYSTONE)",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, runner.on_signal)
    signal.signal(signal.SIGTERM, runner.on_signal)
    return runner.run()


if __name__ == "__main__":
    sys.exit(main())
