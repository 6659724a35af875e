"""Time to the first training step of ../shared/bench/torch_lm_bench.py's model:
the seconds from the process's start (the kernel's record of it, so the
interpreter's start and `import torch` count, as they do for a user) to the end
of the first optimizer step, the script's warm-up step. Runs that script
unchanged (its arguments pass through; it prints its JSON line), then prints
one line more, {"first_step_s": ...}, the counterpart of `keystone bench`'s first_step_s
(core/clock.cpp reads the same clock). Used by first_step_vs_torch.sh.
"""
import json
import os
import runpy
import sys
import time


def seconds_since_process_start():
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, start time in clock ticks
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started


import torch  # noqa: E402 (after the clock: the import is part of what is timed either way)

first_step = []
adamw_step = torch.optim.AdamW.step


def timed_step(self, *args, **kwargs):
    out = adamw_step(self, *args, **kwargs)
    if not first_step:
        first_step.append(seconds_since_process_start())
    return out


torch.optim.AdamW.step = timed_step
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "bench",
                      "torch_lm_bench.py")
if not os.path.exists(script):
    sys.exit(f"torch_first_step.py: {script} not found (the PyTorch reference LM)")
sys.argv = [script] + sys.argv[1:]
runpy.run_path(script, run_name="__main__")
print(json.dumps({"first_step_s": first_step[0]}))
