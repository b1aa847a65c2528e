"""Fake measure functions for sweep tests without a GPU: deterministic rows, a fake device
named by the worker's CUDA_VISIBLE_DEVICES, a worker that dies, a user who presses Ctrl-C.

They run inside Dask worker processes, which import this module by name (tests/ is on the
path the workers inherit)."""

from __future__ import annotations

import os

FAKE_DEVICE = {"host": "testhost", "name": "Fake GPU", "uuid": "GPU-fake", "compute_capability": "9.0",
               "sm_clock_mhz": 1755, "max_sm_clock_mhz": 1980, "driver": "580.00", "visible_devices": None}


def _timing(ms: float) -> dict:
    return {"median_ms": ms, "iqr_ms": ms / 100, "n": 10, "min_ms": ms, "max_ms": ms, "samples_ms": [ms] * 10}


def fake_measure(plan, point, profile_fn=None) -> dict:
    """Time = threads / vec (ms); `vec=3` is rejected by the fake kernel."""
    row = {"index": point.index, "key": point.key, "shape": point.shape, "config": point.config}
    if point.config.get("vec") == 3:
        return dict(row, status="invalid", message="vec=3 does not divide the row", timing=None,
                    correctness=None, metrics={}, reference_timing=None)
    ms = point.config["threads"] / point.config["vec"] / 100.0
    device = dict(FAKE_DEVICE)
    models = os.environ.get("KS_FAKE_MODELS")          # "0=Fake H100,1=Fake H200": a mixed host
    if models:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        name = dict(m.split("=", 1) for m in models.split(","))[visible]
        device.update(name=name, uuid=f"GPU-fake-{visible}")
    return dict(row, status="ok", message="", timing=_timing(ms), correctness=None, metrics={},
                reference_timing=_timing(1.0), device=device)


def checked_measure(plan, point, profile_fn=None) -> dict:
    """fake_measure with the timing checks the point task records: threads=512 at vec=4 beats
    the physical floor (a planted impossible time), every other timing passes; the status is
    decided by the point task's own `mark_suspect`."""
    from kernelscope.profiler import sweep_runner
    from kernelscope.profiler import timing_checks as tc

    row = fake_measure(plan, point)
    if row["timing"] is None:
        return row
    checks = tc.Checks()
    checks.add(tc.passed(tc.TIMER, "samples from CUDA events"))
    if point.config == {"threads": 512, "vec": 4}:
        row["timing"]["median_ms"] = 0.001
        checks.add(tc.failed(tc.FLOOR, "0.001 ms is under the 0.1 ms the bytes need at peak bandwidth"))
    else:
        checks.add(tc.passed(tc.FLOOR, "above the physical floor"))
    row["timing"]["checks"] = checks.to_dict()
    return sweep_runner.mark_suspect(row)


def dying_measure(plan, point, profile_fn=None) -> dict:
    """Kills its worker process the first time it meets threads=256 (plan.report_dir holds the mark)."""
    mark = os.path.join(plan.report_dir, f"died-{point.index}")
    if point.config["threads"] == 256 and point.config["vec"] == 4 and not os.path.exists(mark):
        open(mark, "w").close()
        os._exit(17)                                     # as a kernel fault or the OOM killer would
    return fake_measure(plan, point)


def always_raising_measure(plan, point, profile_fn=None) -> dict:
    if point.config["threads"] == 128:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return fake_measure(plan, point)


class InterruptAfter:
    """Measures normally, then raises KeyboardInterrupt at the n-th call (as Ctrl-C would)."""

    def __init__(self, n: int):
        self.n = n
        self.calls = 0

    def __call__(self, plan, point, profile_fn=None):
        self.calls += 1
        if self.calls == self.n:
            raise KeyboardInterrupt
        return fake_measure(plan, point)
