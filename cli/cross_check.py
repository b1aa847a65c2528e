"""`run --ncu-check`: profile the target once under ncu and hold its timing against it."""

from __future__ import annotations

import os
import tempfile

from kernelscope.errors import UserError

_TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3, "s": 1e3}


def duration_ms(value, unit: str | None) -> float | None:
    """gpu__time_duration in ms (the sweep's key metrics carry ns)."""
    if value is None:
        return None
    scale = _TO_MS.get((unit or "ns").strip())
    if scale is None:
        raise UserError(f"gpu__time_duration has an unknown unit {unit!r}")
    return float(value) * scale


def dram_bytes(metrics: dict) -> float | None:
    read, write = metrics.get("dram__bytes_read.sum"), metrics.get("dram__bytes_write.sum")
    if not isinstance(read, (int, float)):
        return None
    return float(read) + (float(write) if isinstance(write, (int, float)) else 0.0)


def cross_check(spec, target: str, shape, dtype: str, config, seed: int, arch: str, timing, peaks,
                keep_report: str | None = None) -> str:
    """Profile the target (one launch in the ks:target range, quick set, clocks as they are,
    caches flushed) and add the ncu checks to `timing.checks`; returns the report path."""
    from kernelscope.cli.run_commands import profile_once
    from kernelscope.reports.profile_view import key_metrics_in_fresh_process
    from kernelscope.profiler.checked_timing import profile_checks

    folder = tempfile.mkdtemp(prefix="kernelscope-ncu-check-")
    path = keep_report or os.path.join(folder, f"{spec.name}-ncu-check.ncu-rep")
    run = profile_once(spec, target, None, shape, dtype, config, path, "quick", "none", "all", seed, arch)
    metrics = key_metrics_in_fresh_process(run.report_path)
    profile_checks(timing, duration_ms(metrics.get("gpu__time_duration.sum"), "ns"), dram_bytes(metrics), peaks)
    return run.report_path
