"""Stand-in for pynvml (nvidia-ml-py): the calls the harness (utils.py) and
its energy meter (ai-energymeter 2.0.2) make, answered by standin_gpu."""
import standin_gpu

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
    """Milliwatts, as NVML answers."""
    return int(round(standin_gpu.power_w() * 1000))


def nvmlDeviceGetUtilizationRates(handle):
    return _Utilization(standin_gpu.utilization_pct())


def nvmlDeviceGetTemperature(handle, sensor):
    return standin_gpu.temperature_c()


def nvmlDeviceGetMemoryInfo(handle):
    return _Memory(standin_gpu.memory_used_bytes())


def nvmlDeviceGetClockInfo(handle, clock):
    return 1500 if standin_gpu.load() > 0 else 210


__all__ = [n for n in dir() if n.startswith(("nvml", "NVML"))]
