"""A sweep as independent points: each point compiles, is checked and timed (and, when asked,
profiled) wherever the executor runs it, and its row is journaled the moment it finishes.

`measure_point` is the task a worker runs. It compiles outside the GPU lock (so another
worker on the same GPU can time meanwhile), holds the device only to launch, copy the output,
time the target and then the reference (each row's speed is a ratio taken on one device, a
moment apart) and for ncu, and checks the output against fp32 on the host after releasing it. A point whose task fails (an exception that
escaped it, or its worker died) is journaled as failed with the reason and submitted once more;
the sweep goes on either way. Ctrl-C cancels what runs and keeps what finished.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from kernelscope.profiler import launch_probe, sweep_journal
from kernelscope.profiler import timing_checks as tc
from kernelscope.profiler.executors import PointExecutor


@dataclass(frozen=True)
class SweepPlan:
    """What every point of one sweep shares."""

    target: str                      # a registered name or an absolute `file.py:NAME`
    reference: str | None
    dtype: str
    arch: str = "sm_90a"
    seed: int = 0
    rep_ms: float = 100.0
    profile: bool = False
    report_dir: str = "kernelscope-sweep"
    fresh_inputs: bool = False       # new input values before every timed launch

    def header(self, shapes: list[dict[str, int]]) -> dict[str, Any]:
        return {"target": self.target, "reference": self.reference or "", "dtype": self.dtype, "arch": self.arch,
                "seed": self.seed, "rep_ms": self.rep_ms, "profile": self.profile, "fresh_inputs": self.fresh_inputs,
                "shape": shapes[0] if len(shapes) == 1 else None, "shapes": shapes}


@dataclass(frozen=True)
class Point:
    index: int
    shape: dict[str, int]
    config: dict[str, Any]

    @property
    def key(self) -> str:
        return sweep_journal.point_key({"shape": self.shape, "config": self.config})


def plan_points(shapes: list[dict[str, int]], configs: list[dict[str, Any]]) -> list[Point]:
    return [Point(i, dict(s), dict(c)) for i, (s, c) in enumerate((s, c) for s in shapes for c in configs)]


# ----------------------------------------------------------------------------- on the worker

# Kept between the points a worker process runs: one shape's inputs, the reference's launches.
_inputs_kept: dict[Any, Any] = {}
_reference_probes: dict[Any, Any] = {}


def _inputs(spec, plan: SweepPlan, shape: dict[str, int]):
    key = (plan.target, tuple(shape.items()), plan.dtype, plan.seed)
    if key not in _inputs_kept:
        _inputs_kept.clear()             # one shape's tensors at a time on the device
        _inputs_kept[key] = spec.make_inputs(shape, plan.dtype, plan.seed, "cuda")
    return _inputs_kept[key]


class _Phases(dict):
    """Seconds spent in each named step of a point, for the journal (where a point's time goes)."""

    @contextlib.contextmanager
    def step(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self[name] = round(self.get(name, 0.0) + time.perf_counter() - t0, 4)

    @contextlib.contextmanager
    def holding(self, device_uuid: str | None):
        """The GPU's lock, the wait for it counted as `lock_wait`."""
        from kernelscope.profiler import gpu_device

        t0 = time.perf_counter()
        with gpu_device.exclusive(device_uuid):
            self["lock_wait"] = round(self.get("lock_wait", 0.0) + time.perf_counter() - t0, 4)
            yield


def _launch_and_time(spec, fn, plan: SweepPlan, shape: dict[str, int], inputs, phases: _Phases) -> dict[str, Any]:
    """On the locked GPU: one launch on poisoned outputs, its output and the fp32 reference
    copied to the host, then the checked timings (docs/timing-checks.md) of the target and,
    right after, of the reference (adjacent, so the ratio sees the same clocks)."""
    import torch

    from kernelscope.kernels import references
    from kernelscope.profiler import measure
    from kernelscope.profiler.checked_timing import time_checked

    out_name = spec.output
    with phases.step("first_launch"):
        if out_name in inputs and hasattr(inputs[out_name], "fill_"):
            inputs[out_name].fill_(float("nan"))      # each config must write every element
        out = fn()
        torch.cuda.synchronize()
        out = inputs[out_name] if out_name in inputs else out
        host = {"out": out.detach().float().cpu()}
    with phases.step("expected"):
        host["expected"] = torch.as_tensor(spec.reference_fp32(inputs)).float().cpu()
    fl, nb = float(spec.flops(shape)), float(spec.bytes_moved(shape, plan.dtype))
    with phases.step("peaks"):
        # Cached per device on disk: measured once per GPU, read back by every later point.
        peaks = measure.measure_peaks(need_matmul=nb > 0 and fl / nb >= measure.COMPUTE_BOUND_INTENSITY)
    common = dict(spec=spec, inputs=inputs, shape=shape, dtype=plan.dtype, seed=plan.seed, flops=fl, nbytes=nb,
                  peaks=peaks, fresh=plan.fresh_inputs, rep_ms=plan.rep_ms)
    with phases.step("target_timing"):
        host["timing"] = time_checked(fn, **common)
    with phases.step("reference_timing"):
        host["reference_timing"] = None
        if plan.reference:
            ref_fn = references.bind(plan.reference, spec, inputs)
            # The reference is the same library call on the same inputs at every config of a shape:
            # its launches are probed once per shape in this process, its time at every point.
            probe_key = (plan.reference, tuple(shape.items()), plan.dtype)
            if probe_key not in _reference_probes:
                _reference_probes[probe_key] = launch_probe.probe(ref_fn)
            host["reference_timing"] = time_checked(ref_fn, is_target=False, probe=_reference_probes[probe_key],
                                                    **common)
    host["peak_gbps"] = peaks.copy_gbps
    if plan.fresh_inputs:
        _inputs_kept.clear()             # the bound tensors now hold other values than the seed's
    return host


def _profile_checks(timing: dict[str, Any], metrics: dict[str, Any], peak_gbps: float | None) -> None:
    """ncu's clock and DRAM counters of the same point against its events (`timing` serialized)."""
    from kernelscope.profiler.checked_timing import add_profile_checks

    ns = metrics.get("gpu__time_duration.sum")        # the sweep's key metrics carry ns
    read, write = metrics.get("dram__bytes_read.sum"), metrics.get("dram__bytes_write.sum")
    dram = (float(read) + (float(write) if isinstance(write, (int, float)) else 0.0)
            if isinstance(read, (int, float)) else None)
    add_profile_checks(timing, float(ns) * 1e-6 if isinstance(ns, (int, float)) else None, dram, peak_gbps)


def mark_suspect(row: dict[str, Any]) -> dict[str, Any]:
    """A timed row whose timing failed a check is `suspect`, with what failed: it keeps its
    timing but is never ranked (docs/timing-checks.md)."""
    checks = tc.Checks.from_dict((row.get("timing") or {}).get("checks"))
    if row.get("status") == "ok" and checks.suspect:
        row.update(status="suspect", message=checks.summary())
    return row


def measure_point(plan: SweepPlan, point: Point, profile_fn: Callable | None = None) -> dict[str, Any]:
    """Compile, time (and profile) one point on this process's GPU, then check its output;
    returns its row. Only launches and copies hold the GPU: compiling before and the
    correctness check after (host work, seconds for large outputs) overlap other workers."""
    from kernelscope.kernels import registry
    from kernelscope.kernels.spec import ConfigRejected
    from kernelscope.profiler import gpu_device, measure
    from kernelscope.profiler.correctness import check

    spec = registry.resolve(plan.target)
    started = time.perf_counter()
    # Where and when it ran: journal-only facts (the merged document leaves them out).
    row: dict[str, Any] = {"index": point.index, "key": point.key, "shape": point.shape, "config": point.config,
                           "process": f"{platform.node()}:{os.getpid()}", "started_at": time.time(),
                           "metrics": {}, "timing": None, "correctness": None, "reference_timing": None}
    try:
        compiled = spec.compile(point.config, point.shape, plan.dtype, plan.arch)
    except ConfigRejected as e:
        return dict(row, status="invalid", message=str(e), compile_s=time.perf_counter() - started)
    except Exception as e:  # a compile failure of one point must not end the sweep
        first = str(e).splitlines()[0] if str(e) else ""
        return dict(row, status="failed", message=f"compile: {type(e).__name__}: {first}",
                    compile_s=time.perf_counter() - started)
    row["compile_s"] = time.perf_counter() - started
    phases = _Phases()
    uuid = gpu_device.device_uuid()
    launch_probe.warm_up()           # seconds on a process's first point: never while holding the lock
    try:
        with phases.holding(uuid), phases.step("inputs"):
            inputs = _inputs(spec, plan, point.shape)      # a new shape's tensors: allocation and copies
        # A kernel that compiles its launched variant from real tensors does it here, outside the
        # lock, so another worker can time meanwhile.
        with phases.step("bind"):
            fn = compiled.bound(inputs)
    except ConfigRejected as e:
        return dict(row, status="invalid", message=str(e), gpu_phases=dict(phases))
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else ""
        return dict(row, status="failed", message=f"bind: {type(e).__name__}: {first}", gpu_phases=dict(phases))
    with phases.holding(uuid):
        locked = time.perf_counter()
        try:
            host = _launch_and_time(spec, fn, plan, point.shape, inputs, phases)
        except Exception as e:
            first = str(e).splitlines()[0] if str(e) else ""
            return dict(row, status="failed", message=f"launch: {type(e).__name__}: {first}",
                        device=gpu_device.current_device_facts(), gpu_s=time.perf_counter() - locked,
                        gpu_phases=dict(phases))
        with phases.step("device_facts"):
            row["device"] = gpu_device.current_device_facts()     # the SM clock right after timing
        row["gpu_s"] = time.perf_counter() - locked
    row["gpu_phases"] = phases
    del compiled, fn
    atol, rtol = measure.tolerance_for(spec, plan.dtype)
    with phases.step("host_check"):
        report = check(host["out"], host["expected"], atol=atol, rtol=rtol, tile=spec.tile, dims=spec.output_dims)
    row["correctness"] = report.to_dict()
    if not report.ok:
        return dict(row, status="wrong", finished_at=time.time(),
                    message=f"{report.bad_count} elements over tolerance (max abs {report.max_abs_error:.3g}); "
                            f"{report.where()}")
    row.update(status="ok", message="", timing=host["timing"].to_dict(),
               reference_timing=host["reference_timing"].to_dict() if host["reference_timing"] else None)
    if plan.profile and profile_fn is not None and not host["timing"].checks.suspect:
        with gpu_device.exclusive(uuid):
            row["metrics"] = profile_fn(plan, point)
        if "error" not in row["metrics"]:
            _profile_checks(row["timing"], row["metrics"], host["peak_gbps"])
    mark_suspect(row)
    row["finished_at"] = time.time()
    return row


# ----------------------------------------------------------------------------- in the client

@dataclass
class SweepProgress:
    total: int
    done: int = 0                    # points with a final row (any status)
    failed: int = 0                  # of those, failed for good
    skipped: int = 0                 # finished in the journal before this run
    retried: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def remaining(self) -> int:
        return self.total - self.done - self.skipped

    def eta_s(self) -> float | None:
        if self.done == 0:
            return None
        return (time.monotonic() - self.started) / self.done * self.remaining


@dataclass
class SweepOutcome:
    document: dict[str, Any]
    progress: SweepProgress
    interrupted: bool = False


def run_sweep(plan: SweepPlan, points: list[Point], executor: PointExecutor, journal: sweep_journal.Journal, *,
              measure: Callable = measure_point, profile_fn: Callable | None = None, retries: int = 1,
              on_progress: Callable[[SweepProgress, dict[str, Any] | None], None] | None = None) -> SweepOutcome:
    """Run the points the journal has not finished; returns the merged document of all of them."""
    finished = journal.finished()
    todo = [p for p in points if p.key not in finished]
    progress = SweepProgress(total=len(points), skipped=len(points) - len(todo))
    attempts: dict[int, int] = {}
    by_index = {p.index: p for p in todo}
    for p in todo:
        attempts[p.index] = 1
        executor.submit(p.index, measure, plan, p, profile_fn)
    if on_progress:
        on_progress(progress, None)
    interrupted = False
    try:
        for index, value, error in executor.results():
            point = by_index[index]
            attempt = attempts[index]
            if error is None:
                record = dict(value, attempt=attempt, final=True)
            else:
                again = attempt <= retries
                note = "; submitted once more" if again else "; not retried again"
                record = {"index": index, "key": point.key, "shape": point.shape, "config": point.config,
                          "status": "failed", "message": f"attempt {attempt}: {error}{note}",
                          "attempt": attempt, "final": not again}
                if again:
                    attempts[index] = attempt + 1
                    progress.retried += 1
                    executor.submit(index, measure, plan, point, profile_fn)
            journal.add(record)
            if record["final"]:
                progress.done += 1
                progress.failed += record["status"] == "failed"
            if on_progress:
                on_progress(progress, record)
    except KeyboardInterrupt:
        interrupted = True
        executor.cancel_all()
    return SweepOutcome(document=sweep_journal.merge(journal.header, journal.records), progress=progress,
                        interrupted=interrupted)
