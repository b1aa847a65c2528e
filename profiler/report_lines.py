"""Per-line records from an ncu report: SourceCounters' per-instruction metrics joined with the
SASS-to-source mapping the report carries (a kernel compiled with line information) and the
source text it imported (`--import-source yes`), matched against the files on this machine.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from kernelscope.profiler.source_lines import EXCESS_KINDS, InstructionCounters, LineProfile, SourceFile, sha256_text
from kernelscope.toolchain.sass import instruction_opcode
from kernelscope.toolchain.sass_lines import branch_target

EXECUTED_METRIC = "inst_executed"
# SourceCounters' per-instruction excess, by ncu metric (in the order of EXCESS_KINDS).
EXCESS_METRICS = dict(zip(EXCESS_KINDS, ("derived__memory_l2_theoretical_sectors_global_excessive",
                                         "derived__memory_l1_wavefronts_shared_excessive")))
SAMPLE_METRIC = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+)$")

NO_SOURCE_COUNTERS = ("the report holds no per-instruction stall samples (profile with the SourceCounters section: "
                      "`kernelscope profile` collects it by default, or ncu --section SourceCounters)")
NO_LINE_INFO = ("no instruction maps to a source line: the kernel was compiled without line information "
                "(CuTe DSL: CUTE_DSL_LINEINFO=1, `kernelscope profile` does it by default; CUDA C++: nvcc -lineinfo)")


def _per_pc(metric: Any) -> dict[int, float]:
    if metric is None or metric.num_instances() == 0 or not metric.has_correlation_ids():
        return {}
    ids = metric.correlation_ids()
    return {ids.as_uint64(i): float(metric.as_double(i)) for i in range(metric.num_instances())}


def _branch_offset(text: str, base: int, end: int) -> int | None:
    """A branch's target as an offset in the function: ncu prints absolute addresses."""
    head, _, rest = text.partition(" ")
    target = branch_target(rest if head.startswith("@") else text)
    return target - base if isinstance(target, int) and base <= target <= end else None


def lines_from_action(action: Any, kernel: str) -> LineProfile:
    """One kernel launch's per-line records (instructions without a line stay unmapped)."""
    executed = _per_pc(action.metric_by_name(EXECUTED_METRIC))
    samples: dict[str, dict[int, float]] = {}
    for name in action.metric_names():
        m = SAMPLE_METRIC.match(name)
        if m and not name.endswith("_not_issued"):
            per_pc = _per_pc(action.metric_by_name(name))
            if per_pc:
                samples[m.group(1)] = per_pc
    excess = {kind: _per_pc(action.metric_by_name(name)) for kind, name in EXCESS_METRICS.items()}
    pcs = sorted(set(executed).union(*samples.values()) if samples else executed)
    if not samples:
        # Executed counts alone (some sections give them) say nothing about where time goes.
        profile = LineProfile(kernel=kernel, origin="ncu", has_source_counters=False)
        profile.notes.append(NO_SOURCE_COUNTERS)
        return profile
    base = pcs[0]
    imported = {path: text for path, text in action.source_files().items()}

    def rows() -> Iterable[tuple[str | None, int | None, InstructionCounters]]:
        for pc in pcs:
            info = action.source_info(pc)
            text = " ".join(action.sass_by_pc(pc).split())
            opcode = instruction_opcode(text) or "?"
            inst = InstructionCounters(
                function=kernel, offset=pc - base, text=text, opcode=opcode, executed=executed.get(pc),
                samples={reason: per_pc[pc] for reason, per_pc in samples.items() if per_pc.get(pc)},
                excess={kind: per_pc[pc] for kind, per_pc in excess.items() if per_pc.get(pc)},
                target=_branch_offset(text, base, pcs[-1]))
            if info is None or not info.file_name() or info.line() <= 0:
                yield None, None, inst
            else:
                yield info.file_name(), int(info.line()), inst

    built = list(rows())
    named = {path for path, line, _ in built if line is not None}
    files = {path: locate_source(path, imported.get(path) or None) for path in sorted(named)}
    profile = LineProfile.build(kernel, "ncu", built, files, has_source_counters=True)
    if not named:
        profile.notes.append(NO_LINE_INFO)
    return profile


# ----------------------------------------------------------------------------- local files

def search_roots() -> list[Path]:
    """Where a recorded source path is looked for: the working folder, then kernelscope's own tree
    (a report made on another machine names that machine's paths)."""
    roots = [Path.cwd()]
    package = Path(__file__).resolve().parent.parent
    for root in (package, package.parent):
        if root not in roots:
            roots.append(root)
    return roots


def _candidates(path: str, roots: list[Path]) -> list[Path]:
    """Local files the recorded path may be: itself, then each root joined with ever shorter tails of it."""
    out: list[Path] = []
    recorded = Path(path)
    if recorded.is_file():
        out.append(recorded)
    parts = recorded.parts[1:] if recorded.is_absolute() else recorded.parts
    for k in range(len(parts), 0, -1):
        tail = Path(*parts[-k:])
        for root in roots:
            candidate = root / tail
            if candidate.is_file() and candidate not in out:
                out.append(candidate)
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="surrogateescape")
    except OSError:
        return None


def display_path(local: str | os.PathLike) -> str:
    """A local file relative to the working folder when inside it (as CI annotations want)."""
    p = Path(local).resolve()
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def locate_source(path: str, recorded_text: str | None, roots: list[Path] | None = None) -> SourceFile:
    """Match a recorded source file to a local one by content hash.

    same: the recorded path holds the recorded text; moved: another local file holds it;
    changed: a local file of that name differs (its differing lines are stale); unverified:
    the report imported no text, the local file is used unchecked; missing: nothing found.
    """
    roots = search_roots() if roots is None else roots
    candidates = _candidates(path, roots)
    if recorded_text is None:
        for c in candidates:
            text = _read(c)
            if text is not None:
                return SourceFile(path=path, sha256=None, text=text, local_path=display_path(c), status="unverified")
        return SourceFile(path=path, status="missing")
    digest = sha256_text(recorded_text)
    for c in candidates:
        text = _read(c)
        if text is not None and sha256_text(text) == digest:
            status = "same" if str(c) == path else "moved"
            return SourceFile(path=path, sha256=digest, text=recorded_text, local_path=display_path(c), status=status)
    for c in candidates:
        text = _read(c)
        if text is None:
            continue
        old, new = recorded_text.splitlines(), text.splitlines()
        stale = [i + 1 for i in range(len(old)) if i >= len(new) or old[i] != new[i]]
        return SourceFile(path=path, sha256=digest, text=recorded_text, local_path=display_path(c),
                          status="changed", stale_lines=stale)
    return SourceFile(path=path, sha256=digest, text=recorded_text, status="missing")
