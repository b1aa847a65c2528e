"""Where a finding's samples sit: the one to three source lines a stall or memory finding points at.

A stall finding (its rule quotes `target.stall_<reason>`) is located at the lines with the most
PC samples of that reason; a memory finding at the lines whose instructions of the memory kind it
is about (shared, global, TMA, local) hold the most samples. The share is of all such samples of
the kernel. Nothing is located without per-line records, without line information, or when the
samples of that kind are too few to say (never a guess). A finding about wasted traffic (scattered
global accesses, bank conflicts) is located instead at the lines whose instructions moved the
excess, where SourceCounters measured it per instruction. A stall location also names the
instruction kind that holds most of the line's samples of that reason and, for waits whose
reason name misleads (WAITS_AT), what the warps wait for. A stall finding against a reference
built from the same source is located where that stall grew (each side's share of its samples),
not where it is largest. A warp waiting at a bar.sync is sampled at the instruction after it;
those barrier samples are counted at the BAR.
"""

from __future__ import annotations

import re

from kernelscope.profiler.line_compare import file_identity, neighbour_identity
from kernelscope.profiler.line_sites import address_range
from kernelscope.toolchain.sass_lines import opcode_class
from kernelscope.profiler.source_lines import LineProfile, LineRecord
from kernelscope.rules.findings import Finding

MAX_LOCATIONS = 3
MIN_SHARE = 0.05            # a line below this share of the samples is not named
MIN_SAMPLES = 20            # fewer samples of the kind than this: too few to locate
_STALL_QUOTE = re.compile(r"\bstall_(\w+)$")
_AGGREGATES = {"sum", "max", "all"}
# Memory findings by the kind of instruction they are about.
MEMORY_CLASSES = {
    "shared-bank-conflicts": ("shared",),
    "stall-mio-throttle": ("shared",),
    "l1-returns-vs-reference": ("global",),
    "memory-throughput-below-reference": ("global", "tma"),
    "tma-share-below-reference": ("tma", "global"),
    "tma-share-above-reference": ("tma",),
    "local-memory-spills": ("local",),
    "uncoalesced-global-access": ("global",),
    "narrow-global-access": ("global",),
    "atomic-contention": ("global",),
    "shared-atomic-contention": ("shared",),
    "global-reloads-vs-reference": ("global",),
    "dram-traffic-vs-reference": ("global", "tma"),
}
_CLASS_WORDS = {"shared": "shared-memory", "global": "global-memory", "tma": "TMA", "local": "local-memory"}
# Memory findings about wasted traffic, located where the waste is (profiler.source_lines.EXCESS_KINDS)
# when the per-instruction records carry it: the lines whose instructions moved the most excess.
EXCESS_LOCATED = {
    "uncoalesced-global-access": ("global_sectors", "the excess global sectors (beyond an ideal access's)"),
    "shared-bank-conflicts": ("shared_wavefronts", "the excess shared-memory wavefronts (bank conflicts)"),
}
# What a warp stalled at these instructions waits for, where the stall reason's name alone misleads:
# ncu samples a warp in wgmma.wait_group as a "barrier" stall, though it waits for no other warp.
WAITS_AT = {
    "WARPGROUP.DEPBAR": "wgmma.wait_group: the warps wait for their own WGMMA groups (the tensor pipe), "
                        "not for other warps",
    "BAR": "bar.sync: the warps wait for the other warps of the barrier",
    "SYNCS.PHASECHK": "an mbarrier wait: the warps wait for data (TMA bytes) or another warp's arrival",
    # The sleep between the polls of an mbarrier try-wait loop (the DSL's mbarrier_wait).
    "NANOSLEEP.SYNCS": "an mbarrier wait, asleep between polls: the warps wait for data (TMA bytes) or "
                       "another warp's arrival",
}
MIN_OPCODE_SHARE = 0.5      # a line's samples are said to sit on one instruction kind from this share
MIN_SHARED_SOURCE = 0.5     # growth per line only where the lines shared with the reference hold this share
SASS_INSTRUCTION_BYTES = 16  # sm_70 and later encode every instruction in 16 bytes


