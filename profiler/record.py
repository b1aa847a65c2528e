"""The one record type for a profiled (or statically inspected) kernel: KernelProfile.

A profile from an ncu report, from a live `kernelscope profile` run and from the
compile-only `inspect` path all have this shape, so `diff`, the rules and the gate
work on any of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass
class Metric:
    """One raw metric as the source reported it. `value` is a number or a string."""

    value: float | int | str
    unit: str = ""


@dataclass
class DeviceInfo:
    name: str | None = None
    sm_count: int | None = None
    compute_capability: str | None = None
    max_sm_clock_hz: float | None = None      # device attribute (boost)
    sm_clock_hz: float | None = None          # measured during the profiled launch
    memory_clock_hz: float | None = None


@dataclass
class Session:
    """How the numbers were collected. Unknown facts stay None, never guessed."""

    tool: str = "ncu"                 # "ncu" or "static" (compile-only)
    tool_version: str | None = None   # e.g. "2025.3.1.0 (build 36398880)"
    command_line: str | None = None
    clock_control: str | None = None  # "base", "none", ... as ncu was told
    cache_control: str | None = None  # "all" (flush before each pass) or "none"
    replay_passes: int | None = None


@dataclass
class NcuRuleResult:
    """What one of Nsight Compute's own rules said of a kernel (read from the report).

    `kind` is ncu's message type: "ok", "optimization", "warning", "error" or "none".
    `speedup` is ncu's estimated speedup in % ("local": of the part the rule looks at,
    "global": of the whole kernel), None when the rule gave no estimate.
    """

    rule: str                         # ncu rule identifier, e.g. "UncoalescedGlobalAccess"
    section: str                      # the section it belongs to, e.g. "SourceCounters"
    name: str                         # the rule's display name
    title: str                        # the message title ("" when the rule gave none)
    message: str
    kind: str
    speedup: float | None = None
    speedup_kind: str | None = None   # "local", "global" or None
    focus_metrics: list[dict[str, Any]] = field(default_factory=list)   # name, value, info

    @property
    def advice(self) -> bool:
        """True when ncu suggests something (an optimization or warning message)."""
        return self.kind in ("optimization", "warning")

    @property
    def label(self) -> str:
        return f"{self.rule}: {self.title}" if self.title else self.rule


@dataclass
class KernelProfile:
    """One kernel launch, or one NVTX range of launches, or one compiled kernel."""

    source: str                     # report path, or "static:<target>"
    index: int                      # position in the source (report order)
    kind: str                       # "kernel", "nvtx-range", "merged" (diff --merge) or "static"
    name: str                       # function name (short, as ncu shows it)
    demangled_name: str
    mangled_name: str | None = None
    nvtx_ranges: list[str] = field(default_factory=list)
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    cluster: tuple[int, int, int] | None = None
    device: DeviceInfo = field(default_factory=DeviceInfo)
    session: Session = field(default_factory=Session)
    metrics: dict[str, Metric] = field(default_factory=dict)
    # Executed warp-level instructions per SASS opcode (HGMMA, BRA, ...).
    # Static profiles hold instruction counts in the binary instead (see `session.tool`).
    instruction_mix: dict[str, float] = field(default_factory=dict)
    # Average warps stalled per issued instruction, by reason (long_scoreboard, gmma, ...).
    stalls: dict[str, float] = field(default_factory=dict)
    launches: int = 1               # >1 when an NVTX range groups several launches
    # Nsight Compute's own rule results for this launch (empty: none in the source).
    ncu_rules: list[NcuRuleResult] = field(default_factory=list)
    # Per-source-line records (profiler.source_lines.LineProfile), read only when asked for
    # (`show --lines`); kept out of to_dict: documents carry them under their own schema.
    source_lines: Any = field(default=None, repr=False, compare=False)
    # PM samples over the launch (profiler.timeline.Timeline), read only when asked for
    # (`show --timeline`); kept out of to_dict like the per-line records.
    timeline: Any = field(default=None, repr=False, compare=False)

    def value(self, metric: str) -> float | int | str | None:
        m = self.metrics.get(metric)
        return None if m is None else m.value

    def to_dict(self, include_metrics: bool = True) -> dict[str, Any]:
        d = asdict(replace(self, source_lines=None, timeline=None))
        d.pop("source_lines")
        d.pop("timeline")
        if not include_metrics:
            d.pop("metrics")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "KernelProfile":
        d = dict(d)
        d.pop("source_lines", None)
        d.pop("timeline", None)
        d["device"] = DeviceInfo(**d.get("device") or {})
        d["session"] = Session(**d.get("session") or {})
        d["metrics"] = {k: Metric(**v) for k, v in (d.get("metrics") or {}).items()}
        d["ncu_rules"] = [NcuRuleResult(**r) for r in d.get("ncu_rules") or []]
        for key in ("grid", "block", "cluster"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        return cls(**d)
