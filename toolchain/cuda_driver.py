"""The CUDA driver (libcuda) asked directly, for facts a command needs before it imports torch
(a fraction of a second, where importing torch to ask takes seconds)."""

from __future__ import annotations

import ctypes
import functools


@functools.lru_cache(maxsize=1)
def initialised_driver() -> ctypes.CDLL | None | bool:
    """libcuda after cuInit; None where the library cannot be loaded at all, False where it
    loads but finds no usable device."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    return lib if lib.cuInit(0) == 0 else False


def device_count() -> int | None:
    """GPUs the driver shows this process (CUDA_VISIBLE_DEVICES applies); None without libcuda."""
    lib = initialised_driver()
    if lib is None:
        return None
    count = ctypes.c_int(0)
    if lib is False or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


@functools.lru_cache(maxsize=None)
def device_attribute(attribute: int, ordinal: int = 0) -> int | None:
    """cuDeviceGetAttribute of the visible device `ordinal`; None where it cannot be read."""
    lib = initialised_driver()
    if not lib:
        return None
    device, value = ctypes.c_int(0), ctypes.c_int(0)
    if lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
        return None
    if lib.cuDeviceGetAttribute(ctypes.byref(value), attribute, device) != 0:
        return None
    return value.value
