"""The device's measured peaks: copy bandwidth and bf16 matmul rate, measured once per
device and torch version and cached beside the compile cache."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from kernelscope.profiler.documents import read_json_or_empty
from kernelscope.profiler.timing import gbps, tflops, time_callable


@dataclass
class Peaks:
    device: str
    copy_gbps: float | None = None        # read + write bytes per second of a large D2D copy
    bf16_matmul_tflops: float | None = None
    measured_at: str | None = None
    cached: bool = False


def _cache_path() -> str:
    from kernelscope.toolchain.disk_cache import cache_root

    root = str(cache_root())
    return os.path.join(root, "peaks.json")


def _peak_key(torch) -> str:
    return f"{torch.cuda.get_device_name()}|torch {torch.__version__}"


def measure_peaks(need_matmul: bool, *, refresh: bool = False) -> Peaks:
    """Copy bandwidth (and bf16 matmul rate when asked), cached per device and torch version."""
    import torch

    key = _peak_key(torch)
    path = _cache_path()
    cache = read_json_or_empty(path)
    entry = dict(cache.get(key) or {})
    cached = bool(entry) and not refresh
    if refresh or entry.get("copy_gbps") is None:
        n = 256 * 1024 * 1024  # 512 MiB of bf16: far beyond L2
        src = torch.empty(n, dtype=torch.bfloat16, device="cuda").normal_()
        dst = torch.empty_like(src)
        t = time_callable(lambda: dst.copy_(src), flush_l2=False, rep_ms=200)
        entry["copy_gbps"] = gbps(2 * src.numel() * src.element_size(), t.median_ms)
        cached = False
        del src, dst
    if need_matmul and (refresh or entry.get("bf16_matmul_tflops") is None):
        n = 8192
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        t = time_callable(lambda: torch.matmul(a, b), flush_l2=False, rep_ms=300)
        entry["bf16_matmul_tflops"] = tflops(2.0 * n ** 3, t.median_ms)
        cached = False
        del a, b
    if not cached:
        entry["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cache[key] = entry
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                json.dump(cache, f, indent=1)
        except OSError:
            pass  # a cache that cannot be written only costs a re-measurement
    return Peaks(device=key, copy_gbps=entry.get("copy_gbps"),
                 bf16_matmul_tflops=entry.get("bf16_matmul_tflops"),
                 measured_at=entry.get("measured_at"), cached=cached)
