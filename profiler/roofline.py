"""Roofline: the device's ceilings and where each kernel sits under them.

Every number comes from the report's own metrics (the ones Nsight Compute's roofline
sections collect); nothing is taken from a datasheet. Each value carries the text of
where it came from, so the page can say so.

Placement of a kernel:
  FLOPs     = tensor-pipe operations (sm__ops_path_tensor_src_<type>.sum: ncu counts two
              operations per multiply-add, i.e. FLOPs) for the floating-point source types
            + FP32/FP16/FP64 pipe work from thread-level SASS counts
              (smsp__sass_thread_inst_executed_op_<op>_pred_on.sum.per_cycle_elapsed x cycles
              elapsed; FFMA/DFMA count 2, the packed HADD2/HMUL2 2, HFMA2 4, as ncu's own roofline does)
  bytes     = DRAM bytes read + written (dram__bytes_read.sum + dram__bytes_write.sum)
  FLOP/s    = FLOPs / gpu__time_duration.sum
  intensity = FLOPs / DRAM bytes
Ceilings:
  compute   = peak operations per cycle (<metric>.peak_sustained) x SM clock, where the SM clock
              is the device's maximum (device attribute), so kernel and reference share one roof
  memory    = dram__bytes.sum.peak_sustained (bytes per DRAM cycle) x the DRAM clock measured
              (dram__cycles_elapsed.avg.per_second)
A kernel whose report lacks these metrics is "not collected", never zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelscope.profiler.record import KernelProfile

# What to collect for a roofline, in the words of `ncu --section`.
SECTIONS_NEEDED = "SpeedOfLight_RooflineChart and SpeedOfLight_HierarchicalTensorRooflineChart (both in --set full)"

DURATION = "gpu__time_duration.sum"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
CYCLES = "smsp__cycles_elapsed.avg"
CYCLES_FALLBACK = "sm__cycles_elapsed.avg"
SM_CLOCK_MEASURED = "sm__cycles_elapsed.avg.per_second"
DRAM_CLOCK = "dram__cycles_elapsed.avg.per_second"
DRAM_PEAK_PER_CYCLE = "dram__bytes.sum.peak_sustained"

# Non-tensor floating-point work: (per-cycle thread-instruction metric, FLOPs per instruction).
_SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
PIPE_TERMS: dict[str, tuple[tuple[str, float], ...]] = {
    "fp32": ((_SASS.format("fadd"), 1.0), (_SASS.format("fmul"), 1.0), (_SASS.format("ffma"), 2.0)),
    "fp16": ((_SASS.format("hadd"), 2.0), (_SASS.format("hmul"), 2.0), (_SASS.format("hfma"), 4.0)),
    "fp64": ((_SASS.format("dadd"), 1.0), (_SASS.format("dmul"), 1.0), (_SASS.format("dfma"), 2.0)),
}
# Tensor-pipe operations by floating-point source type (integer types are not FLOPs).
TENSOR_SOURCES = (
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp8_sparsity_off.sum",
    "sm__ops_path_tensor_src_fp8_sparsity_on.sum",
    "sm__ops_path_tensor_src_fp64.sum",
)

# Compute ceilings: (name, peak-per-cycle metric, FLOPs per counted operation, drawn when).
# "always" ceilings are drawn whenever the report holds them; the others only when a
# placed kernel did that kind of work.
_CEILINGS = (
    ("Tensor bf16/fp16, dense (HGMMA)", "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained", 1.0, "always"),
    ("Tensor fp8, dense", "sm__ops_path_tensor_src_fp8_sparsity_off.sum.peak_sustained", 1.0, "fp8"),
    ("FP32 (FFMA)", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", 2.0, "always"),
    ("FP64 (DFMA)", "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained", 2.0, "fp64"),
)


def required_metrics() -> list[str]:
    """Every metric the roofline reads (what a profile must collect to draw one)."""
    names = [DURATION, DRAM_READ, DRAM_WRITE, CYCLES, CYCLES_FALLBACK, SM_CLOCK_MEASURED, DRAM_CLOCK, DRAM_PEAK_PER_CYCLE]
    names += [metric for terms in PIPE_TERMS.values() for metric, _ in terms]
    names += list(TENSOR_SOURCES)
    names += [metric for _, metric, _, _ in _CEILINGS]
    return list(dict.fromkeys(names))


@dataclass
class Ceiling:
    name: str
    kind: str                 # "compute" (FLOP/s) or "memory" (byte/s)
    value: float              # FLOP/s or byte/s
    source: str               # how it was computed, with the metric names and numbers


@dataclass
class Placement:
    """One kernel's point: None where the report did not hold what it needs."""

    label: str
    role: str                           # "A", "B", or the kernel's position
    flops: float | None
    flops_by_pipe: dict[str, float | None]
    dram_bytes: float | None
    duration_s: float | None
    sm_clock_hz: float | None           # measured during the kernel
    missing: list[str] = field(default_factory=list)

    @property
    def flop_rate(self) -> float | None:
        if self.flops is None or not self.duration_s:
            return None
        return self.flops / self.duration_s

    @property
    def intensity(self) -> float | None:
        if self.flops is None or not self.dram_bytes:
            return None
        return self.flops / self.dram_bytes

    @property
    def placed(self) -> bool:
        """True when the point can be drawn (positive coordinates on log axes)."""
        return bool(self.flop_rate) and bool(self.intensity)

    @property
    def uses_tensor(self) -> bool:
        return bool(self.flops_by_pipe.get("tensor"))


