"""Which kernels of an input a command means: `FILE[:REGEX]` and `FILE:@INDEX`.

Every command that takes a report (show, diff, report, the gate's --report) names kernels
the same way; this is where that text is split and matched.
"""

from __future__ import annotations

import re

from kernelscope.errors import UserError
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.report_sass import counts_no_instructions
from kernelscope.profiler.sources import load_profiles

_INDEX = re.compile(r"^@(\d+)$")


SELECTABLE_SUFFIXES = (".ncu-rep.xz", ".ncu-rep", ".json.xz", ".json")


def split_spec(spec: str) -> tuple[str, str | None]:
    """'file.ncu-rep:REGEX' -> (file, REGEX); a plain path -> (path, None).

    Only a colon right after a known suffix (.ncu-rep, .json, either with .xz)
    separates a selector, so paths with colons elsewhere still work.
    """
    for suffix in SELECTABLE_SUFFIXES:
        at = spec.find(suffix + ":")
        if at >= 0:
            end = at + len(suffix)
            return spec[:end], spec[end + 1 :] or None
    return spec, None


def strip_regex_prefix(pattern: str) -> str:
    """ncu writes `-k regex:NAME`; the prefix means what kernelscope does anyway."""
    return pattern[len("regex:"):] if pattern.startswith("regex:") else pattern


def select(profiles: list[KernelProfile], pattern: str | None, *, what: str = "") -> list[KernelProfile]:
    """Profiles whose function, demangled name or NVTX range matches the regex (search)."""
    if pattern is None:
        return list(profiles)
    pattern = strip_regex_prefix(pattern)
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise UserError(f"bad kernel regex {pattern!r}: {e}") from None
    chosen = [
        p
        for p in profiles
        if regex.search(p.name) or regex.search(p.demangled_name) or any(regex.search(r) for r in p.nvtx_ranges)
    ]
    if not chosen:
        names = sorted({p.name for p in profiles})
        shown = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
        where = f" in {what}" if what else ""
        raise UserError(f"no kernel matches {pattern!r}{where}; kernels there: {shown}")
    return chosen


def select_profiles(profiles: list[KernelProfile], selector: str | None, where: str) -> list[KernelProfile]:
    """The profiles a selector names: `@INDEX` (the report's kernel index) or a regex."""
    if selector and (m := _INDEX.match(selector)):
        index = int(m.group(1))
        chosen = [p for p in profiles if p.index == index]
        if not chosen:
            raise UserError(f"{where} has no kernel @{index} (indices 0..{len(profiles) - 1})")
        return chosen
    return select(profiles, selector, what=where)


def lines_for(selector: str | None, group_nvtx: str | None = None):
    """Which launches of a report get per-line records: the selected ones (each costs a
    disassembly); all of them when launches are grouped by NVTX range."""
    if selector is None or group_nvtx:
        return True
    if m := _INDEX.match(selector):
        index = int(m.group(1))
        return lambda p: p.index == index
    try:
        regex = re.compile(strip_regex_prefix(selector))
    except re.error:
        return True   # select_profiles reports the bad regex
    return lambda p: bool(regex.search(p.name) or regex.search(p.demangled_name)
                          or any(regex.search(r) for r in p.nvtx_ranges))


def sass_facts_for(selector: str | None, group_nvtx: str | None = None):
    """Which launches get the static__ facts of their SASS (profiler.report_sass; ~0.1 s to a few
    seconds per kernel): the selected ones (as lines_for) whose report counts no instructions."""
    chosen = lines_for(selector, group_nvtx)
    return lambda p: counts_no_instructions(p) and (chosen is True or chosen(p))


def resolve_one(spec: str, role: str, lines: bool = False, timeline: bool = False, *,
                group_nvtx: str | None = None, merge: bool = False) -> KernelProfile:
    """The one kernel `FILE[:SELECTOR]` names; a UserError listing them when it names several.
    With `lines`, it carries its per-line records where the input has them; with `timeline`, its
    PM samples (an .ncu-rep only). `group_nvtx` merges the launches of each NVTX range with that
    prefix first; `merge` merges every launch the selector matches into one profile (kind
    "merged": counts and times summed, rates weighted), for reports with several launches. The
    kernels it names carry the static__ facts of their SASS (profiler.report_sass)."""
    from kernelscope.profiler.merge import merge_profiles

    path, selector = split_spec(spec)
    profiles = select_profiles(load_profiles(path, group_nvtx_prefix=group_nvtx,
                                             lines=lines_for(selector, group_nvtx) if lines else False,
                                             timeline=timeline, static_sass=sass_facts_for(selector, group_nvtx)),
                               selector, path)
    if merge and len(profiles) > 1:
        names = list(dict.fromkeys(p.name for p in profiles))
        label = names[0] if len(names) == 1 else f"{len(profiles)} launches matching {selector or path}"
        return merge_profiles(label, profiles, kind="merged")
    if len(profiles) != 1:
        names = ", ".join(f"@{p.index} {p.name}" for p in profiles[:6])
        more = f", ... ({len(profiles)} in all)" if len(profiles) > 6 else ""
        raise UserError(f"{role} {spec!r} matches {len(profiles)} kernels ({names}{more}); narrow it with :REGEX or "
                        f":@INDEX, or merge its launches with --merge")
    return profiles[0]
