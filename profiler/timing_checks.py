"""Whether a timing can be trusted: the checks every measurement carries, and their decisions.

A leaderboard learns the hard way that a median is only as good as the conditions it was
taken under: a kernel that returned early, work left running on another stream, a timer
replaced by the code under test, outputs replayed from the previous call, L2 lines that
survived the flush. Each measurement therefore carries a `checks` record, one entry per
check: whether it ran, whether it passed, and why. A measurement with a failed check is
*suspect*: it is shown with the failure and never reported as a speed-up.

This module holds the decisions (pure functions, tested on recorded samples); the probes
that gather their inputs on the GPU live in `timing`, `launch_probe` and `measure`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

# The floor divides by the measured peaks times this headroom. The peaks are what a large
# device copy and cuBLAS's 8192^3 bf16 matmul reach, not the datasheet: on an H100 SXM the
# datasheet's 3.35 TB/s and 989 TFLOP/s are 1.1-1.35x those, and a good kernel may beat
# cuBLAS by a few percent. 1.5x leaves room for all of that; the cheats this catches (a
# kernel that returned early, work the events never saw) come in 10-1000x under the floor.
FLOOR_HEADROOM = 1.5

# CUDA-event median vs ncu's gpu__time_duration of the same callable. On honest launches
# the events read 6.5-8.2 us MORE than ncu whatever the kernel's length (H100: six launches
# of 20-42 us kernels; H200: 63 and 77 us; benchmarks/results/timing-checks-h100.json.xz): an
# additive offset, the write-back of the dirty lines the L2 flush leaves before each timed
# launch plus the event placement, which ncu's own cache control does not pay. So the
# allowance is one-sided: events may exceed ncu by NCU_ABOVE_MS (the largest offset seen,
# with ~20% margin) plus NCU_REL_TOLERANCE of ncu (clocks are not locked: boost moves
# between processes), and may fall short of it only by NCU_BELOW_MS (event resolution)
# plus the same share. Nothing honest makes events shorter than the kernels they bracket;
# work on a side stream does (-40 us of a 43 us kernel on the H100).
NCU_REL_TOLERANCE = 0.15
NCU_ABOVE_MS = 0.010
NCU_BELOW_MS = 0.002

# Names of the checks, in the order they are reported.
FLOOR = "physical_floor"
COUNTER_FLOOR = "counter_floor"
NCU_AGREEMENT = "ncu_agreement"
PERSISTING_L2 = "persisting_l2_reset"
TIMER = "timer_integrity"
OUTPUT_AFTER = "output_after_timing"
FRESH_INPUTS = "fresh_inputs_differ"
LAUNCHES = "launches_in_timed_stream"
HOST_WAIT = "gpu_ahead_of_host"
CHECK_NAMES = (FLOOR, COUNTER_FLOOR, NCU_AGREEMENT, PERSISTING_L2, TIMER, OUTPUT_AFTER, FRESH_INPUTS, LAUNCHES,
               HOST_WAIT)

# Share of timed launches that may find the GPU already past their start event. Honest
# launches: 0-1 of ~500 (H200, rmsnorm 2048x4096, 14 us); in a full GPU test run the same kind
# of launch once crossed 5 % (host busy; the share was not kept), and cuBLAS's launches reached
# 6-22 % timed in turns at 128x4096x4096; a launch costing the host more than the kernel left
# the GPU waiting in 57 % of the samples. So 20 %: systematic waiting, not a burst.
HOST_WAIT_MAX_SHARE = 0.20


@dataclass
class Check:
    name: str
    ran: bool
    passed: bool | None          # None when it did not run
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "passed": self.passed, "detail": self.detail}


def passed(name: str, detail: str) -> Check:
    return Check(name, True, True, detail)


def failed(name: str, detail: str) -> Check:
    return Check(name, True, False, detail)


def skipped(name: str, detail: str) -> Check:
    return Check(name, False, None, detail)


@dataclass
class Checks:
    """The checks of one measurement (one side of one timing)."""

    items: dict[str, Check] = field(default_factory=dict)

    def add(self, check: Check) -> Check:
        self.items[check.name] = check
        return check

    def get(self, name: str) -> Check | None:
        return self.items.get(name)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.items.values() if c.ran and c.passed is False]

    @property
    def suspect(self) -> bool:
        return bool(self.failures)

    def summary(self) -> str:
        """One line: which checks ran and passed, and what failed."""
        ran = [c for c in self.items.values() if c.ran]
        if not ran:
            return "no checks ran"
        bad = self.failures
        if not bad:
            return f"{len(ran)}/{len(self.items)} checks ran, all passed"
        return "SUSPECT: " + "; ".join(f"{c.name}: {c.detail}" for c in bad)

    def to_dict(self) -> dict[str, Any]:
        ordered = sorted(self.items.values(),
                         key=lambda c: CHECK_NAMES.index(c.name) if c.name in CHECK_NAMES else len(CHECK_NAMES))
        return {"suspect": self.suspect, "ran": [c.name for c in ordered if c.ran],
                "failed": [c.name for c in self.failures],
                "items": {c.name: c.to_dict() for c in ordered}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "Checks":
        out = cls()
        for name, item in ((d or {}).get("items") or {}).items():
            out.add(Check(name, bool(item.get("ran")), item.get("passed"), str(item.get("detail", ""))))
        return out


def failures_of(timing: Mapping[str, Any] | None) -> list[str]:
    """'name: detail' of each failed check recorded in a timing dict (empty when none or unchecked)."""
    checks = Checks.from_dict((timing or {}).get("checks"))
    return [f"{c.name}: {c.detail}" for c in checks.failures]


# ----------------------------------------------------------------------------- the floor

def floor_ms(flops: float, nbytes: float, *, peak_tflops: float | None, peak_gbps: float | None,
             headroom: float = FLOOR_HEADROOM) -> tuple[float | None, str]:
    """The least time `flops` and `nbytes` can take at `headroom` x the measured peaks, and
    which resource sets it. (None, why) when no peak applies."""
    candidates = []
    if flops > 0 and peak_tflops:
        candidates.append((flops / (peak_tflops * headroom * 1e12) * 1e3,
                           f"{flops:.3g} FLOP at {headroom:g} x {peak_tflops:.0f} TFLOP/s"))
    if nbytes > 0 and peak_gbps:
        candidates.append((nbytes / (peak_gbps * headroom * 1e9) * 1e3,
                           f"{nbytes / 1e6:.4g} MB at {headroom:g} x {peak_gbps:.0f} GB/s"))
    if not candidates:
        return None, "no measured peak applies"
    return max(candidates)


def dram_bytes_floor(nbytes: float, output_bytes: float | None, l2_bytes: float | None,
                     l2_flushed: bool) -> tuple[float, str]:
    """Bytes that must cross DRAM within the timed launch, and how they were counted.

    Output lines may stay dirty in L2 after the kernel ends: up to one L2 of output is not
    counted. Without a flush before the launch, up to one more L2 of inputs may already be
    resident and is not counted either.
    """
    l2 = float(l2_bytes or 0)
    out = float(output_bytes) if output_bytes is not None else l2
    held_out = min(out, l2)
    held_in = 0.0 if l2_flushed else l2
    held = held_out + held_in
    parts = []
    if held_out:
        parts.append(f"{held_out / 1e6:.3g} MB of output that may stay in L2")
    if held_in:
        parts.append(f"{held_in / 1e6:.3g} MB of inputs that may be L2-resident (no flush)")
    basis = f"{nbytes / 1e6:.4g} MB" + (f" less {' and '.join(parts)}" if parts else "")
    return max(0.0, nbytes - held), basis


def floor_check(median_ms: float, flops: float, nbytes: float, *, peak_tflops: float | None,
                peak_gbps: float | None, headroom: float = FLOOR_HEADROOM) -> Check:
    """A median below the time the work physically needs is flagged, never a speed-up."""
    floor, basis = floor_ms(flops, nbytes, peak_tflops=peak_tflops, peak_gbps=peak_gbps, headroom=headroom)
    if floor is None:
        return skipped(FLOOR, basis)
    if median_ms < floor:
        return failed(FLOOR, f"median {median_ms:.4g} ms is below the physical floor {floor:.4g} ms "
                             f"({basis}): {floor / max(median_ms, 1e-9):.1f}x faster than the hardware allows")
    return passed(FLOOR, f"median {median_ms:.4g} ms >= floor {floor:.4g} ms ({basis})")


def counter_floor_check(median_ms: float, dram_bytes: float | None, peak_gbps: float | None,
                        headroom: float = FLOOR_HEADROOM) -> Check:
    """The bytes the profiled launch itself moved through DRAM (ncu's counters) bound its time."""
    if dram_bytes is None or not peak_gbps:
        return skipped(COUNTER_FLOOR, "no DRAM counters" if dram_bytes is None else "no measured bandwidth peak")
    floor = dram_bytes / (peak_gbps * headroom * 1e9) * 1e3
    basis = f"{dram_bytes / 1e6:.4g} MB of DRAM traffic in the profiled launch at {headroom:g} x {peak_gbps:.0f} GB/s"
    if median_ms < floor:
        return failed(COUNTER_FLOOR, f"median {median_ms:.4g} ms is below {floor:.4g} ms ({basis})")
    return passed(COUNTER_FLOOR, f"median {median_ms:.4g} ms >= {floor:.4g} ms ({basis})")


# ----------------------------------------------------------------------------- ncu agreement

def ncu_agreement(event_median_ms: float, ncu_ms: float | None, *, rel: float = NCU_REL_TOLERANCE,
                  above_ms: float = NCU_ABOVE_MS, below_ms: float = NCU_BELOW_MS) -> Check:
    """CUDA events and ncu's own clock must tell the same story about the same callable."""
    if ncu_ms is None or ncu_ms <= 0:
        return skipped(NCU_AGREEMENT, "not profiled" if ncu_ms is None else "ncu reported no duration")
    diff = event_median_ms - ncu_ms
    allowed = (above_ms if diff >= 0 else below_ms) + rel * ncu_ms
    text = (f"events {event_median_ms:.4g} ms vs ncu {ncu_ms:.4g} ms ({diff * 1e3:+.2f} us; allowed "
            f"{'+' if diff >= 0 else '-'}{allowed * 1e3:.1f} us = {(above_ms if diff >= 0 else below_ms) * 1e3:g} us "
            f"+ {rel:.0%})")
    if abs(diff) > allowed:
        why = ("the events saw less work than ncu did (work outside the timed stream, or timed launches "
               "that skip work the profiled one did)"
               if diff < 0 else "the events saw more time than the kernels took (host work inside the timed range)")
        return failed(NCU_AGREEMENT, f"{text}: {why}")
    return passed(NCU_AGREEMENT, text)


# ----------------------------------------------------------------------------- launches

def host_wait_check(waited: int, launches: int, max_share: float = HOST_WAIT_MAX_SHARE) -> Check:
    """`waited`: timed launches whose start event the GPU had already passed when their launch
    call returned, so the GPU sat between the events waiting for the host. The CUDA events
    then time the host's launch, not the kernel (seen on the H100: a CuTe DSL launch that
    converted its arguments per call took 25-38 us of host time, and a 25 us kernel measured
    56 us when timed in turns with cuBLAS)."""
    if launches <= 0:
        return skipped(HOST_WAIT, "no timed launches")
    share = waited / launches
    detail = (f"the GPU reached the start event before the launch was issued in {waited} of "
              f"{launches} timed launches ({share:.0%})")
    if share > max_share:
        return failed(HOST_WAIT, detail + ": those samples include the GPU waiting for the host "
                      "(host launch cost above the kernel and flush time); time it with CUDA "
                      "graphs or cheaper launches")
    return passed(HOST_WAIT, detail)


def launches_check(in_range: Iterable[str], off_stream: Iterable[tuple[str, int]], off_range: Iterable[str],
                   timed_stream: int | None) -> Check:
    """Work the timed events could not see: other streams, or outside the event pair."""
    off_stream, off_range = list(off_stream), list(off_range)
    names = list(in_range)
    if timed_stream is None:
        return skipped(LAUNCHES, "the profiler saw no marker on the timed stream")
    problems = []
    if off_stream:
        listed = ", ".join(sorted({f"{short_name(n)} (stream {s})" for n, s in off_stream}))
        problems.append(f"{len(off_stream)} launch(es) outside the timed stream {timed_stream}: {listed}")
    if off_range:
        listed = ", ".join(sorted({short_name(n) for n in off_range}))
        problems.append(f"{len(off_range)} launch(es) on the timed stream outside the timed range: {listed}")
    if problems:
        return failed(LAUNCHES, "; ".join(problems))
    if not names:
        return failed(LAUNCHES, "no GPU work at all between the timing events")
    return passed(LAUNCHES, f"{len(names)} launch(es) per call, all on the timed stream: "
                            + ", ".join(short_name(n) for n in names))


def short_name(kernel: str, limit: int = 80) -> str:
    return kernel if len(kernel) <= limit else kernel[: limit - 3] + "..."
