"""The one simulated GPU the stand-ins share (pynvml reads it, vllm drives it).

Board power follows the work in flight: loaded idle when nothing runs, up to
the card's busy power at full load, with +/-1 % of noise from its own
seeded generator (never numpy's global one: the harness's arrival schedule
is numpy's legacy stream seeded with 42, and a stand-in that drew from it
would change the schedule the service replays).

Which card is simulated: STANDIN_GPU (an NVML name in CARDS).
"""
import os
import random
import threading

# NVML name -> (loaded-idle W, busy W, memory MiB, bf16 speed factor, TDP W).
# The idle and TDP figures follow the service's catalogue rows (L4: 24 W of
# 72 W; A100-SXM4-80GB: 60 W of 400 W); busy power sits under TDP as real
# inference does; speed is relative to the L4.
CARDS = {
    "NVIDIA L4": (24.0, 68.0, 23034, 1.0, 72.0),
    "NVIDIA A100-SXM4-80GB": (60.0, 330.0, 81920, 3.2, 400.0),
}

NAME = os.environ.get("STANDIN_GPU", "NVIDIA L4")
if NAME not in CARDS:
    raise SystemExit(f"STANDIN_GPU={NAME!r}: the stand-in knows {sorted(CARDS)}")
IDLE_W, BUSY_W, MEMORY_MIB, SPEED, TDP_W = CARDS[NAME]

_lock = threading.Lock()
_noise = random.Random(20261206)
_active_requests = 0
_batch_running = False
_model_mib = 0


def set_batch(running):
    global _batch_running
    with _lock:
        _batch_running = running


def request_started():
    global _active_requests
    with _lock:
        _active_requests += 1


def request_finished():
    global _active_requests
    with _lock:
        _active_requests -= 1


def load_model(mib):
    global _model_mib
    with _lock:
        _model_mib = mib


def load():
    """0 (idle) to 1 (saturated): a batch saturates; a server request
    takes a quarter of the card, so four in flight saturate it."""
    with _lock:
        if _batch_running:
            return 1.0
        return min(1.0, _active_requests / 4.0)


def power_w():
    base = IDLE_W + (BUSY_W - IDLE_W) * load()
    with _lock:
        return base * (1.0 + _noise.uniform(-0.01, 0.01))


def temperature_c():
    return int(38 + 0.12 * (power_w() - IDLE_W))


def utilization_pct():
    l = load()
    return 0 if l == 0 else int(min(100, 35 + 65 * l))


def memory_used_bytes():
    with _lock:
        return (500 + _model_mib) * 1024 * 1024
