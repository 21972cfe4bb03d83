"""Runs one of the harness's programs unmodified, as run_benchmark.sh does
(`python language/<program>.py <result folder> --config <yaml>`), with the
stand-ins first on the import path (PYTHONPATH, set by run.sh).

Two of its helpers are changed around it, never inside it:
- utils.cleanup_gpu_memory runs `pgrep -f 'ray::'` and `kill -9` on every
  match: on a shared machine that ends other people's processes, and behind
  the stand-ins there is nothing of its own to clean. It is replaced by a
  no-op.
- utils.wait_for_gpu_cooldown runs as written, reading the stand-in NVML,
  with 1 s of idle instead of 30 s and checks every 0.2 s instead of 5 s:
  the simulated card is idle and cool at once, so the real waits would add
  35 s of sleep before and after every iteration and nothing else.

Usage: python drive.py <harness checkout> <language/program.py> <result folder> <config>
"""
import functools
import os
import runpy
import sys

harness, program, result_folder, config = sys.argv[1:5]
sys.path.insert(0, os.path.abspath(harness))
import utils  # noqa: E402  (the harness's own, found in the checkout)

utils.cleanup_gpu_memory = lambda verbose=True: True
utils.wait_for_gpu_cooldown = functools.partial(
    utils.wait_for_gpu_cooldown, idle_time=1, check_interval=0.2
)
path = os.path.join(harness, program)
sys.argv = [path, result_folder, "--config", config]
runpy.run_path(path, run_name="__main__")