def stall_reason(finding: Finding) -> str | None:
    """The stall reason a finding is about: the first `*.stall_<reason>` it quotes, or its id."""
    for q in finding.quoted:
        m = _STALL_QUOTE.search(q.name)
        if m and m.group(1) not in _AGGREGATES:
            return m.group(1)
    if finding.rule_id.startswith("stall-"):
        return finding.rule_id[len("stall-"):].replace("-", "_")
    return None


def _site_index(record: LineRecord, function: str, offset: int) -> int | None:
    """Which of the record's sites holds the instruction at `offset` of `function`."""
    for n, site in enumerate(record.sites):
        if site.function == function and site.first <= offset <= site.last:
            return n
    return None


def _add_to_site(per_site: dict[tuple, dict[int, float]], record: LineRecord, function: str, offset: int,
                 n: float) -> None:
    where = _site_index(record, function, offset)
    if where is not None:
        by_site = per_site.setdefault((record.file, record.line), {})
        by_site[where] = by_site.get(where, 0.0) + n


def _heaviest_site(profile: LineProfile, key: tuple, by_site: dict[int, float]) -> dict:
    """{"sites", "site"}: how many of a line's sites hold its weight and the heaviest of them
    (its share of the line's), where the line compiled to more than one place that holds any."""
    held = {n: w for n, w in by_site.items() if w > 0}
    if len(held) < 2:
        return {}
    record = next(r for r in profile.records if r.line is not None and (r.file, r.line) == key)
    n, w = max(held.items(), key=lambda kv: kv[1])
    site = record.sites[n]
    return {"sites": len(held), "site": {"first": site.first, "last": site.last, "loop": list(site.loop) if site.loop else None,
                                         "before": neighbour_identity(profile, site.before),
                                         "after": neighbour_identity(profile, site.after),
                                         "share_of_line": w / sum(held.values())}}


def _top(profile: LineProfile, per_line: dict[tuple, float], total: float, label: str,
         per_opcode: dict[tuple, dict[str, float]] | None = None,
         line_samples: dict[tuple, float] | None = None,
         per_site: dict[tuple, dict[int, float]] | None = None) -> list[dict]:
    """The heaviest lines by `per_line` (a share of `total` each); a line's instruction kind is
    judged on its samples (`line_samples`, default `per_line`), and so is the site named where the
    line compiled to several places (`per_site`: the weight per site index of each line)."""
    out = []
    for key, n in sorted(per_line.items(), key=lambda kv: -kv[1])[:MAX_LOCATIONS]:
        share = n / total
        if share < MIN_SHARE:
            break
        path, line = key
        f = profile.files.get(path)
        loc = {"file": file_identity(profile, path), "line": line, "share": share, "reason": label,
               "recorded_file": path, "stale": bool(f and line in f.stale_lines)}
        loc.update(_dominant_opcode((per_opcode or {}).get(key, {}), (line_samples or per_line)[key]))
        loc.update(_heaviest_site(profile, key, (per_site or {}).get(key, {})))
        out.append(loc)
    return out


def _dominant_opcode(samples_by_opcode: dict[str, float], line_samples: float) -> dict:
    """{"opcode", "waits_for"} of the instruction that holds most of a line's samples, when it
    holds at least MIN_OPCODE_SHARE of them ("waits_for" only for the opcodes in WAITS_AT)."""
    if not samples_by_opcode or line_samples <= 0:
        return {}
    opcode, n = max(samples_by_opcode.items(), key=lambda kv: kv[1])
    if n / line_samples < MIN_OPCODE_SHARE:
        return {}
    out = {"opcode": opcode}
    meaning = next((m for prefix, m in WAITS_AT.items() if opcode == prefix or opcode.startswith(prefix + ".")), None)
    if meaning:
        out["waits_for"] = meaning
    return out


