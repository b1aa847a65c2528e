"""Which GPU work a timed callable really launches, and on which stream.

CUDA events time one stream between two points. Work the callable leaves on another
stream, or that runs before the start event or after the end event, is invisible to them.
After timing, the callable is called a few more times under torch.profiler (CUPTI's
activity trace, which sees every kernel, copy and memset with its stream and GPU
timestamps), each call bracketed by a short spin kernel launched on the timed stream:

    spin (timed stream) | fn() | spin (timed stream)

The spins name the timed stream and bound the timed range on the GPU's own clock. Every
other piece of work is then in range (timed stream, between the spins), outside the timed
stream, or outside the range. torch.profiler was chosen over counting launches under ncu
(ncu serializes every kernel, so a second stream looks like the first) and over stream
capture (capture refuses work many honest kernels do, such as a host sync, and does not
see a stream the capture was not asked about).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from kernelscope.profiler import timing_checks as tc

MARKER = "spin_kernel"            # torch.cuda._sleep's kernel
_MARKER_CYCLES = 2000             # about a microsecond: long enough to order, short enough not to matter
_WORK_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


@dataclass
class GpuWork:
    name: str
    stream: int
    start_us: float
    end_us: float


@dataclass
class ProbeResult:
    timed_stream: int | None
    calls: int
    per_call: list[list[str]] = field(default_factory=list)   # in-range work of each call, in order
    off_stream: list[tuple[str, int]] = field(default_factory=list)
    off_range: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def launches(self) -> list[str] | None:
        """The work of one call (the first), or None when the probe saw nothing."""
        return self.per_call[0] if self.per_call else None

    def check(self) -> tc.Check:
        if self.timed_stream is None:
            return tc.skipped(tc.LAUNCHES, self.note or "the profiler saw no marker on the timed stream")
        return tc.launches_check(self.launches or [], self.off_stream, self.off_range, self.timed_stream)


def work_from_trace(trace: Mapping[str, Any]) -> list[GpuWork]:
    """GPU work items (kernels, copies, memsets) of a chrome trace written by torch.profiler."""
    out = []
    for ev in trace.get("traceEvents", []):
        if ev.get("ph") != "X" or ev.get("cat") not in _WORK_CATEGORIES:
            continue
        args = ev.get("args") or {}
        stream = args.get("stream", ev.get("tid"))
        try:
            stream = int(stream)
            start = float(ev["ts"])
            end = start + float(ev.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            continue
        out.append(GpuWork(name=str(ev.get("name", "?")), stream=stream, start_us=start, end_us=end))
    return sorted(out, key=lambda w: (w.start_us, w.end_us))


def classify(work: Iterable[GpuWork], calls: int) -> ProbeResult:
    """Split the work of `calls` bracketed calls into in range, off stream and off range."""
    work = list(work)
    markers = [w for w in work if MARKER in w.name]
    if not markers:
        return ProbeResult(timed_stream=None, calls=calls, note="the trace holds no marker kernel "
                                                                 "(torch.profiler saw no GPU activity)")
    timed = markers[0].stream
    markers = [w for w in markers if w.stream == timed]
    result = ProbeResult(timed_stream=timed, calls=calls)
    if len(markers) < 2 * calls:
        result.note = f"expected {2 * calls} markers on stream {timed}, found {len(markers)}"
    windows = [(markers[2 * i].end_us, markers[2 * i + 1].start_us) for i in range(len(markers) // 2)]
    result.per_call = [[] for _ in windows]
    marker_ids = {id(m) for m in markers}
    for w in work:
        if id(w) in marker_ids:
            continue
        if w.stream != timed:
            result.off_stream.append((w.name, w.stream))
            continue
        slot = next((i for i, (a, b) in enumerate(windows) if w.start_us >= a and w.end_us <= b), None)
        if slot is None:
            result.off_range.append(w.name)
        else:
            result.per_call[slot].append(w.name)
    return result


def gpu_events(trace: Mapping[str, Any]) -> dict[str, Any]:
    """The trace reduced to its GPU work (what `work_from_trace` reads): small enough to keep."""
    return {"traceEvents": [ev for ev in trace.get("traceEvents", [])
                            if ev.get("ph") == "X" and ev.get("cat") in _WORK_CATEGORIES]}


@contextlib.contextmanager
def _quiet_profiler_notes():
    """Every probe is a fresh profiler: torch's note that a profiler clears its events between
    cycles says nothing about this trace, and would land in the user's output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events")
        yield


_warmed = False


def warm_up() -> None:
    """Start and stop torch.profiler once with no GPU work: its first start in a process (CUPTI
    loaded, activity buffers set up) takes seconds. A sweep worker does this before it waits
    for the GPU lock, so that cost is not paid while other workers wait for the device."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    from torch.profiler import ProfilerActivity, profile

    try:
        with _quiet_profiler_notes(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            pass
    except (RuntimeError, OSError, ValueError):
        pass                 # the probe itself then says why it could not run


def probe(fn: Callable[[], Any], *, calls: int = 2, save_trace: str | None = None) -> ProbeResult:
    """Call fn `calls` times under torch.profiler, each call between two markers (GPU only).
    save_trace: also write the trace's GPU work there (JSON) for a later look."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    try:
        with _quiet_profiler_notes(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                torch.cuda._sleep(_MARKER_CYCLES)
                fn()
                torch.cuda._sleep(_MARKER_CYCLES)
            torch.cuda.synchronize()
        fd, path = tempfile.mkstemp(prefix="kernelscope-probe-", suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path) as f:
                trace = json.load(f)
        finally:
            os.unlink(path)
    except (RuntimeError, OSError, ValueError) as e:
        # A profiler that cannot start (CUPTI held by another tool, e.g. under ncu) is a
        # check that did not run, never one that passed.
        torch.cuda.synchronize()
        return ProbeResult(timed_stream=None, calls=calls, note=f"torch.profiler failed: {str(e).splitlines()[0]}")
    if save_trace:
        with open(save_trace, "w") as f:
            json.dump(gpu_events(trace), f)
    return classify(work_from_trace(trace), calls)
