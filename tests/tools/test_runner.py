"""tests/tools/test_runner.py — tools/experiments/run.py against a stand-in
keystone (a Python script that records each call, writes a run's files and
can fail, or wait until told to go or signalled): the queue's order (every
run of seed 0 first), finished runs skipped, unfinished ones resumed in their
folder, the results kept as each run finishes (analysis without singular
values), SIGTERM and SIGINT passed on with no run started after, the claims
list read once at the start, claim filters, a damaged claims line named with
its line number, a failing run's exit status and last lines.
Every check works in its own temporary folder with its own stand-in: it never
signals a process it did not start.
Run: python3 -m unittest discover -s tests/tools -p 'test_*.py'
Not here: run.py with the real keystone (test_cli.sh: a real resume, analysis
and the lock of a run folder), the claims list's directives (test_report.py).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "tools", "experiments", "run.py")

# The stand-in keystone. FAKE_CALLS: the file each call appends its arguments
# to (one JSON line); FAKE_FAIL / FAKE_HANG: run folder names (NAME-seedS,
# comma-separated) whose train fails (exit 3 after five lines), or waits, its
# checkpoint written, until the file FAKE_GO exists or a signal comes (then it
# saves and exits 0, as the trainer does, leaving the run unfinished).
FAKE = r'''#!{python}
import json, os, signal, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_CALLS"], "a") as f:
    f.write(json.dumps(args) + "\n")
def opt(name):
    return args[args.index(name) + 1] if name in args else None
if args[:2] == ["info", "--machine"]:
    print(json.dumps({{"bf16_gemm_path": "amx"}}))
elif args[0] == "analyze":
    out = os.path.join(opt("--run"), "analysis")
    os.makedirs(out, exist_ok=True)
    spectrum = {{"effective_rank": 2.5, "singular_values": [3.0, 2.0, 1.0]}}
    with open(os.path.join(out, "analysis.json"), "w") as f:
        json.dump({{"sites": [{{"rank": {{"examples": [{{"heads": [{{"scores": spectrum}}]}}]}}}}]}}, f)
elif args[0] == "train":
    out = opt("--out")
    name = os.path.basename(out)
    os.makedirs(out, exist_ok=True)
    if "--resume" not in args:
        sets = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--set")
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump({{"config": opt("--config"), "set": sets}}, f)
    with open(os.path.join(out, "provenance.jsonl"), "a") as f:
        f.write(json.dumps({{"commit": "fake", "dirty": False, "cpu": "fake"}}) + "\n")
    if name in os.environ.get("FAKE_FAIL", "").split(","):
        for i in range(1, 6):
            print(f"fake line {{i}}")
        sys.exit(3)
    if name in os.environ.get("FAKE_HANG", "").split(","):
        stopped = []
        signal.signal(signal.SIGTERM, lambda s, f: stopped.append("TERM"))
        signal.signal(signal.SIGINT, lambda s, f: stopped.append("INT"))
        open(os.path.join(out, "latest.safetensors"), "w").close()
        open(os.path.join(out, "started"), "w").close()
        while not stopped and not os.path.exists(os.environ.get("FAKE_GO", "/nonexistent")):
            time.sleep(0.01)
        if stopped:
            with open(os.path.join(out, "signalled"), "w") as f:
                f.write(" ".join(stopped))
            sys.exit(0)
    with open(os.path.join(out, "metrics.jsonl"), "a") as f:
        f.write(json.dumps({{"split": "train", "step": 1, "elapsed_s": 1, "loss": 5, "tokens_per_s": 10}}) + "\n")
        f.write(json.dumps({{"split": "test", "step": 1, "elapsed_s": 2, "loss": 5, "ppl": 150}}) + "\n")
    print("trained")
'''


class Runner:
    """A temporary folder with a claims list, a stand-in keystone and the runner's environment."""

    def __init__(self, test, claims="1 a cfg/a.json k=1\n2 b cfg/b.json\n#vs 1 a b\n1 c cfg/c.json k=2 j=3\n"):
        folder = tempfile.TemporaryDirectory()
        test.addCleanup(folder.cleanup)
        self.root = folder.name
        self.keystone = os.path.join(self.root, "keystone")
        with open(self.keystone, "w") as f:
            f.write(FAKE.format(python=sys.executable))
        os.chmod(self.keystone, 0o755)
        self.calls_file = os.path.join(self.root, "calls.jsonl")
        self.exp = os.path.join(self.root, "exp")
        self.results = os.path.join(self.root, "results")
        self.write_claims(claims)
        self.env = dict(os.environ, CLAIMS="claims.txt", SEEDS="0 1", KS_EXPERIMENTS=self.exp,
                        KS_RESULTS=self.results, KEYSTONE=self.keystone, ANALYZE_CLAIMS="2",
                        ANALYZE_FLAGS="--batches 1", FAKE_CALLS=self.calls_file,
                        FAKE_GO=os.path.join(self.root, "go"))

    def write_claims(self, text):
        with open(os.path.join(self.root, "claims.txt"), "w") as f:
            f.write(text)

    def start(self, *claims, **env):
        # From the temporary folder: CLAIMS=claims.txt is read from the caller's folder.
        return subprocess.Popen([sys.executable, RUN, *claims], cwd=self.root, env=dict(self.env, **env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, *claims, **env):
        p = self.start(*claims, **env)
        out, err = p.communicate(timeout=60)
        return p.returncode, out, err

    def calls(self):
        """[(command, run folder name or None, arguments)] of the stand-in's calls so far."""
        if not os.path.exists(self.calls_file):
            return []
        out = []
        with open(self.calls_file) as f:
            for line in f:
                args = json.loads(line)
                folder = next((args[i + 1] for i, a in enumerate(args) if a in ("--out", "--run")), None)
                out.append((args[0], folder and os.path.relpath(folder, self.exp), args))
        return out

    def trained(self):
        return [folder for command, folder, _ in self.calls() if command == "train"]

    def wait_for(self, path, timeout=30):
        end = time.monotonic() + timeout
        while not os.path.exists(path):
            if time.monotonic() > end:
                raise AssertionError(f"{path} did not appear")
            time.sleep(0.01)


class RunnerTest(unittest.TestCase):
    def test_order_is_seed_major_and_results_are_kept(self):
        r = Runner(self)
        rc, out, err = r.run()
        self.assertEqual(rc, 0, err)
        self.assertEqual(r.trained(), ["claim1/a-seed0", "claim2/b-seed0", "claim1/c-seed0",
                                       "claim1/a-seed1", "claim2/b-seed1", "claim1/c-seed1"])
        self.assertIn("every run is finished", out)
        self.assertRegex(out, r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ start  " + r.exp + "/claim1/a-seed0\n")
        # The overrides, after the runner's own settings.
        args = [a for c, folder, a in r.calls() if folder == "claim1/c-seed1"][0]
        self.assertEqual(args, ["train", "--config", "cfg/c.json", "--out", os.path.join(r.exp, "claim1", "c-seed1"),
                                "--quiet", "--set", "seed=1", "--set", "train.precision=bf16",
                                "--set", "name=c-seed1", "--set", "k=2", "--set", "j=3"])
        # Only ANALYZE_CLAIMS' runs are analysed, with ANALYZE_FLAGS.
        analyzed = [(folder, a[3:]) for c, folder, a in r.calls() if c == "analyze"]
        self.assertEqual(analyzed, [("claim2/b-seed0", ["--batches", "1"]), ("claim2/b-seed1", ["--batches", "1"])])
        for claim, name in (("1", "a"), ("2", "b"), ("1", "c")):
            for seed in ("0", "1"):
                kept = os.path.join(r.results, f"claim{claim}", f"{name}-seed{seed}")
                for f in ("config.json", "metrics.jsonl", "provenance.jsonl", "machine.json"):
                    self.assertTrue(os.path.isfile(os.path.join(kept, f)), f"{kept}/{f}")
                with open(os.path.join(kept, "machine.json")) as f:
                    self.assertEqual(json.load(f), {"bf16_gemm_path": "amx"})
                self.assertEqual(os.path.isfile(os.path.join(kept, "analysis", "analysis.json")), claim == "2")
                self.assertTrue(os.path.isfile(os.path.join(r.exp, f"claim{claim}", f"{name}-seed{seed}.log")))
        with open(os.path.join(r.results, "claim2", "b-seed0", "analysis", "analysis.json")) as f:
            spectrum = json.load(f)["sites"][0]["rank"]["examples"][0]["heads"][0]["scores"]
        self.assertEqual(spectrum, {"effective_rank": 2.5})  # without its singular values

    def test_finished_runs_are_skipped(self):
        r = Runner(self)
        self.assertEqual(r.run()[0], 0)
        n = len(r.calls())
        # Kept results are enough, even without the run folders (a fresh machine).
        os.rename(r.exp, r.exp + ".old")
        rc, out, err = r.run()
        self.assertEqual((rc, len(r.calls())), (0, n), err)
        self.assertIn("every run is finished", out)
        self.assertFalse(os.path.exists(r.exp))
        # A run finished here but not yet kept is kept, not trained again.
        os.rename(r.exp + ".old", r.exp)
        os.remove(os.path.join(r.results, "claim1", "a-seed1", "metrics.jsonl"))
        rc, out, err = r.run()
        self.assertEqual(rc, 0, err)
        self.assertEqual(r.trained()[6:], [])
        self.assertIn("kept   " + os.path.join(r.results, "claim1", "a-seed1"), out)
        self.assertTrue(os.path.isfile(os.path.join(r.results, "claim1", "a-seed1", "metrics.jsonl")))

    def test_unfinished_runs_are_resumed_in_their_folder(self):
        r = Runner(self, "1 a cfg/a.json\n1 b cfg/b.json\n")
        for name in ("a", "b"):
            os.makedirs(os.path.join(r.exp, "claim1", f"{name}-seed0"))
            open(os.path.join(r.exp, "claim1", f"{name}-seed0", "mine"), "w").close()
        for f in ("latest.safetensors", "config.json"):
            with open(os.path.join(r.exp, "claim1", "a-seed0", f), "w") as out:
                out.write("{}")
        rc, out, err = r.run(SEEDS="0")
        self.assertEqual(rc, 0, err)
        args = {folder: a for c, folder, a in r.calls() if c == "train"}
        # A checkpoint: resumed. None (stopped before the first): started again by the trainer, in the same folder.
        self.assertEqual(args["claim1/a-seed0"], ["train", "--out", os.path.join(r.exp, "claim1", "a-seed0"),
                                                  "--resume", "--quiet"])
        self.assertEqual(args["claim1/b-seed0"][:3], ["train", "--config", "cfg/b.json"])
        self.assertIn("resume " + os.path.join(r.exp, "claim1", "a-seed0"), out)
        for name in ("a", "b"):  # nothing deleted
            self.assertTrue(os.path.isfile(os.path.join(r.exp, "claim1", f"{name}-seed0", "mine")))

    def stop_with(self, signum):
        r = Runner(self)
        p = r.start(FAKE_HANG="a-seed0")
        r.wait_for(os.path.join(r.exp, "claim1", "a-seed0", "started"))
        p.send_signal(signum)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, err)
        # Passed on as SIGTERM; the trainer saved and exited, and no run started after it.
        with open(os.path.join(r.exp, "claim1", "a-seed0", "signalled")) as f:
            self.assertEqual(f.read(), "TERM")
        self.assertEqual(r.trained(), ["claim1/a-seed0"])
        self.assertIn("stopped " + os.path.join(r.exp, "claim1", "a-seed0") + " (resumable)", out)
        self.assertFalse(os.path.exists(os.path.join(r.results, "claim1", "a-seed0")))
        # Started again, it resumes the run and finishes the queue.
        rc, out, err = r.run()
        self.assertEqual(rc, 0, err)
        self.assertEqual([a for c, folder, a in r.calls() if c == "train"][1][-2:], ["--resume", "--quiet"])
        self.assertEqual(len(r.trained()), 7)

    def test_sigterm_is_passed_on_and_no_run_starts_after(self):
        self.stop_with(signal.SIGTERM)

    def test_sigint_is_passed_on_and_no_run_starts_after(self):
        self.stop_with(signal.SIGINT)

    def test_the_claims_list_is_read_once(self):
        r = Runner(self, "1 a cfg/a.json\n1 b cfg/b.json\n")
        p = r.start(SEEDS="0", FAKE_HANG="a-seed0")
        r.wait_for(os.path.join(r.exp, "claim1", "a-seed0", "started"))
        r.write_claims("1 x cfg/x.json\n")
        open(os.path.join(r.root, "go"), "w").close()
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(r.trained(), ["claim1/a-seed0", "claim1/b-seed0"])

    def test_claim_filters(self):
        r = Runner(self)
        rc, out, err = r.run("2")
        self.assertEqual(rc, 0, err)
        self.assertEqual(r.trained(), ["claim2/b-seed0", "claim2/b-seed1"])
        rc, out, err = r.run("1", "2")
        self.assertEqual(rc, 0, err)
        self.assertEqual(r.trained()[2:], ["claim1/a-seed0", "claim1/c-seed0", "claim1/a-seed1", "claim1/c-seed1"])

    def test_a_damaged_claims_line_is_named_with_its_line_number(self):
        r = Runner(self, "# a comment\n\n1 a cfg/a.json\n1 b\n")
        rc, out, err = r.run()
        self.assertEqual(rc, 1)
        self.assertEqual(err, "run.py: claims.txt:4: expected 'CLAIM NAME CONFIG [KEY=VALUE ...]', got '1 b'\n")
        self.assertEqual(r.calls(), [])  # nothing trained before the list is read whole
        r.write_claims("1 a cfg/a.json\n#vs 1 a\n")
        rc, out, err = r.run()
        self.assertEqual((rc, err), (1, "run.py: claims.txt:2: expected '#vs CLAIM A B', got '#vs 1 a'\n"))
        rc, out, err = r.run(CLAIMS=os.path.join(r.root, "none.txt"))
        self.assertEqual(rc, 1)
        self.assertIn("none.txt: cannot read the claims list", err)

    def test_a_failing_run_stops_the_queue_with_its_last_lines(self):
        r = Runner(self)
        rc, out, err = r.run(FAKE_FAIL="b-seed0")
        log = os.path.join(r.exp, "claim2", "b-seed0.log")
        self.assertEqual(rc, 1)
        self.assertEqual(err, f"run.py: {r.exp}/claim2/b-seed0 failed (exit 3), see {log}; its last lines:\n"
                              "fake line 3\nfake line 4\nfake line 5\n")
        self.assertEqual(r.trained(), ["claim1/a-seed0", "claim2/b-seed0"])

    def test_a_failing_analysis_stops_the_queue(self):
        r = Runner(self)
        with open(r.keystone, "a") as f:
            f.write('if args[0] == "analyze":\n    sys.exit(4)\n')
        rc, out, err = r.run()
        self.assertEqual(rc, 1)
        self.assertIn(f"run.py: keystone analyze --run {r.exp}/claim2/b-seed0 failed, see", err)
        self.assertEqual(r.trained(), ["claim1/a-seed0", "claim2/b-seed0"])

    def test_without_a_keystone_binary(self):
        r = Runner(self)
        rc, out, err = r.run(KEYSTONE=os.path.join(r.root, "none"))
        self.assertEqual(rc, 2)
        self.assertIn("is not an executable keystone binary (build first, or set KEYSTONE)", err)


if __name__ == "__main__":
    unittest.main()
