"""Per-line records of a compile (`inspect --lines`): each kernel's SASS grouped by source line.

The listing comes from `nvdisasm -g` over the cached cubin; the parsed listing is cached by the
cubin's hash beside the compile cache, so a cached `inspect --lines` runs no tool at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.profiler.report_lines import locate_source
from kernelscope.toolchain.sass_lines import LinedInstruction, disassemble_with_lines
from kernelscope.profiler.source_lines import InstructionCounters, LineProfile

LISTING_FORMAT = 2


def _listing_path(cubin: bytes) -> Path:
    from kernelscope.toolchain.disk_cache import cache_root

    digest = hashlib.sha256(cubin).hexdigest()
    return cache_root() / "sass-lines" / f"{digest}.v{LISTING_FORMAT}.json"


def sass_with_lines(cubin: bytes, use_cache: bool = True) -> dict[str, list[LinedInstruction]]:
    """Instructions per function with their source lines, from the cache or from nvdisasm."""
    path = _listing_path(cubin)
    if use_cache and path.is_file():
        try:
            raw = json.loads(path.read_text())
            return {fn: [LinedInstruction(fn, *row) for row in rows] for fn, rows in raw.items()}
        except (OSError, ValueError, TypeError):
            pass   # a damaged entry is rebuilt below
    from kernelscope.toolchain.tools import find_cuda_tool

    try:
        listing = disassemble_with_lines(cubin, find_cuda_tool("nvdisasm"))
    except RuntimeError as e:
        raise UserError(f"nvdisasm -g failed on the compiled cubin: {e}") from None
    if use_cache:
        rows = {fn: [[i.offset, i.opcode, i.text, i.file, i.line, i.target] for i in insts] for fn, insts in listing.items()}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(rows, f)
            os.replace(tmp, path)
        except OSError:
            pass   # caching is an optimisation
    return listing


def static_line_profiles(cubin: bytes, kernel_names: list[str] | None = None,
                         use_cache: bool = True) -> dict[str, LineProfile]:
    """A LineProfile per kernel function of the cubin (default: every function of the listing),
    instruction counts only: nothing ran."""
    listing = sass_with_lines(cubin, use_cache)
    if kernel_names is None:
        kernel_names = list(listing)
    out: dict[str, LineProfile] = {}
    texts: dict[str, str | None] = {}
    for name in kernel_names:
        insts = listing.get(name, [])
        rows = [(i.file, i.line, InstructionCounters(function=name, offset=i.offset, text=i.text, opcode=i.opcode,
                                                 target=i.target))
                for i in insts]
        files = {}
        for path in sorted({i.file for i in insts if i.file and i.line is not None}):
            if path not in texts:
                try:
                    texts[path] = Path(path).read_text(errors="surrogateescape")
                except OSError:
                    texts[path] = None
            files[path] = locate_source(path, texts[path])
        profile = LineProfile.build(name, "static", rows, files, has_source_counters=False)
        if not profile.has_line_info:
            profile.notes.append("the cubin carries no line information for this kernel")
        out[name] = profile
    return out
