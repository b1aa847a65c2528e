"""Where a kernel's instructions and time sit in its source: one record per source line.

A LineProfile holds, per `file:line`, the SASS instructions the line produced (opcode counts and
listing) and, from a profile with SourceCounters, the executed warp-level instructions and the
PC samples per stall reason. Instructions without line information are kept per function as
unmapped, never attributed to a line. The same shape comes from a compile (`inspect --lines`:
instructions only) and from an ncu report (`show --lines`), and round-trips through JSON
(schema `kernelscope.lines`, docs/json-format.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterable

from kernelscope.profiler.line_sites import LineSite, find_sites
from kernelscope.toolchain.sass_lines import opcode_class

LINES_SCHEMA = "kernelscope.lines"
LINES_SCHEMA_VERSION = 1
# SourceCounters' per-instruction excess: global sectors beyond an ideal access's (scattered or
# strided lanes) and shared-memory wavefronts beyond a conflict-free access's (bank conflicts).
EXCESS_KINDS = ("global_sectors", "shared_wavefronts")
# SASS instructions kept per line in the JSON, hottest first (the totals cover all of them).
SASS_PER_LINE = 12


@dataclass
class InstructionCounters:
    """One SASS instruction with what the profile measured at its address (None: not collected)."""

    function: str
    offset: int
    text: str
    opcode: str
    executed: float | None = None
    samples: dict[str, float] = field(default_factory=dict)   # stall reason -> PC samples
    # What the instruction moved beyond what its access needed (EXCESS_KINDS -> count; only non-zero).
    excess: dict[str, float] = field(default_factory=dict)
    target: int | None = None           # a branch's target offset in the function (None: not a branch, or unknown)

    @property
    def base_opcode(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def sample_total(self) -> float:
        return sum(self.samples.values())


def _summed(counts: Iterable[dict[str, float]]) -> dict[str, float]:
    """Per-key sums of the instructions' counts."""
    out: dict[str, float] = {}
    for c in counts:
        for key, n in c.items():
            out[key] = out.get(key, 0.0) + n
    return out


