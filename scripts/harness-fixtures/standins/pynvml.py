"""Stand-in for pynvml (nvidia-ml-py): the calls the harness (utils.py) and
its energy meter (ai-energymeter 2.0.2) make, answered by standin_gpu.

STANDIN_NVML_READ_S (seconds, default 0): how long each power read by the
energy meter's sampler takes. See nvmlDeviceGetPowerUsage.
"""
import os
import sys
import time

import standin_gpu

# The meter's sampler (energymeter/energy_meter.py, ThreadGpuSamplingPyNvml.run)
# loops `timestamp = time.time(); read power, utilization, temperature;
# append; time.sleep(0.1)`, so its samples lie 0.1 s plus the time of the
# reads apart. On a busy host (the thread waits for the GIL beside vLLM) that
# is 100.6 to 111 ms and more, not 0.1 s. A read time here makes the sampler
# run late the same way, so that the meter's own gpu_energy (the trapezoid at
# the samples' timestamps) differs from 0.1 s x the samples.
READ_S = float(os.environ.get("STANDIN_NVML_READ_S", "0") or 0)
if READ_S < 0:
    raise SystemExit(f"STANDIN_NVML_READ_S={READ_S}: a read time is not negative")
_METER_MODULE = "energymeter.energy_meter"

NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0


class NVMLError(Exception):
    pass


class _Handle:
    pass


class _Utilization:
    def __init__(self, gpu):
        self.gpu = gpu
        self.memory = gpu // 2


class _Memory:
    def __init__(self, used):
        self.total = standin_gpu.MEMORY_MIB * 1024 * 1024
        self.used = used
        self.free = self.total - used


_HANDLE = _Handle()


def nvmlInit():
    pass


def nvmlShutdown():
    pass


def nvmlDeviceGetHandleByIndex(index):
    if index != 0:
        raise NVMLError(f"the stand-in has one GPU, not device {index}")
    return _HANDLE


def nvmlDeviceGetName(handle):
    return standin_gpu.NAME


def nvmlDeviceGetPowerUsage(handle):
    """Milliwatts, as NVML answers.

    Slow (STANDIN_NVML_READ_S) only when the energy meter calls it. The one
    other caller is the harness's utils.wait_for_gpu_cooldown, in the main
    thread between measurements, every check_interval: a delay there would
    only stretch the cooldown, which no CSV records, and would model nothing
    (the harness's own monitor thread, EnhancedMonitorThread.run, reads memory
    and clock, never power). The power is read first and the delay follows,
    as a reply that waits for the GIL after the driver call returns: the value
    belongs to the sample's timestamp, and the next sample starts late.
    """
    mw = int(round(standin_gpu.power_w() * 1000))
    if READ_S > 0 and sys._getframe(1).f_globals.get("__name__") == _METER_MODULE:
        time.sleep(READ_S)
    return mw


def nvmlDeviceGetUtilizationRates(handle):
    return _Utilization(standin_gpu.utilization_pct())


def nvmlDeviceGetTemperature(handle, sensor):
    return standin_gpu.temperature_c()


def nvmlDeviceGetMemoryInfo(handle):
    return _Memory(standin_gpu.memory_used_bytes())


def nvmlDeviceGetClockInfo(handle, clock):
    return 1500 if standin_gpu.load() > 0 else 210


__all__ = [n for n in dir() if n.startswith(("nvml", "NVML"))]
