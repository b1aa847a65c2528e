"""Hopper device limits the kernels size themselves by, and the current GPU's properties.

Plain Python (no DSL import): config validation uses these on machines without the DSL.
"""

from __future__ import annotations

import sys

from kernelscope.toolchain.cuda_driver import device_attribute

# Shared memory one block may use on sm_90 (the opt-in maximum, 227 KiB) and per SM.
SMEM_PER_BLOCK_BYTES = 232448
SMEM_PER_SM_BYTES = 233472
# What a kernel keeps in its dynamic shared memory beside its buffers: mbarrier words and the
# slack of 1024-byte alignment.
SMEM_RESERVED_BYTES = 1024
# SMs of an H100 SXM: the persistent-grid size when no GPU can be asked.
H100_SMS = 132
# L2 of an H100 / H200 (50 MiB) when no GPU can be asked.
H100_L2_BYTES = 50 * 1024 * 1024


# cuDeviceGetAttribute's numbers for the properties read here.
_DRIVER_ATTRIBUTES = {"multi_processor_count": 16, "L2_cache_size": 38}


def device_property(name: str, fallback: int) -> int:
    """A property of the current GPU (torch's name for it), or `fallback` (the Hopper value)
    where none can be read. Where torch has not started CUDA (a command choosing a config
    before it launches anything) the driver is asked about the first visible GPU, the one
    torch will use: importing torch only to ask would cost seconds."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), name))
    except Exception:  # noqa: BLE001 - no usable device: the fallback
        return fallback
    value = device_attribute(_DRIVER_ATTRIBUTES[name])
    return fallback if value is None else value


def sm_count() -> int:
    """SMs of the current GPU (an H100's 132 without one)."""
    return device_property("multi_processor_count", H100_SMS)


def l2_bytes() -> int:
    """L2 cache of the current GPU (50 MiB, the H100/H200 size, when it cannot be read)."""
    return device_property("L2_cache_size", H100_L2_BYTES)