@dataclass
class LineRecord:
    """One source line (or, with `line` None, one function's instructions that carry no line)."""

    file: str | None
    line: int | None
    function: str | None = None          # set only on unmapped records
    instructions: list[InstructionCounters] = field(default_factory=list)
    # Where in the SASS the line's instructions sit (profiler/line_sites.py), in address order per
    # function; empty for unmapped records.
    sites: list[LineSite] = field(default_factory=list)

    @property
    def key(self) -> tuple:
        return (self.file, self.line) if self.line is not None else ("", self.function)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else f"{self.function} (no line information)"

    @property
    def count(self) -> int:
        return len(self.instructions)

    @property
    def executed(self) -> float | None:
        values = [i.executed for i in self.instructions if i.executed is not None]
        return sum(values) if values else None

    @property
    def samples(self) -> dict[str, float]:
        return _summed(i.samples for i in self.instructions)

    @property
    def sample_total(self) -> float:
        return sum(i.sample_total for i in self.instructions)

    @property
    def excess(self) -> dict[str, float]:
        return _summed(i.excess for i in self.instructions)

    def opcodes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in self.instructions:
            out[i.base_opcode] = out.get(i.base_opcode, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def classes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in self.instructions:
            c = opcode_class(i.base_opcode)
            out[c] = out.get(c, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class SourceFile:
    """A source file the line information names, and whether its text here is what was compiled."""

    path: str                          # as the line information records it
    sha256: str | None = None          # of the text that was compiled (imported into the report, or read now)
    text: str | None = None
    local_path: str | None = None      # where it is found on this machine, when found
    status: str = "missing"            # "same", "moved", "changed", "unverified", "missing"
    stale_lines: list[int] = field(default_factory=list)   # lines whose text differs here

    def line_text(self, line: int) -> str | None:
        if self.text is None or line < 1:
            return None
        lines = self.text.splitlines()
        return lines[line - 1] if line <= len(lines) else None


@dataclass
class LineProfile:
    """Per-line records of one kernel (or of the kernels of one NVTX range)."""

    kernel: str
    origin: str                                  # "static" (a compile) or "ncu" (a report)
    records: list[LineRecord] = field(default_factory=list)
    files: dict[str, SourceFile] = field(default_factory=dict)
    has_source_counters: bool = False
    notes: list[str] = field(default_factory=list)

    # ----------------------------------------------------------------- totals

    @property
    def mapped(self) -> list[LineRecord]:
        return [r for r in self.records if r.line is not None]

    @property
    def unmapped(self) -> list[LineRecord]:
        return [r for r in self.records if r.line is None]

    @property
    def has_line_info(self) -> bool:
        return bool(self.mapped)

    def total_samples(self) -> float:
        return sum(r.sample_total for r in self.records)

    def total_instructions(self) -> int:
        return sum(r.count for r in self.records)

    def mapped_sample_share(self) -> float | None:
        """Share of the PC samples whose instruction has a source line (None: no samples)."""
        total = self.total_samples()
        if not total:
            return None
        return sum(r.sample_total for r in self.mapped) / total

    def mapped_instruction_share(self) -> float | None:
        total = self.total_instructions()
        return sum(r.count for r in self.mapped) / total if total else None

    def reasons(self) -> list[str]:
        """Stall reasons with samples, most samples first."""
        totals: dict[str, float] = {}
        for r in self.records:
            for reason, n in r.samples.items():
                totals[reason] = totals.get(reason, 0.0) + n
        return [k for k, v in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])) if v > 0]

    def hottest(self, limit: int | None = None, include_unmapped: bool = True) -> list[LineRecord]:
        """Most samples first (with no samples: most executed, then most instructions)."""
        pool = self.records if include_unmapped else self.mapped

        def weight(r: LineRecord):
            return (-r.sample_total, -(r.executed or 0.0), -r.count, str(r.key))

        ordered = sorted(pool, key=weight)
        return ordered[:limit] if limit else ordered

    # ----------------------------------------------------------------- building

    @classmethod
    def build(cls, kernel: str, origin: str, instructions: Iterable[tuple[str | None, int | None, InstructionCounters]],
              files: dict[str, SourceFile], has_source_counters: bool) -> "LineProfile":
        records: dict[tuple, LineRecord] = {}
        for path, line, inst in instructions:
            if line is None:
                key: tuple = ("", inst.function)
                rec = records.setdefault(key, LineRecord(file=None, line=None, function=inst.function))
            else:
                key = (path, line)
                rec = records.setdefault(key, LineRecord(file=path, line=line))
            rec.instructions.append(inst)
        _assign_sites(records)
        return cls(kernel=kernel, origin=origin, records=list(records.values()), files=files,
                   has_source_counters=has_source_counters)

    @classmethod
    def merge(cls, name: str, parts: list["LineProfile"]) -> "LineProfile":
        """The kernels of one NVTX range as one profile (records of one line add up)."""
        if len(parts) == 1:
            return parts[0]
        records: dict[tuple, LineRecord] = {}
        files: dict[str, SourceFile] = {}
        notes: list[str] = []
        for p in parts:
            files.update(p.files)
            notes.extend(n for n in p.notes if n not in notes)
            for r in p.records:
                rec = records.setdefault(r.key, LineRecord(file=r.file, line=r.line, function=r.function))
                rec.instructions.extend(r.instructions)
                rec.sites.extend(r.sites)
        return cls(kernel=name, origin=parts[0].origin, records=list(records.values()), files=files,
                   has_source_counters=all(p.has_source_counters for p in parts), notes=notes)

    # ----------------------------------------------------------------- JSON

    def to_dict(self, sass_per_line: int = SASS_PER_LINE) -> dict[str, Any]:
        def inst(i: InstructionCounters) -> dict[str, Any]:
            d: dict[str, Any] = {"function": i.function, "offset": i.offset, "text": i.text, "opcode": i.opcode}
            if self.has_source_counters:
                d["executed"] = i.executed
                d["samples"] = {k: v for k, v in i.samples.items() if v}
            if i.excess:
                d["excess"] = dict(i.excess)
            return d

        def record(r: LineRecord) -> dict[str, Any]:
            # Placeholders read back from a document (offset -1) carry totals, not instructions.
            ordered = sorted((i for i in r.instructions if i.offset >= 0),
                             key=lambda i: (-i.sample_total, -(i.executed or 0), i.offset))
            d: dict[str, Any] = {"file": r.file, "line": r.line, "instructions": r.count, "opcodes": r.opcodes(),
                                 "classes": r.classes()}
            if r.line is None:
                d["function"] = r.function
            if self.has_source_counters:
                d["executed"] = r.executed
                d["samples"] = {k: v for k, v in sorted(r.samples.items()) if v}
                d["sample_total"] = r.sample_total
            if r.excess:
                d["excess"] = r.excess
            d["sass"] = [inst(i) for i in ordered[:sass_per_line]]
            d["sass_left_out"] = r.count - len(d["sass"])
            if r.line is not None:
                d["sites"] = [site.to_dict() for site in r.sites]
            return d

        return {
            "schema": LINES_SCHEMA,
            "schema_version": LINES_SCHEMA_VERSION,
            "kernel": self.kernel,
            "origin": self.origin,
            "has_line_info": self.has_line_info,
            "has_source_counters": self.has_source_counters,
            "total_instructions": self.total_instructions(),
            "total_samples": self.total_samples() if self.has_source_counters else None,
            "mapped_sample_share": self.mapped_sample_share(),
            "mapped_instruction_share": self.mapped_instruction_share(),
            "files": {p: {"sha256": f.sha256, "status": f.status, "local_path": f.local_path,
                          "stale_lines": f.stale_lines} for p, f in self.files.items()},
            "notes": list(self.notes),
            "lines": [record(r) for r in self.hottest()],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LineProfile":
        """Read back a `to_dict` document. Lines keep the SASS the document listed; their totals
        (instructions, executed, samples) are the document's, carried by the listed instructions
        plus one remainder entry per line."""
        if d.get("schema") != LINES_SCHEMA or d.get("schema_version") != LINES_SCHEMA_VERSION:
            raise ValueError(f"per-line records of schema {d.get('schema')!r} version {d.get('schema_version')!r}; "
                             f"this kernelscope reads {LINES_SCHEMA!r} version {LINES_SCHEMA_VERSION}")
        counters = bool(d.get("has_source_counters"))
        records = []
        for r in d.get("lines", []):
            rec = LineRecord(file=r.get("file"), line=r.get("line"), function=r.get("function"),
                             sites=[LineSite.from_dict(site) for site in r.get("sites") or []])
            listed = [InstructionCounters(function=i["function"], offset=i["offset"], text=i["text"],
                                          opcode=i["opcode"], executed=i.get("executed"),
                                          samples=dict(i.get("samples") or {}), excess=dict(i.get("excess") or {}))
                      for i in r.get("sass", [])]
            rec.instructions.extend(listed)
            left = int(r.get("instructions", len(listed))) - len(listed)
            if left > 0:
                # The instructions the document left out, as placeholders carrying the rest of the totals.
                opcodes = dict(r.get("opcodes") or {})
                for i in listed:
                    opcodes[i.base_opcode] = opcodes.get(i.base_opcode, 0) - 1
                rest_exec = (r.get("executed") or 0.0) - sum(i.executed or 0.0 for i in listed) if counters else None
                rest_samples = {k: v - sum(i.samples.get(k, 0.0) for i in listed)
                                for k, v in (r.get("samples") or {}).items()}
                rest_excess = {k: v - sum(i.excess.get(k, 0.0) for i in listed)
                               for k, v in (r.get("excess") or {}).items()}
                first = True
                for op, n in opcodes.items():
                    for _ in range(max(0, n)):
                        rec.instructions.append(InstructionCounters(
                            function=rec.function or "", offset=-1, text="(not listed)", opcode=op,
                            executed=(rest_exec if first else 0.0) if counters else None,
                            samples={k: v for k, v in rest_samples.items() if v} if first else {},
                            excess={k: v for k, v in rest_excess.items() if v} if first else {}))
                        first = False
            records.append(rec)
        files = {p: SourceFile(path=p, sha256=f.get("sha256"), status=f.get("status", "missing"),
                               local_path=f.get("local_path"), stale_lines=list(f.get("stale_lines") or []))
                 for p, f in (d.get("files") or {}).items()}
        return cls(kernel=d.get("kernel", ""), origin=d.get("origin", ""), records=records, files=files,
                   has_source_counters=counters, notes=list(d.get("notes") or []))


def _assign_sites(records: dict[tuple, LineRecord]) -> None:
    """Each mapped record's sites, from every function's whole listing (placeholders read back from
    a document, offset -1, have no place in it)."""
    key_of: dict[int, tuple] = {}
    listings: dict[str, list[InstructionCounters]] = {}
    for key, rec in records.items():
        for inst in rec.instructions:
            if inst.offset < 0:
                continue
            listings.setdefault(inst.function, []).append(inst)
            if rec.line is not None:
                key_of[id(inst)] = key
    for function, insts in listings.items():
        insts.sort(key=lambda i: i.offset)
        sites = find_sites(function, insts, lambda i: key_of.get(id(i)), lambda key: f"{key[0]}:{key[1]}")
        for key, found in sites.items():
            records[key].sites.extend(found)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
