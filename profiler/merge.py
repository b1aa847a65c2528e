"""Merging the launches of one NVTX range into one profile."""

from __future__ import annotations

from collections import OrderedDict

from kernelscope.profiler.record import KernelProfile, Metric


def group_by_nvtx(profiles: list[KernelProfile], prefix: str) -> list[KernelProfile]:
    """Merge launches that share an NVTX range starting with `prefix` into one profile."""
    groups: "OrderedDict[str, list[KernelProfile]]" = OrderedDict()
    singles: list[tuple[int, KernelProfile]] = []
    first_position: dict[str, int] = {}
    for position, p in enumerate(profiles):
        key = next((r for r in reversed(p.nvtx_ranges) if r.startswith(prefix)), None)
        if key is None:
            singles.append((position, p))
            continue
        groups.setdefault(key, []).append(p)
        first_position.setdefault(key, position)
    merged = [(first_position[k], merge_profiles(k, members)) for k, members in groups.items()]
    ordered = sorted(merged + singles, key=lambda t: t[0])
    out = []
    for i, (_, p) in enumerate(ordered):
        p.index = i
        out.append(p)
    return out


_SUMMED_UNITS = {"byte", "inst", "sector", "request", "cycle", "ns", "usecond", "msecond", "second", "warp", "thread", "block", ""}


def merge_profiles(name: str, members: list[KernelProfile], kind: str = "nvtx-range") -> KernelProfile:
    """One profile for several launches: those of one NVTX range (kind "nvtx-range"), or the
    launches a selector matched, merged on request (kind "merged").

    Counts add up: `.sum` counters, the duration, and cycle or byte counts per unit
    (`.avg`/`.max`/`.min` of a counter: a range's launches run one after another, so an
    average SM's cycles are the sum of each launch's). Rates (`.per_second`,
    `.per_cycle_*`, `.pct_of_peak_*`, ratios) are recomputed from the summed counters
    where the report holds them (`X.per_second` = sum(X) / total time, `X.pct_of_peak_sustained_elapsed`
    weighted by each launch's elapsed cycles), else averaged weighted by each launch's
    duration. Launch facts (registers, grid) are the first launch's, and the member
    names are kept in `demangled_name`. A metric missing from any member is left out
    (not collected), never partially summed.
    """
    if len(members) == 1:
        return KernelProfile(**{**vars(members[0]), "name": name, "kind": kind})
    source_lines = None
    if all(m.source_lines is not None for m in members):
        from kernelscope.profiler.source_lines import LineProfile

        source_lines = LineProfile.merge(name, [m.source_lines for m in members])
    first = members[0]
    durations = [m.value("gpu__time_duration.sum") for m in members]
    weights = [float(d) if isinstance(d, (int, float)) else 1.0 for d in durations]
    total_weight = sum(weights) or 1.0
    metrics: dict[str, Metric] = {}
    for key, metric in first.metrics.items():
        values = [m.metrics.get(key) for m in members]
        if any(v is None for v in values):
            continue
        if not all(isinstance(v.value, (int, float)) for v in values):
            metrics[key] = metric
            continue
        if key.startswith(("launch__", "device__")):
            metrics[key] = metric
        elif key.startswith("static__"):
            # Facts of the code (local memory, fences, size): the members' largest is what the range runs.
            metrics[key] = Metric(max(v.value for v in values), metric.unit)
        elif _is_total(key, metric.unit):
            metrics[key] = Metric(sum(v.value for v in values), metric.unit)
        else:
            metrics[key] = Metric(_merged_rate(key, members, values, weights, total_weight), metric.unit)
    mix: dict[str, float] = {}
    for m in members:
        for op, count in m.instruction_mix.items():
            mix[op] = mix.get(op, 0.0) + count
    stalls: dict[str, float] = {}
    stall_keys = set.intersection(*(set(m.stalls) for m in members)) if members else set()
    for reason in stall_keys:
        stalls[reason] = sum(m.stalls[reason] * w for m, w in zip(members, weights)) / total_weight
    one_kernel = len({m.name for m in members}) == 1
    return KernelProfile(
        source=first.source,
        index=first.index,
        kind=kind,
        name=name,
        # Launches of one kernel keep its demangled name (short names are made from it).
        demangled_name=first.demangled_name if kind == "merged" and one_kernel else " + ".join(m.name for m in members),
        mangled_name=None,
        nvtx_ranges=first.nvtx_ranges,
        grid=first.grid,
        block=first.block,
        cluster=first.cluster,
        device=first.device,
        session=first.session,
        metrics=metrics,
        instruction_mix=mix,
        stalls=stalls,
        launches=sum(m.launches for m in members),
        ncu_rules=[r for m in members for r in m.ncu_rules],
        source_lines=source_lines,
    )


# Counter units: a per-unit statistic (.avg/.max/.min over SMs, ...) of one of these is still a
# count for the launch and adds up over launches that run one after another.
_COUNT_UNITS = {"byte", "inst", "sector", "request", "cycle", "warp", "thread", "block"}


def _is_total(name: str, unit: str) -> bool:
    if name == "gpu__time_duration.sum":
        return True
    if ".pct" in name or ".per_" in name or ".peak_" in name or name.endswith((".ratio", ".pct", "_rate")):
        return False
    if name.endswith((".avg", ".max", ".min")):
        return unit in _COUNT_UNITS
    return name.endswith(".sum") and unit in _SUMMED_UNITS


_ELAPSED_CYCLES = "sm__cycles_elapsed.avg"


def _merged_rate(key: str, members: list[KernelProfile], values: list[Metric], weights: list[float], total_weight: float) -> float:
    """A rate of a merged range, from summed counters where the report allows it."""
    base, _, suffix = key.partition(".")
    stat, _, rate = suffix.partition(".")
    if rate == "per_second" and stat in ("sum", "avg", "max", "min"):
        counts = [m.value(f"{base}.{stat}") for m in members]
        seconds = [m.value("gpu__time_duration.sum") for m in members]
        if all(isinstance(c, (int, float)) for c in counts) and all(isinstance(t, (int, float)) and t > 0 for t in seconds):
            return sum(counts) / (sum(seconds) * 1e-9)
    if rate.startswith("pct_of_peak_sustained_elapsed") or rate.startswith("per_cycle_elapsed"):
        cycles = [m.value(_ELAPSED_CYCLES) for m in members]
        if all(isinstance(c, (int, float)) and c > 0 for c in cycles):
            return sum(float(v.value) * c for v, c in zip(values, cycles)) / sum(cycles)
    return sum(v.value * w for v, w in zip(values, weights)) / total_weight
