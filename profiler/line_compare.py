"""Two kernels' per-line records side by side.

Per line when both come from one source file (two configs, two commits of a kernel): the lines
are joined by file and line number. Otherwise (a reference in another file, in CUDA C++, or
without line information) lines cannot be paired, and the comparison is per source file and per
opcode class, each side's share of its own samples (or of its instructions, for a compile).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from kernelscope.toolchain.sass_lines import opcode_class
from kernelscope.profiler.line_sites import LineSite
from kernelscope.profiler.source_lines import LineProfile, LineRecord


def weight(profile: LineProfile, record: LineRecord) -> float:
    """A record's share of its kernel: of the PC samples when collected, else of the instructions."""
    if profile.has_source_counters:
        total = profile.total_samples()
        return record.sample_total / total if total else 0.0
    total = profile.total_instructions()
    return record.count / total if total else 0.0


def site_share(profile: LineProfile, site: LineSite, use_samples: bool) -> float:
    """A site's share of its kernel: of the PC samples, else of the instructions."""
    total = profile.total_samples() if use_samples else profile.total_instructions()
    return (site.sample_total if use_samples else site.instructions) / total if total else 0.0


def neighbour_identity(profile: LineProfile, label: str | None) -> str | None:
    """A site's neighbour (a recorded `file:line`) with its file named as file_identity names it."""
    if not label:
        return None
    path, _, line = label.rpartition(":")
    return f"{file_identity(profile, path)}:{line}"


def file_identity(profile: LineProfile, path: str | None) -> str | None:
    """The same file across two profiles: its content hash's local match, else its path's last two parts."""
    if path is None:
        return None
    f = profile.files.get(path)
    if f is not None and f.local_path:
        return f.local_path
    return str(PurePath(*PurePath(path).parts[-2:]))


@dataclass
class LineRow:
    file: str                 # identity shared by both sides
    line: int
    a: LineRecord | None
    b: LineRecord | None
    a_share: float
    b_share: float

    @property
    def change(self) -> float:
        return self.a_share - self.b_share


@dataclass
class SitePair:
    """The k-th site of one line on each side (sites in address order per function)."""

    a: LineSite
    b: LineSite
    a_share: float
    b_share: float

    @property
    def change(self) -> float:
        return self.a_share - self.b_share


def site_pairs(row: LineRow, a: LineProfile, b: LineProfile, unit: str) -> list[SitePair] | None:
    """A line's sites paired in address order when both sides compiled it to as many places (more
    than one) in one function each; None otherwise (no pairing is claimed)."""
    if row.a is None or row.b is None or len(row.a.sites) != len(row.b.sites) or len(row.a.sites) < 2:
        return None
    if len({s.function for s in row.a.sites}) > 1 or len({s.function for s in row.b.sites}) > 1:
        return None

    samples = unit == "samples"
    ordered_a = sorted(row.a.sites, key=lambda s: s.first)
    ordered_b = sorted(row.b.sites, key=lambda s: s.first)
    return [SitePair(sa, sb, site_share(a, sa, samples), site_share(b, sb, samples))
            for sa, sb in zip(ordered_a, ordered_b)]


@dataclass
class ShareRow:
    name: str                 # a source file, "<function> (no line information)", or an opcode class
    a_share: float | None     # None: that side has nothing here
    b_share: float | None


@dataclass
class LineComparison:
    mode: str                           # "per-line" or "per-file-and-class"
    a: LineProfile
    b: LineProfile
    unit: str                           # "samples" or "instructions"
    lines: list[LineRow] = field(default_factory=list)
    files: list[ShareRow] = field(default_factory=list)
    classes: list[ShareRow] = field(default_factory=list)
    why: str = ""

    def to_dict(self, limit: int = 40) -> dict[str, Any]:
        def rec(r: LineRecord | None) -> dict[str, Any] | None:
            if r is None:
                return None
            return {"instructions": r.count, "executed": r.executed, "sample_total": r.sample_total,
                    "samples": {k: v for k, v in sorted(r.samples.items()) if v}, "opcodes": r.opcodes()}

        def row(r: LineRow) -> dict[str, Any]:
            d = {"file": r.file, "line": r.line, "a_share": r.a_share, "b_share": r.b_share, "a": rec(r.a), "b": rec(r.b)}
            pairs = site_pairs(r, self.a, self.b, self.unit)
            if pairs is not None:
                d["site_pairs"] = [{"a": p.a.to_dict(), "b": p.b.to_dict(), "a_share": p.a_share, "b_share": p.b_share}
                                   for p in pairs]
            return d

        return {
            "mode": self.mode, "unit": self.unit, "why": self.why,
            "a_mapped_sample_share": self.a.mapped_sample_share(),
            "b_mapped_sample_share": self.b.mapped_sample_share(),
            "lines": [row(r) for r in self.lines[:limit]],
            "files": [vars(r) for r in self.files],
            "classes": [vars(r) for r in self.classes],
        }


def _class_shares(profile: LineProfile, use_samples: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in profile.records:
        for i in r.instructions:
            key = opcode_class(i.base_opcode)
            out[key] = out.get(key, 0.0) + (i.sample_total if use_samples else 1.0)
    total = sum(out.values())
    return {k: v / total for k, v in out.items()} if total else {}


def _file_shares(profile: LineProfile) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in profile.records:
        name = file_identity(profile, r.file) if r.line is not None else f"{r.function} (no line information)"
        out[name] = out.get(name, 0.0) + weight(profile, r)
    return out


def _share_rows(a: dict[str, float], b: dict[str, float]) -> list[ShareRow]:
    names = sorted(set(a) | set(b), key=lambda n: -(a.get(n, 0.0) + b.get(n, 0.0)))
    return [ShareRow(n, a.get(n), b.get(n)) for n in names]


def compare_lines(a: LineProfile, b: LineProfile) -> LineComparison:
    use_samples = a.has_source_counters and b.has_source_counters
    unit = "samples" if use_samples else "instructions"
    files_a = {file_identity(a, r.file) for r in a.mapped}
    files_b = {file_identity(b, r.file) for r in b.mapped}
    shared = files_a & files_b
    out = LineComparison(mode="per-line" if shared else "per-file-and-class", a=a, b=b, unit=unit)
    out.files = _share_rows(_file_shares(a), _file_shares(b))
    out.classes = _share_rows(_class_shares(a, use_samples), _class_shares(b, use_samples))
    if not shared:
        if not a.has_line_info or not b.has_line_info:
            side = "A" if not a.has_line_info else "B"
            out.why = f"{side} has no line information: compared per source file and opcode class, not per line"
        else:
            out.why = ("A and B come from different source files: compared per source file and opcode class, "
                       "not per line")
        return out
    rows: dict[tuple[str, int], LineRow] = {}

    def share(p: LineProfile, r: LineRecord) -> float:
        # Both sides in one unit: samples only when both have them.
        total = p.total_samples() if use_samples else p.total_instructions()
        return (r.sample_total if use_samples else r.count) / total if total else 0.0

    for side, p in (("a", a), ("b", b)):
        for r in p.mapped:
            ident = file_identity(p, r.file)
            if ident not in shared:
                continue
            row = rows.setdefault((ident, r.line), LineRow(ident, r.line, None, None, 0.0, 0.0))
            setattr(row, side, r)
            setattr(row, f"{side}_share", share(p, r))
    out.lines = sorted(rows.values(), key=lambda r: (-max(r.a_share, r.b_share), -abs(r.change), r.file, r.line))
    out.why = f"both come from {', '.join(sorted(shared))}: lines joined by file and line number"
    return out
