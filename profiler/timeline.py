"""A kernel launch over time: ncu's PM sampling (the PmSampling section) and the phases it shows.

While a kernel runs (and a little before and after), ncu reads a few hardware counters at a fixed
interval (1.5 us on the H100 and H200 with ncu 2025.3): how busy the tensor pipe, the issue slots,
DRAM and L2 were in each interval. A report keeps them as multi-instance metrics named
`<unit>.TriageCompute.<counter>`, one instance per sample, whose correlation ids are the samples'
timestamps in ns. Nothing here interpolates: every time is a sample's, so every span is a whole
number of intervals and the interval is its resolution.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

SAMPLED_GROUP = ".TriageCompute."
# Short name -> ncu counter (the part after ".TriageCompute."), in the order the views show them.
# The unit before the group (TPC, FBSP, ...) is left free: it names where the counter is read.
SERIES = {
    "tensor_pipe_pct": "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "issue_pct": "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
    "dram_read_pct": "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_write_pct": "dramc__write_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_active_cycles": "sm__cycles_active.avg",
    "clusters_active": "gpc__cgas_active_realtime.avg",
}
# Series that count only while SMs run the kernel: a sample where one of them is above zero is
# active. L2 and DRAM are left out: they also see the cache flush before a launch and writebacks after.
SM_SERIES = ("sm_active_cycles", "tensor_pipe_pct", "issue_pct", "clusters_active")
# The series whose timestamps are the time axis: the first of these the report holds.
AXIS_PREFERENCE = ("sm_active_cycles", "tensor_pipe_pct", "issue_pct")
INTERVAL_METRIC = "profiler__pmsampler_interval_time"   # ns, as ncu was told or chose

# A kernel uses the tensor pipe when that series's plateau is at least this (%); else its phases
# are read from the issue series.
TENSOR_PLATEAU_MIN_PCT = 10.0
# The plateau is the median of the active samples at or above this share of the series's maximum...
PLATEAU_FLOOR = 0.5
# ... and a sample is at the plateau from this share of it.
AT_PLATEAU = 0.9


@dataclass
class Timeline:
    """One launch's PM samples. A sample's value covers the interval that its timestamp closes or
    opens (ncu does not say which): read times to within one interval."""

    interval_us: float                  # the sampling interval: the resolution of every time here
    times_us: list[float]               # each sample's time, from the first sample with SM activity
    series: dict[str, list[float]]      # short name -> one value per sample (only those recorded)
    metrics: dict[str, str]             # short name -> the ncu metric it was read from
    # Series recorded at other timestamps (another replay pass), so not on this time axis.
    left_out: list[str] = field(default_factory=list)

    def active(self) -> tuple[int, int] | None:
        """Indices of the first and last sample with SM activity (None: no sample saw any)."""
        return _active_span(self.series)

    def intervals(self, first: int, last: int) -> int:
        """Sample `first` to sample `last` in whole intervals (timestamps jitter by ~30 ns)."""
        return round((self.times_us[last] - self.times_us[first]) / self.interval_us)

    def to_dict(self) -> dict[str, Any]:
        found = phases(self)
        return {
            "interval_us": self.interval_us,
            "times_us": self.times_us,
            "series": self.series,
            "metrics": self.metrics,
            "left_out": self.left_out,
            "phases": found.to_dict() if found else None,
        }


@dataclass
class Phases:
    """How a launch spends its time, read from one series: a ramp up to its plateau, the plateau,
    and a tail after it. Spans are whole intervals between samples."""

    series: str                 # the short name of the series read ("tensor_pipe_pct" or "issue_pct")
    metric: str                 # its ncu metric
    interval_us: float
    plateau: float              # the median of the active samples at or above half the maximum (%)
    active_samples: int         # samples from the first to the last with SM activity
    active_intervals: int       # first to last sample with SM activity
    ramp_intervals: int         # first active sample to the first at >= 90 % of the plateau
    tail_intervals: int         # last sample at >= 90 % of the plateau to the last active one
    # The samples (indices into Timeline.times_us) that bound the phases.
    first_active: int
    plateau_from: int
    plateau_to: int
    last_active: int

    @property
    def active_span_us(self) -> float:
        return self.active_intervals * self.interval_us

    @property
    def ramp_us(self) -> float:
        return self.ramp_intervals * self.interval_us

    @property
    def tail_us(self) -> float:
        return self.tail_intervals * self.interval_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "series": self.series,
            "metric": self.metric,
            "plateau_pct": self.plateau,
            "ramp_us": self.ramp_us,
            "tail_us": self.tail_us,
            "active_span_us": self.active_span_us,
            "active_samples": self.active_samples,
            "ramp_intervals": self.ramp_intervals,
            "tail_intervals": self.tail_intervals,
            "active_intervals": self.active_intervals,
            "interval_us": self.interval_us,
            "samples": {"first_active": self.first_active, "plateau_from": self.plateau_from,
                        "plateau_to": self.plateau_to, "last_active": self.last_active},
        }

    def phase_of(self, sample: int) -> str:
        """Where a sample sits: before, ramp, plateau, tail or after."""
        if sample < self.first_active:
            return "before"
        if sample > self.last_active:
            return "after"
        if sample < self.plateau_from:
            return "ramp"
        return "plateau" if sample <= self.plateau_to else "tail"


def read_timeline(action: Any) -> Timeline | None:
    """The PM samples of one ncu_report action (None: the report has none for it)."""
    found: dict[str, tuple[str, list[tuple[int, float]]]] = {}
    wanted = {counter: name for name, counter in SERIES.items()}
    for metric_name in action.metric_names():
        _, group, counter = metric_name.partition(SAMPLED_GROUP)
        name = wanted.get(counter) if group else None
        if name is None or name in found:
            continue
        samples = _samples(action.metric_by_name(metric_name))
        if samples:
            found[name] = (metric_name, samples)
    if not found:
        return None
    axis_name = next((n for n in AXIS_PREFERENCE if n in found), next(iter(found)))
    stamps = [t for t, _ in found[axis_name][1]]
    series, metrics, left_out = {}, {}, []
    for name in SERIES:
        if name not in found:
            continue
        metric_name, samples = found[name]
        if [t for t, _ in samples] != stamps:
            left_out.append(name)
            continue
        series[name] = [v for _, v in samples]
        metrics[name] = metric_name
    interval_ns = _interval_ns(action, stamps)
    if interval_ns is None:
        return None
    # Times from the first active sample: 0 is where the kernel shows up, negative is before it.
    span = _active_span(series)
    origin = stamps[span[0]] if span else stamps[0]
    return Timeline(interval_us=interval_ns / 1e3, times_us=[(t - origin) / 1e3 for t in stamps],
                    series=series, metrics=metrics, left_out=left_out)


def _active_span(series: dict[str, list[float]]) -> tuple[int, int] | None:
    sm_series = [series[name] for name in SM_SERIES if name in series]
    busy = [i for i, values in enumerate(zip(*sm_series)) if any(v > 0 for v in values)]
    return (busy[0], busy[-1]) if busy else None


def _samples(metric: Any) -> list[tuple[int, float]]:
    """(timestamp ns, value) of each sample; a timestamp of 0 marks a sample that holds no time."""
    if metric is None or metric.num_instances() == 0 or not metric.has_correlation_ids():
        return []
    stamps = metric.correlation_ids()
    out = []
    for i in range(metric.num_instances()):
        t = int(stamps.as_uint64(i))
        if t:
            out.append((t, float(metric.as_double(i))))
    return out


def _interval_ns(action: Any, stamps: list[int]) -> float | None:
    """The sampler's interval as the report records it, else the median spacing of the samples."""
    metric = action.metric_by_name(INTERVAL_METRIC)
    value = metric.value() if metric is not None else None
    if isinstance(value, (int, float)) and value > 0:
        return float(value)
    gaps = [b - a for a, b in zip(stamps, stamps[1:]) if b > a]
    return float(statistics.median(gaps)) if gaps else None