@dataclass
class Roofline:
    ceilings: list[Ceiling]
    placements: list[Placement]
    notes: list[str] = field(default_factory=list)

    @property
    def memory(self) -> Ceiling | None:
        return next((c for c in self.ceilings if c.kind == "memory"), None)

    def roof_for(self, p: Placement) -> Ceiling | None:
        """The compute ceiling a kernel is held against: the tensor roof for tensor work, else FP32."""
        compute = [c for c in self.ceilings if c.kind == "compute"]
        if not compute:
            return None
        if p.uses_tensor:
            return max(compute, key=lambda c: c.value)
        fp32 = [c for c in compute if c.name.startswith("FP32")]
        return fp32[0] if fp32 else max(compute, key=lambda c: c.value)

    def attainable(self, p: Placement) -> float | None:
        """min(compute roof, DRAM bandwidth x intensity) at the kernel's intensity."""
        roof, mem = self.roof_for(p), self.memory
        if roof is None or mem is None or p.intensity is None:
            return None
        return min(roof.value, mem.value * p.intensity)

    def fraction_of_roof(self, p: Placement) -> float | None:
        top = self.attainable(p)
        return p.flop_rate / top if top and p.flop_rate is not None else None


def _number(profile: KernelProfile, name: str) -> float | None:
    v = profile.value(name)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def place(profile: KernelProfile, label: str, role: str) -> Placement:
    missing: list[str] = []
    cycles = _number(profile, CYCLES)
    if cycles is None:
        cycles = _number(profile, CYCLES_FALLBACK)
    by_pipe: dict[str, float | None] = {}
    for pipe, terms in PIPE_TERMS.items():
        rates = [(_number(profile, m), k) for m, k in terms]
        if cycles is None or any(r is None for r, _ in rates):
            by_pipe[pipe] = None
            missing.extend(m for (r, _), (m, _) in zip(rates, terms) if r is None)
        else:
            by_pipe[pipe] = sum(r * k for r, k in rates) * cycles
    tensor = [_number(profile, m) for m in TENSOR_SOURCES]
    if all(t is None for t in tensor):
        by_pipe["tensor"] = None
        missing.append("sm__ops_path_tensor_src_*.sum")
    else:
        by_pipe["tensor"] = sum(t for t in tensor if t is not None)
    if cycles is None:
        missing.append(CYCLES)
    known = [v for v in by_pipe.values() if v is not None]
    flops = sum(known) if known else None
    read, write = _number(profile, DRAM_READ), _number(profile, DRAM_WRITE)
    if read is None:
        missing.append(DRAM_READ)
    if write is None:
        missing.append(DRAM_WRITE)
    duration_ns = _number(profile, DURATION)
    if duration_ns is None:
        missing.append(DURATION)
    return Placement(
        label=label,
        role=role,
        flops=flops,
        flops_by_pipe=by_pipe,
        dram_bytes=read + write if read is not None and write is not None else None,
        duration_s=duration_ns * 1e-9 if duration_ns is not None else None,
        sm_clock_hz=_number(profile, SM_CLOCK_MEASURED),
        missing=sorted(set(missing)),
    )


def _sm_clock(profiles: list[KernelProfile]) -> tuple[float | None, str]:
    for p in profiles:
        if p.device.max_sm_clock_hz:
            return p.device.max_sm_clock_hz, "device attribute: maximum SM clock"
    measured = [c for c in (_number(p, SM_CLOCK_MEASURED) for p in profiles) if c]
    if measured:
        return max(measured), f"highest measured {SM_CLOCK_MEASURED} (the device's maximum clock is not in the report)"
    return None, ""


