"""Stand-in for the few torch calls the harness makes (seeding, CUDA
queries, cleanup): the device it reports is the simulated one."""
import types

import standin_gpu


def manual_seed(seed):
    return None


class _Props:
    total_memory = standin_gpu.MEMORY_MIB * 1024 * 1024
    name = standin_gpu.NAME


cuda = types.SimpleNamespace(
    is_available=lambda: True,
    get_device_name=lambda index=0: standin_gpu.NAME,
    get_device_properties=lambda index=0: _Props(),
    manual_seed_all=lambda seed: None,
    synchronize=lambda: None,
    empty_cache=lambda: None,
    memory_allocated=lambda index=0: 0,
    memory_reserved=lambda index=0: 0,
)
backends = types.SimpleNamespace(
    cudnn=types.SimpleNamespace(deterministic=False, benchmark=True)
)
distributed = types.SimpleNamespace(
    is_initialized=lambda: False, destroy_process_group=lambda: None
)
