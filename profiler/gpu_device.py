"""The GPU a process measures on: its identity for each result row, and exclusive use of it.

A sweep spread over workers records with every row the host, the GPU's name and UUID, its SM
clock and the driver, so rows from different devices are never taken for one another.
Several worker processes may share one GPU (one compiles while another times); the timed and
profiled parts hold a per-GPU file lock, so no two measurements ever overlap on one device.
The lock is an advisory `flock` the kernel drops when its process dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import re
import subprocess
import tempfile
from typing import Any, Iterator

from kernelscope.toolchain import cuda_driver

_SMI_FIELDS = ("uuid", "name", "clocks.sm", "clocks.max.sm", "driver_version")


def _smi_query(device: str) -> dict[str, str | None]:
    """nvidia-smi's facts of one device (by UUID or index); empty when nvidia-smi is absent."""
    try:
        r = subprocess.run(["nvidia-smi", "-i", device, f"--query-gpu={','.join(_SMI_FIELDS)}",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if r.returncode != 0 or not r.stdout.strip():
        return {}
    values = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")]
    return {k: (None if not v or v.startswith("[") or v == "N/A" else v) for k, v in zip(_SMI_FIELDS, values)}


def _mhz(text: str | None) -> int | None:
    return int(float(text)) if text and re.fullmatch(r"[\d.]+", text) else None


def current_device_facts() -> dict[str, Any]:
    """Host, name, UUID, SM clock (now and max), driver and compute capability of the GPU this
    process uses (torch's current device). Facts that cannot be read are None, never guessed."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    uuid_text = device_uuid()
    smi = _smi_query(uuid_text) if uuid_text else {}
    return {
        "host": platform.node() or None,
        "name": props.name,
        "uuid": smi.get("uuid") or uuid_text,
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_clock_mhz": _mhz(smi.get("clocks.sm")),
        "max_sm_clock_mhz": _mhz(smi.get("clocks.max.sm")),
        "driver": smi.get("driver_version"),
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def cuda_device_count() -> int | None:
    """GPUs the CUDA driver shows this process (CUDA_VISIBLE_DEVICES applies), asked through
    libcuda directly: a fraction of a second, where importing torch to ask takes seconds.
    None when the driver library cannot be loaded at all."""
    return cuda_driver.device_count()


def device_uuid() -> str | None:
    """The UUID of this process's GPU from the CUDA runtime (no nvidia-smi call): the lock's name."""
    import torch

    uuid = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "uuid", None)
    if uuid is None:
        return None
    return str(uuid) if str(uuid).startswith("GPU-") else f"GPU-{uuid}"


def lock_path(device_uuid: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", device_uuid)
    return os.path.join(tempfile.gettempdir(), f"kernelscope-gpu-{safe}.lock")


@contextlib.contextmanager
def exclusive(device_uuid: str | None) -> Iterator[None]:
    """Hold the device's lock for the duration (no lock when the device is unknown)."""
    if not device_uuid:
        yield
        return
    with open(lock_path(device_uuid), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def device_model(facts: dict[str, Any] | None) -> str | None:
    """The name rows are grouped by when deciding whether two timings are comparable."""
    return (facts or {}).get("name")
