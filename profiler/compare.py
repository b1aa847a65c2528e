"""Compare two profiles metric by metric (joined by catalog id, never by position)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelscope.profiler.catalog import Catalog, MetricDef, evaluate, load_catalog
from kernelscope.profiler.record import KernelProfile

# Relative changes smaller than this are called "same" when marking the better side.
SAME_WITHIN = 0.005


@dataclass
class MetricReading:
    """One catalog metric of one profile."""

    definition: MetricDef
    value: float | int | str | None     # None: not collected

    @property
    def collected(self) -> bool:
        return self.value is not None


@dataclass
class MetricDelta:
    definition: MetricDef
    a: float | int | str | None
    b: float | int | str | None

    @property
    def numeric(self) -> bool:
        return isinstance(self.a, (int, float)) and isinstance(self.b, (int, float))

    @property
    def change(self) -> float | None:
        """a - b, when both are numbers."""
        return float(self.a) - float(self.b) if self.numeric else None

    @property
    def relative(self) -> float | None:
        """(a - b) / |b|; None when b is 0 or either side is missing."""
        if not self.numeric or float(self.b) == 0.0:
            return None
        return (float(self.a) - float(self.b)) / abs(float(self.b))

    @property
    def better(self) -> str | None:
        """'a', 'b', 'same', or None (no direction, or a side missing)."""
        if not self.numeric or self.definition.better == "none":
            return None
        a, b = float(self.a), float(self.b)
        scale = max(abs(a), abs(b))
        if scale == 0.0 or abs(a - b) <= SAME_WITHIN * scale:
            return "same"
        lower_wins = self.definition.better == "lower"
        return "a" if (a < b) == lower_wins else "b"


@dataclass
class OpcodeDelta:
    opcode: str
    count_a: float | None
    count_b: float | None
    share_a: float | None      # fraction of all executed instructions, 0..1
    share_b: float | None

    @property
    def share_change(self) -> float | None:
        if self.share_a is None or self.share_b is None:
            return None
        return self.share_a - self.share_b

    @property
    def relative(self) -> float | None:
        if self.count_a is None or self.count_b is None or self.count_b == 0:
            return None
        return (self.count_a - self.count_b) / self.count_b


def comparability_warnings(a: KernelProfile, b: KernelProfile) -> list[str]:
    """Facts that make a side-by-side comparison less direct; said, not hidden."""
    notes = []
    if a.device.name and b.device.name and a.device.name != b.device.name:
        notes.append(f"different devices: {a.device.name} vs {b.device.name}")
    if a.session.tool != b.session.tool:
        notes.append(f"different sources: {a.session.tool} vs {b.session.tool}")
    if a.session.clock_control != b.session.clock_control:
        notes.append(f"clock control differs: {a.session.clock_control} vs {b.session.clock_control}")
    ca, cb = a.device.sm_clock_hz, b.device.sm_clock_hz
    if ca and cb and abs(ca - cb) / max(ca, cb) > 0.05:
        notes.append(f"measured SM clocks differ: {ca / 1e9:.2f} vs {cb / 1e9:.2f} GHz (compare cycles, not time)")
    return notes


@dataclass
class Comparison:
    a: KernelProfile
    b: KernelProfile
    views: dict[str, list[MetricDelta]]
    view_titles: dict[str, str]
    opcodes: list[OpcodeDelta] = field(default_factory=list)
    verdict: "Verdict | None" = None


def readings(profile: KernelProfile, catalog: Catalog, views: list[str] | None = None) -> dict[str, list[MetricReading]]:
    """The catalog views of one profile."""
    names = views or catalog.view_names()
    catalog.metrics_of(names)  # validates the names
    return {v: [MetricReading(catalog.metrics[m], evaluate(catalog.metrics[m], profile, catalog)) for m in catalog.views[v].metrics] for v in names}


def compare(
    a: KernelProfile,
    b: KernelProfile,
    catalog: Catalog | None = None,
    views: list[str] | None = None,
    top_opcodes: int = 15,
) -> Comparison:
    catalog = catalog or load_catalog()
    names = views or catalog.view_names()
    catalog.metrics_of(names)
    out: dict[str, list[MetricDelta]] = {}
    for view in names:
        out[view] = [
            MetricDelta(catalog.metrics[m], evaluate(catalog.metrics[m], a, catalog), evaluate(catalog.metrics[m], b, catalog))
            for m in catalog.views[view].metrics
        ]
    return Comparison(
        a=a,
        b=b,
        views=out,
        view_titles={v: catalog.views[v].title for v in names},
        opcodes=opcode_deltas(a, b, top_opcodes),
        verdict=verdict(a, b, catalog),
    )


def opcode_deltas(a: KernelProfile, b: KernelProfile, top: int | None = 15) -> list[OpcodeDelta]:
    """Opcodes ordered by how much their share of the instruction mix differs."""
    mix_a, mix_b = a.instruction_mix, b.instruction_mix
    if not mix_a and not mix_b:
        return []
    total_a, total_b = sum(mix_a.values()), sum(mix_b.values())
    rows = []
    for op in sorted(set(mix_a) | set(mix_b)):
        count_a = mix_a.get(op, 0.0) if mix_a else None
        count_b = mix_b.get(op, 0.0) if mix_b else None
        rows.append(
            OpcodeDelta(
                opcode=op,
                count_a=count_a,
                count_b=count_b,
                share_a=count_a / total_a if count_a is not None and total_a else None,
                share_b=count_b / total_b if count_b is not None and total_b else None,
            )
        )

    def weight(row: OpcodeDelta) -> tuple[float, float]:
        share = abs(row.share_change) if row.share_change is not None else max(row.share_a or 0.0, row.share_b or 0.0)
        count = abs((row.count_a or 0.0) - (row.count_b or 0.0))
        return (share, count)

    # Ties (equal changes, common in small kernels) are broken by name: output must not
    # depend on the hash seed.
    rows.sort(key=lambda row: (tuple(-w for w in weight(row)), row.opcode))
    return rows[:top] if top else rows


@dataclass
class Verdict:
    """Who is faster and by how much: the headline of every comparison."""

    a_ns: float | None
    b_ns: float | None

    @property
    def known(self) -> bool:
        return self.a_ns is not None and self.b_ns is not None and self.a_ns > 0 and self.b_ns > 0

    @property
    def faster(self) -> str | None:
        """'a', 'b' or 'same' (within SAME_WITHIN); None when a duration is missing."""
        if not self.known:
            return None
        if abs(self.a_ns - self.b_ns) <= SAME_WITHIN * max(self.a_ns, self.b_ns):
            return "same"
        return "a" if self.a_ns < self.b_ns else "b"

    @property
    def gap_ns(self) -> float | None:
        """A's time minus B's: positive when A is slower."""
        return self.a_ns - self.b_ns if self.known else None

    @property
    def slower_by(self) -> float | None:
        """How much longer the slower kernel takes, relative to the faster one (0.12: 12% slower)."""
        if not self.known:
            return None
        return max(self.a_ns, self.b_ns) / min(self.a_ns, self.b_ns) - 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"faster": self.faster, "a_ns": self.a_ns, "b_ns": self.b_ns, "gap_ns": self.gap_ns,
                "slower_by": self.slower_by}


def verdict(a: KernelProfile, b: KernelProfile, catalog: Catalog | None = None) -> Verdict:
    catalog = catalog or load_catalog()
    durations = []
    for profile in (a, b):
        value = evaluate(catalog.metrics["duration"], profile, catalog) if "duration" in catalog.metrics else None
        durations.append(float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None)
    return Verdict(*durations)
