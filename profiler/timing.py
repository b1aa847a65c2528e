"""Timing GPU work with CUDA events: warm-up, L2 flushed (or inputs rotated), many samples.

Each sample is one launch bracketed by its own pair of events, so the launch gap between
samples is not counted and the spread of the samples is visible (median, quartiles, IQR).
Compilation never happens here: callers pass an already compiled, already warmed callable
(the warm-up below also absorbs any lazy module load).

The loop is guarded (`timing_guard`): events are recorded and read through torch's C
methods, the timer's Python names are checked for replacement, persisting L2 lines are
reset before every sample; the outcome of each guard lands in `Timing.checks`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kernelscope.errors import UserError
from kernelscope.profiler import timing_checks as tc
from kernelscope.profiler.timing_checks import Checks

# Fallback flush size when the device does not report its L2 size; larger than any Hopper L2.
_DEFAULT_FLUSH_BYTES = 256 * 1024 * 1024


@dataclass
class Timing:
    """Per-launch times in milliseconds and their summary."""

    samples_ms: list[float] = field(repr=False)
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    n: int
    flush_l2: bool
    rotated_inputs: int           # how many input sets were cycled through (1 = none)
    fresh_inputs: bool = False    # inputs refreshed before every launch, outside the events
    checks: Checks = field(default_factory=Checks, repr=False)
    last_result: Any = field(default=None, repr=False, compare=False)   # what the last timed call returned
    launches: list[str] | None = None   # GPU work of one call, from the launch probe (None: not probed)

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def relative_iqr(self) -> float:
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "median_ms": self.median_ms, "q1_ms": self.q1_ms, "q3_ms": self.q3_ms,
            "iqr_ms": self.iqr_ms, "min_ms": self.min_ms, "n": self.n,
            "flush_l2": self.flush_l2, "rotated_inputs": self.rotated_inputs,
            "fresh_inputs": self.fresh_inputs, "checks": self.checks.to_dict(), "launches": self.launches,
            "samples_ms": list(self.samples_ms),
        }


def summarize(samples_ms: Sequence[float], *, flush_l2: bool = False, rotated_inputs: int = 1) -> Timing:
    """Median and quartiles (inclusive method, so n=1 and n=2 work) of per-launch times."""
    if not samples_ms:
        raise ValueError("no timing samples")
    xs = sorted(float(x) for x in samples_ms)
    if len(xs) == 1:
        q1 = q3 = xs[0]
    else:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return Timing(samples_ms=list(samples_ms), median_ms=statistics.median(xs), q1_ms=q1, q3_ms=q3,
                  min_ms=xs[0], n=len(xs), flush_l2=flush_l2, rotated_inputs=rotated_inputs)


def _require_cuda():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - torch is a dependency
        raise UserError(f"timing needs torch: {e}") from None
    if not torch.cuda.is_available():
        raise UserError("no CUDA GPU is available: timing needs one (torch.cuda.is_available() is False)")
    return torch


def _flush_buffer(torch, device) -> Any:
    props = torch.cuda.get_device_properties(device)
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    # Twice the L2 so that no line of the previous launch can survive the overwrite.
    nbytes = 2 * l2 if l2 > 0 else _DEFAULT_FLUSH_BYTES
    return torch.empty(nbytes // 4, dtype=torch.int32, device=device)


def time_callable(
    fn: Callable[..., Any],
    *,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    warmup_iters: int | None = None,
    iters: int | None = None,
    flush_l2: bool = True,
    input_sets: Sequence[Any] | None = None,
    max_iters: int = 10_000,
    device: Any = None,
    refresh: Callable[[int], Any] | None = None,
    before_timed: Callable[[], Any] | None = None,
) -> Timing:
    """Time `fn` launch by launch.

    fn: called as fn() or, with input_sets, as fn(input_sets[i % len(input_sets)]) so that
        consecutive launches read different buffers (an alternative or complement to flushing).
    warmup_ms / rep_ms: time budgets used to choose the iteration counts (like
        triton.testing.do_bench); warmup_iters / iters override them.
    flush_l2: overwrite a buffer twice the L2 size before every launch, outside the timed events.
    refresh: refresh(i) before launch i (warm-up and timed), outside the events and before
        the flush: fresh inputs, so no launch can reuse what the previous one computed.
    before_timed: called once between the warm-up and the timed launches (e.g. to poison
        the output, so that a timed launch that writes nothing is caught afterwards).
    """
    torch = _require_cuda()
    if device is None:
        device = torch.device("cuda", torch.cuda.current_device())
    sets = list(input_sets) if input_sets is not None else None
    if sets is not None and not sets:
        raise ValueError("input_sets is empty")

    def call(i: int):
        if refresh is not None:
            refresh(i)
        return fn(sets[i % len(sets)]) if sets is not None else fn()

    flush = _flush_buffer(torch, device) if flush_l2 else None

    from kernelscope.profiler import timing_guard as guard

    # First call outside any measurement (module load, lazy allocations), then an estimate.
    call(0)
    torch.cuda.synchronize(device)
    est_n = 5
    stream = torch.cuda.current_stream(device)
    start, end = guard.event_pair(torch)
    guard.record(torch, start, stream)
    for i in range(est_n):
        if flush is not None:
            flush.zero_()
        call(i)
    guard.record(torch, end, stream)
    torch.cuda.synchronize(device)
    # Includes the flush: a conservative estimate that keeps the iteration counts modest.
    est_ms = max(guard.elapsed_ms(torch, start, end) / est_n, 1e-4)

    n_warm = warmup_iters if warmup_iters is not None else max(1, int(warmup_ms / est_ms))
    n_rep = iters if iters is not None else max(1, int(rep_ms / est_ms))
    n_warm, n_rep = min(n_warm, max_iters), min(n_rep, max_iters)

    for i in range(n_warm):
        call(i)
    timer = guard.TimerGuard(torch)
    persisting = guard.PersistingL2()
    starts, ends = zip(*(guard.event_pair(torch) for _ in range(n_rep)))
    torch.cuda.synchronize(device)
    if before_timed is not None:
        before_timed()
    persisting.begin()
    result = None
    waited = 0
    for i in range(n_rep):
        if refresh is not None:
            refresh(n_warm + i)
        if flush is not None:
            flush.zero_()
        persisting.reset()
        guard.record(torch, starts[i], stream)
        result = fn(sets[i % len(sets)]) if sets is not None else fn()
        # Already passed: the GPU idled inside this sample until the launch came.
        waited += guard.completed(torch, starts[i])
        guard.record(torch, ends[i], stream)
    torch.cuda.synchronize(device)
    guard.wait(torch, ends[-1])       # in case torch.cuda.synchronize was replaced by a no-op
    persisting.end()
    samples = [guard.elapsed_ms(torch, s, e) for s, e in zip(starts, ends)]
    timing = summarize(samples, flush_l2=flush_l2, rotated_inputs=len(sets) if sets is not None else 1)
    timing.fresh_inputs = refresh is not None
    timing.checks.add(timer.check())
    timing.checks.add(persisting.check())
    timing.checks.add(tc.host_wait_check(waited, n_rep))
    timing.last_result = result
    return timing


def tflops(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) / 1e12 if ms > 0 else float("nan")


def gbps(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9 if ms > 0 else float("nan")