def _wait_opcode(opcode: str) -> str:
    """The opcode's first two parts, which name what is waited for; the rest are modifiers
    (WARPGROUP.DEPBAR.LE -> WARPGROUP.DEPBAR; BAR.SYNC.DEFER_BLOCKING -> BAR.SYNC)."""
    return ".".join(opcode.split(".")[:2])


def _waits_at(profile: LineProfile, reason: str):
    """(line record, opcode, samples, function, offset) of each instruction's samples of `reason`
    (the record, opcode and offset of the instruction they are counted at). A warp that waits
    at a bar.sync has issued it: ncu samples it at the next instruction, so barrier samples on the
    instruction right after a BAR.SYNC / BAR.RED (same function, the next address) are the BAR's."""
    at: dict[tuple, tuple] = {}
    if reason == "barrier":
        for r in profile.records:
            for i in r.instructions:
                if i.opcode.startswith("BAR.") and not i.opcode.startswith("BAR.ARV"):
                    at[(i.function, i.offset + SASS_INSTRUCTION_BYTES)] = (r, i.opcode, i.offset)
    for r in profile.records:
        for i in r.instructions:
            n = i.samples.get(reason, 0.0)
            if n:
                owner, opcode, offset = at.get((i.function, i.offset), (r, i.opcode, i.offset))
                yield owner, opcode, n, i.function, offset


def _line_samples(profile: LineProfile, reason: str):
    """Samples of `reason` per mapped line, per opcode of each line, in all, and per site of each line."""
    per_line: dict[tuple, float] = {}
    per_opcode: dict[tuple, dict[str, float]] = {}
    per_site: dict[tuple, dict[int, float]] = {}
    total = 0.0
    for r, opcode, n, function, offset in _waits_at(profile, reason):
        total += n
        if r.line is not None:
            key = (r.file, r.line)
            per_line[key] = per_line.get(key, 0.0) + n
            by_opcode = per_opcode.setdefault(key, {})
            op = _wait_opcode(opcode)
            by_opcode[op] = by_opcode.get(op, 0.0) + n
            _add_to_site(per_site, r, function, offset, n)
    return per_line, per_opcode, total, per_site


def locate_stall(profile: LineProfile, reason: str) -> list[dict]:
    per_line, per_opcode, total, per_site = _line_samples(profile, reason)
    if total < MIN_SAMPLES:
        return []
    return _top(profile, per_line, total, f"{reason} samples", per_opcode, per_site=per_site)


def locate_stall_growth(profile: LineProfile, reference: LineProfile, reason: str) -> list[dict]:
    """For a finding against a reference built from the same source: the lines whose share of the
    kernel's samples in `reason` grew most over the reference's (each side's samples of the reason
    over all its samples, so the two sampling rates cancel). Empty when no line is in both."""
    t_line, t_opcode, t_total, t_site = _line_samples(profile, reason)
    r_line, _, r_total, _ = _line_samples(reference, reason)
    t_all, r_all = profile.total_samples(), reference.total_samples()
    if t_total < MIN_SAMPLES or t_all <= 0 or r_all <= 0:
        return []
    r_by_identity = {(file_identity(reference, f), line): n for (f, line), n in r_line.items()}
    # The same source on both sides: most of the target's samples sit on lines the reference has
    # samples on too (two kernels that share only library lines are compared per kernel instead).
    shared = sum(n for (f, line), n in t_line.items() if (file_identity(profile, f), line) in r_by_identity)
    if shared < MIN_SHARED_SOURCE * t_total:
        return []
    growth = {key: n / t_all - r_by_identity.get((file_identity(profile, key[0]), key[1]), 0.0) / r_all
              for key, n in t_line.items()}
    grown = {k: g for k, g in growth.items() if g > 0}
    total = sum(grown.values())
    if total <= 0:
        return []
    return _top(profile, grown, total, f"the growth of {reason} samples over the reference", t_opcode, t_line,
                per_site=t_site)


