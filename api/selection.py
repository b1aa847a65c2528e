"""Choosing kernels: `FILE:REGEX` / `FILE:@INDEX` specs, regexes and indices over profiles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelscope.errors import UserError
from kernelscope.profiler.sources import load_profiles

if TYPE_CHECKING:
    from kernelscope.profiler.record import KernelProfile


def pick(profiles: list[KernelProfile], selector: str | None, where: str) -> list[KernelProfile]:
    """The profiles a regex (over function, demangled and NVTX names) or `@INDEX` selects."""
    from kernelscope.profiler.selection import select_profiles

    return select_profiles(profiles, selector, where)


def only(profiles: list[KernelProfile], where: str, role: str = "") -> KernelProfile:
    """The one profile of a selection; a UserError naming the candidates otherwise."""
    if len(profiles) != 1:
        names = ", ".join(f"@{p.index} {p.name}" for p in profiles[:6])
        more = f", ... ({len(profiles)} in all)" if len(profiles) > 6 else ""
        who = f"{role} {where!r}" if role else where
        raise UserError(f"{who} matches {len(profiles)} kernels ({names}{more}); narrow it with :REGEX or :@INDEX")
    return profiles[0]


def load_spec(spec: str, *, group_nvtx: str | None = None, lines: bool = False) -> tuple[str, list[KernelProfile]]:
    """(path, profiles) for `FILE`, `FILE:REGEX` or `FILE:@INDEX`."""
    from kernelscope.profiler.selection import split_spec

    from kernelscope.profiler.selection import lines_for, sass_facts_for

    path, selector = split_spec(spec)
    # Per-line records and the SASS facts cost a disassembly per kernel: only where asked (a diff's
    # kernels), for the selected kernels (the facts only where the report counts no instructions).
    profiles = load_profiles(path, group_nvtx_prefix=group_nvtx,
                             lines=lines_for(selector, group_nvtx) if lines else False,
                             static_sass=sass_facts_for(selector, group_nvtx) if lines else False)
    return path, pick(profiles, selector, path)