def phases(timeline: Timeline) -> Phases | None:
    """Ramp, plateau and tail of the tensor-pipe series when the kernel uses the tensor pipe, else of
    the issue series. None when neither is recorded or no sample saw SM activity."""
    span = timeline.active()
    if span is None:
        return None
    first, last = span
    chosen = None
    if "tensor_pipe_pct" in timeline.series:
        level = _plateau(timeline.series["tensor_pipe_pct"][first : last + 1])
        if level is not None and level >= TENSOR_PLATEAU_MIN_PCT:
            chosen = "tensor_pipe_pct"
    if chosen is None and "issue_pct" in timeline.series:
        chosen = "issue_pct"
    if chosen is None:
        return None
    values = timeline.series[chosen]
    level = _plateau(values[first : last + 1])
    if level is None:
        return None
    at_plateau = [i for i in range(first, last + 1) if values[i] >= AT_PLATEAU * level]
    return Phases(
        series=chosen,
        metric=timeline.metrics[chosen],
        interval_us=timeline.interval_us,
        plateau=level,
        active_samples=last - first + 1,
        active_intervals=timeline.intervals(first, last),
        ramp_intervals=timeline.intervals(first, at_plateau[0]),
        tail_intervals=timeline.intervals(at_plateau[-1], last),
        first_active=first,
        plateau_from=at_plateau[0],
        plateau_to=at_plateau[-1],
        last_active=last,
    )


def _plateau(values: list[float]) -> float | None:
    peak = max(values, default=0.0)
    if peak <= 0:
        return None
    return statistics.median(v for v in values if v >= PLATEAU_FLOOR * peak)