def device_ceilings(profiles: list[KernelProfile], placements: list[Placement]) -> tuple[list[Ceiling], list[str]]:
    """Ceilings from the first profile holding each peak metric; notes say what is missing."""
    notes: list[str] = []
    ceilings: list[Ceiling] = []
    if not profiles:
        return ceilings, notes
    clock, clock_source = _sm_clock(profiles)
    wanted = {"always"}
    if any(p.flops_by_pipe.get("fp64") for p in placements) or any(
        _number(q, "sm__ops_path_tensor_src_fp64.sum") for q in profiles
    ):
        wanted.add("fp64")
    if any(_number(q, "sm__ops_path_tensor_src_fp8_sparsity_off.sum") for q in profiles):
        wanted.add("fp8")
    for name, metric, per_op, when in _CEILINGS:
        if when not in wanted:
            continue
        per_cycle = next((v for v in (_number(p, metric) for p in profiles) if v is not None), None)
        if per_cycle is None or clock is None:
            notes.append(f"{name} ceiling not drawn: {metric if per_cycle is None else 'SM clock'} not collected")
            continue
        flops_per_cycle = per_cycle * per_op
        factor = f" x {per_op:g} FLOP per instruction" if per_op != 1.0 else ""
        ceilings.append(Ceiling(
            name=name,
            kind="compute",
            value=flops_per_cycle * clock,
            source=f"{metric} = {per_cycle:,.0f} per cycle{factor} x SM clock {clock / 1e9:.3f} GHz ({clock_source})",
        ))
    per_cycle = next((v for v in (_number(p, DRAM_PEAK_PER_CYCLE) for p in profiles) if v is not None), None)
    dram_clocks = [c for c in (_number(p, DRAM_CLOCK) for p in profiles) if c]
    if per_cycle is None or not dram_clocks:
        missing = DRAM_PEAK_PER_CYCLE if per_cycle is None else DRAM_CLOCK
        notes.append(f"DRAM ceiling not drawn: {missing} not collected")
    else:
        dram_clock = max(dram_clocks)
        ceilings.append(Ceiling(
            name="DRAM",
            kind="memory",
            value=per_cycle * dram_clock,
            source=f"{DRAM_PEAK_PER_CYCLE} = {per_cycle:,.0f} bytes per cycle x DRAM clock "
                   f"{dram_clock / 1e9:.3f} GHz (measured {DRAM_CLOCK})",
        ))
    devices = {p.device.name for p in profiles if p.device.name}
    if len(devices) > 1:
        notes.append(f"kernels ran on different devices ({', '.join(sorted(devices))}); "
                     f"the ceilings are those of {profiles[0].device.name}")
    return ceilings, notes


def _missing_kinds(missing: list[str]) -> str:
    """Missing metric names, summarised by what they were needed for."""
    kinds = []
    if any("sass_thread_inst_executed" in m or "ops_path_tensor" in m or "cycles_elapsed" in m for m in missing):
        kinds.append("FLOP counts")
    if DRAM_READ in missing or DRAM_WRITE in missing:
        kinds.append("DRAM bytes")
    if DURATION in missing:
        kinds.append("duration")
    return ", ".join(kinds)


def roofline(profiles: list[KernelProfile], labels: list[str], roles: list[str]) -> Roofline:
    placements = [place(p, label, role) for p, label, role in zip(profiles, labels, roles)]
    ceilings, notes = device_ceilings(profiles, placements)
    how = f"profile with --set full, or add the ncu sections {SECTIONS_NEEDED.split(' (')[0]}"
    if not ceilings and not any(p.placed for p in placements):
        return Roofline(ceilings, placements, [f"No roofline: the report holds none of the roofline metrics; {how}."])
    for p in placements:
        if not p.placed:
            what = (f"{_missing_kinds(p.missing)} not collected" if p.missing
                    else "no floating-point work or no DRAM traffic measured")
            notes.append(f"{p.role} not placed on the roofline: {what}.")
        elif any(v is None for v in p.flops_by_pipe.values()):
            left_out = [k for k, v in p.flops_by_pipe.items() if v is None]
            notes.append(f"{p.role}: FLOPs leave out {', '.join(left_out)} work (its counters were not collected).")
    if any(p.missing for p in placements):
        notes.append(f"To collect what is missing, {how}.")
    return Roofline(ceilings=ceilings, placements=placements, notes=notes)