def locate_memory(profile: LineProfile, classes: tuple[str, ...]) -> list[dict]:
    per_line: dict[tuple, float] = {}
    per_site: dict[tuple, dict[int, float]] = {}
    total = 0.0
    for r in profile.records:
        for i in r.instructions:
            if opcode_class(i.base_opcode) not in classes:
                continue
            total += i.sample_total
            if r.line is not None:
                per_line[(r.file, r.line)] = per_line.get((r.file, r.line), 0.0) + i.sample_total
                _add_to_site(per_site, r, i.function, i.offset, i.sample_total)
    if total < MIN_SAMPLES:
        return []
    words = " and ".join(_CLASS_WORDS.get(c, c) for c in classes)
    return _top(profile, per_line, total, f"samples on {words} instructions", per_site=per_site)


def locate_excess(profile: LineProfile, kind: str, label: str) -> list[dict]:
    """The lines whose instructions moved the most excess of `kind`; empty where no instruction
    carries it (a report without those SourceCounters metrics, or no waste measured)."""
    per_line: dict[tuple, float] = {}
    per_opcode: dict[tuple, dict[str, float]] = {}
    per_site: dict[tuple, dict[int, float]] = {}
    total = 0.0
    for r in profile.records:
        for i in r.instructions:
            n = i.excess.get(kind, 0.0)
            if n <= 0:
                continue
            total += n
            if r.line is not None:
                key = (r.file, r.line)
                per_line[key] = per_line.get(key, 0.0) + n
                by_opcode = per_opcode.setdefault(key, {})
                by_opcode[i.base_opcode] = by_opcode.get(i.base_opcode, 0.0) + n
                _add_to_site(per_site, r, i.function, i.offset, n)
    if total <= 0:
        return []
    return _top(profile, per_line, total, label, per_opcode, per_site=per_site)


def _has_lines(profile: LineProfile | None) -> bool:
    return profile is not None and profile.has_source_counters and profile.has_line_info


def attach_locations(findings: list[Finding], profile: LineProfile | None,
                     reference: LineProfile | None = None) -> list[Finding]:
    """Fill `locations` of the stall and memory findings from the target's per-line records; a
    stall finding against the reference, where both sides have lines of the same source, at the
    lines where that stall grew."""
    if not _has_lines(profile):
        return findings
    for f in findings:
        reason = stall_reason(f)
        located = []
        if reason and f.compares == "reference" and _has_lines(reference):
            located = locate_stall_growth(profile, reference, reason)
        if reason and not located:
            located = locate_stall(profile, reason)
        if not located and f.rule_id in EXCESS_LOCATED:
            located = locate_excess(profile, *EXCESS_LOCATED[f.rule_id])
        if not located and f.rule_id in MEMORY_CLASSES:
            located = locate_memory(profile, MEMORY_CLASSES[f.rule_id])
        f.locations = located
    return findings


def site_text(loc: dict) -> str:
    """Where in the SASS a location's weight sits most, when its line compiled to several places."""
    site = loc.get("site")
    if not site:
        return ""
    loop = f", in the loop {address_range(*site['loop'])}" if site.get("loop") else ""
    return (f"; {loc['sites']} places hold them, most {address_range(site['first'], site['last'])} "
            f"({100 * site['share_of_line']:.0f}%{loop}, after {site.get('before') or 'nothing'}, "
            f"before {site.get('after') or 'nothing'})")


def location_text(loc: dict) -> str:
    stale = " (may be stale: the file changed since profiling)" if loc.get("stale") else ""
    at = f", at {loc['opcode']}" if loc.get("opcode") else ""
    meaning = f" ({loc['waits_for']})" if loc.get("waits_for") else ""
    return f"{loc['file']}:{loc['line']} — {100 * loc['share']:.0f}% of {loc['reason']}{at}{meaning}{site_text(loc)}{stale}"
