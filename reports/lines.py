"""Terminal tables of per-line records: `show --lines`, `diff --lines`, `inspect --lines`. Render only."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelscope.profiler.line_compare import (LineComparison, file_identity, neighbour_identity, site_pairs, site_share,
                                               weight)
from kernelscope.profiler.line_sites import LineSite, address_range
from kernelscope.profiler.source_lines import InstructionCounters, LineProfile, LineRecord
from kernelscope.reports.terminal import report_table

SOURCE_WIDTH = 64
SASS_LINES = 5          # lines whose SASS is listed under the table
SASS_PER_LINE = 4
SITES_PER_LINE = 4      # a line's sites listed under the table, most samples first
SASS_PER_SITE = 2
SITE_CHANGES = 8        # site pairs listed under a line comparison
MIN_SITE_CHANGE = 0.002  # a site pair whose share moved less than this (0.2 pp) is not listed


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _count(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def location(profile: LineProfile, r: LineRecord) -> str:
    if r.line is None:
        return f"{r.function} (no line information)"
    return f"{file_identity(profile, r.file)}:{r.line}"


def site_text(profile: LineProfile, site: LineSite, total: float) -> str:
    """One site as a line: where, how much of the kernel, how often, in which loop, between what."""
    parts = [address_range(site.first, site.last), f"{site.instructions} instr."]
    if total:
        parts.append(f"{100 * site.sample_total / total:.1f}% of samples")
    if site.executed is not None:
        parts.append(f"executed {site.executed:,.0f}")
    parts.append(f"in the loop {address_range(*site.loop)}" if site.loop else "in no loop")
    parts.append(f"after {neighbour_identity(profile, site.before) or '-'}, "
                 f"before {neighbour_identity(profile, site.after) or '-'}")
    return ", ".join(parts)


def source_text(profile: LineProfile, r: LineRecord) -> str:
    if r.line is None:
        return ""
    f = profile.files.get(r.file)
    text = f.line_text(r.line) if f else None
    if text is None:
        return "(source not available)"
    text = text.strip() or "(blank line: the compiler's location for the block above)"
    stale = f is not None and r.line in f.stale_lines
    text = text if len(text) <= SOURCE_WIDTH else text[: SOURCE_WIDTH - 1] + "…"
    return ("(may be stale) " if stale else "") + text


def top_reasons(r: LineRecord, n: int = 3) -> str:
    samples = r.samples
    total = sum(samples.values())
    if not total:
        return "-"
    ordered = sorted(samples.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in ordered)


def top_opcodes(r: LineRecord, n: int = 4) -> str:
    ops = list(r.opcodes().items())
    shown = " ".join(f"{op}×{c}" for op, c in ops[:n])
    return shown + (" …" if len(ops) > n else "")


def describe_profile(profile: LineProfile) -> list[str]:
    """Header lines: what was measured, what maps to source, where the source text comes from."""
    out = []
    if profile.has_source_counters:
        out.append(f"{profile.total_samples():,.0f} PC samples; {pct(profile.mapped_sample_share())} on an instruction "
                   f"with a source line; stall reasons by samples: "
                   + (", ".join(profile.reasons()[:6]) or "none"))
    else:
        out.append(f"{profile.total_instructions():,} SASS instructions in the binary; "
                   f"{pct(profile.mapped_instruction_share())} with a source line")
    groups: dict[str, list[str]] = {}
    for path, f in sorted(profile.files.items()):
        status = f.status if f.status != "missing" or f.text else "no-text"
        groups.setdefault(status, []).append(f.local_path or path)
    words = {
        "same": "source as compiled",
        "moved": "source found here under another path, same content (matched by hash)",
        "changed": "changed since it was compiled: lines that differ are marked 'may be stale', the recorded text is shown",
        "missing": "not found here: the text shown is the one the report imported",
        "unverified": "the report imported no source: the local file is shown unchecked",
        "no-text": "no source text (not imported into the report, not found here)",
    }
    for status, names in groups.items():
        out.append(f"{', '.join(names)}: {words.get(status, status)}")
    out.extend(profile.notes)
    return out


def print_line_profile(console: Console, title: str, profile: LineProfile, limit: int = 15,
                       header: bool = True) -> None:
    console.print(Text(title, style="bold cyan"), overflow="fold")
    if header:
        for line in describe_profile(profile):
            console.print(f"  [dim]{line}[/dim]", overflow="fold")
    if not profile.has_line_info:
        if profile.has_source_counters:
            print_sass_hot_spots(console, "SASS hot spots (no line information: instructions, not source lines)", profile)
        return
    counters = profile.has_source_counters
    table = Table(show_edge=False, pad_edge=False, title_justify="left",
                  title="Hottest source lines" + (" (share of PC samples)" if counters else " (share of instructions)"))
    table.add_column("#", justify="right")
    table.add_column("Line", no_wrap=True)
    table.add_column("Share", justify="right")
    if counters:
        table.add_column("Stall reasons (of the line's samples)")
        table.add_column("Executed", justify="right")
    table.add_column("Instr.", justify="right")
    table.add_column("Sites", justify="right")
    table.add_column("Opcodes")
    table.add_column("Source")
    hottest = profile.hottest(limit)
    for n, r in enumerate(hottest, 1):
        cells = [str(n), location(profile, r), pct(weight(profile, r))]
        if counters:
            cells += [top_reasons(r, 2), _count(r.executed)]
        cells += [str(r.count), str(len(r.sites)) if r.sites else "-", top_opcodes(r, 3), source_text(profile, r)]
        table.add_row(*cells)
    console.print(table)
    if counters:
        print_sass_under(console, profile, hottest[:SASS_LINES])
    else:
        print_sites(console, profile, hottest[:SASS_LINES])


def print_sites(console: Console, profile: LineProfile, records: list[LineRecord]) -> None:
    """A compile's hottest lines that sit in several places: each place, most instructions first."""
    spread = [r for r in records if len(r.sites) > 1]
    if not spread:
        return
    console.print("[bold]Where the hottest lines sit[/bold] [dim](a line compiled to several places, by site; "
                  "most instructions first)[/dim]")
    for r in spread:
        console.print(f"  {location(profile, r)}", overflow="fold")
        sites = sorted(r.sites, key=lambda s: (-s.instructions, s.function, s.first))
        for site in sites[:SITES_PER_LINE]:
            console.print(f"    site {site_text(profile, site, 0.0)}", overflow="fold", highlight=False)
        if len(sites) > SITES_PER_LINE:
            rest = sites[SITES_PER_LINE:]
            console.print(f"    [dim]{len(rest)} more sites, {sum(s.instructions for s in rest)} instructions[/dim]",
                          overflow="fold")


def _inst_row(i: InstructionCounters, total: float) -> str:
    reasons = sorted(i.samples.items(), key=lambda kv: -kv[1])[:2]
    why = ", ".join(f"{k} {v:,.0f}" for k, v in reasons)
    share = f"{100 * i.sample_total / total:5.1f}%" if total else "  n/a"
    return f"      {share}  /*{i.offset:04x}*/ {i.text}" + (f"   [{why}]" if why else "")


def print_sass_under(console: Console, profile: LineProfile, records: list[LineRecord]) -> None:
    total = profile.total_samples()
    if not records or not total:
        return
    console.print("[bold]SASS under the hottest lines[/bold] [dim](share of all samples, hottest first; a line "
                  "compiled to several places is listed by site)[/dim]")
    for r in records:
        console.print(f"  {location(profile, r)}", overflow="fold")
        ordered = sorted(r.instructions, key=lambda i: (-i.sample_total, i.offset))
        if len(r.sites) <= 1:
            for i in ordered[:SASS_PER_LINE]:
                console.print(_inst_row(i, total), overflow="fold", highlight=False)
            continue
        sites = sorted(r.sites, key=lambda s: (-s.sample_total, s.function, s.first))
        for site in sites[:SITES_PER_LINE]:
            console.print(f"    site {site_text(profile, site, total)}", overflow="fold", highlight=False)
            inside = [i for i in ordered if i.function == site.function and site.first <= i.offset <= site.last]
            for i in inside[:SASS_PER_SITE]:
                console.print(_inst_row(i, total), overflow="fold", highlight=False)
        rest = sites[SITES_PER_LINE:]
        if rest:
            console.print(f"    [dim]{len(rest)} more sites, {100 * sum(s.sample_total for s in rest) / total:.1f}% "
                          f"of samples[/dim]", overflow="fold")


def print_line_comparison(console: Console, c: LineComparison, a_title: str, b_title: str, limit: int = 20) -> None:
    console.print(Text(f"A {a_title}", style="bold cyan"), overflow="fold")
    for line in describe_profile(c.a):
        console.print(f"  [dim]{line}[/dim]", overflow="fold")
    console.print(Text(f"B {b_title}", style="bold cyan"), overflow="fold")
    for line in describe_profile(c.b):
        console.print(f"  [dim]{line}[/dim]", overflow="fold")
    console.print(Text(c.why, style="bold"))
    unit = f"share of each kernel's {c.unit}"
    if c.mode == "per-line":
        table = Table(show_edge=False, pad_edge=False, title=f"Per source line ({unit})", title_justify="left")
        table.add_column("Line", no_wrap=True)
        for col in ("A", "B", "Change"):
            table.add_column(col, justify="right")
        table.add_column("A instr.", justify="right")
        table.add_column("B instr.", justify="right")
        if c.unit == "samples":
            table.add_column("A stall reasons")
            table.add_column("B stall reasons")
        table.add_column("Source")
        for row in c.lines[:limit]:
            side = row.a or row.b
            profile = c.a if row.a else c.b
            cells = [f"{row.file}:{row.line}", pct(row.a_share), pct(row.b_share), f"{100 * row.change:+.1f} pp",
                     str(row.a.count) if row.a else "-", str(row.b.count) if row.b else "-"]
            if c.unit == "samples":
                cells += [top_reasons(row.a, 2) if row.a else "-", top_reasons(row.b, 2) if row.b else "-"]
            cells.append(source_text(profile, side))
            table.add_row(*cells)
        console.print(table)
        print_site_changes(console, c, c.lines[:limit])
        return
    for name, rows, what in (("Per source file", c.files, "file"), ("Per opcode class", c.classes, "class")):
        table = report_table(f"{name} ({unit})", what.capitalize(), "A", "B")
        for r in rows[:limit]:
            table.add_row(r.name, pct(r.a_share) if r.a_share is not None else "-",
                          pct(r.b_share) if r.b_share is not None else "-")
        console.print(table)
    for label, profile in (("A", c.a), ("B", c.b)):
        if profile.has_line_info:
            print_line_profile(console, f"{label}: hottest lines", profile, limit=8, header=False)
        else:
            print_sass_hot_spots(console, f"{label}: SASS hot spots (no line information)", profile)


def print_site_changes(console: Console, c: LineComparison, rows: list, limit: int = SITE_CHANGES) -> None:
    """Of the listed lines that sit in as many places on both sides, the sites whose share moved
    most, paired in address order."""
    moved = []
    for row in rows:
        pairs = site_pairs(row, c.a, c.b, c.unit)
        if pairs:
            moved.extend((row, n, pair) for n, pair in enumerate(pairs, 1))
    moved = [m for m in moved if abs(m[2].change) >= MIN_SITE_CHANGE]
    # Lines that moved but sit in a different number of places: each side's heaviest site, unpaired.
    unpaired = [row for row in rows if row.a is not None and row.b is not None and row.a.sites and row.b.sites
                and site_pairs(row, c.a, c.b, c.unit) is None and len(row.a.sites) + len(row.b.sites) > 2
                and abs(row.change) >= MIN_SITE_CHANGE]
    if not moved and not unpaired:
        return
    moved.sort(key=lambda m: -abs(m[2].change))
    console.print(f"[bold]Where those lines moved[/bold] [dim](by site: paired in address order where a line sits in "
                  f"as many places on both sides, else each side's heaviest; share of each kernel's {c.unit})[/dim]")
    for row, n, pair in moved[:limit]:
        loop = f", in the loop {address_range(*pair.a.loop)} (A)" if pair.a.loop else ""
        console.print(f"  {row.file}:{row.line} site {n} of {len(row.a.sites)}: A /*{pair.a.first:04x}*/ {pct(pair.a_share)}, "
                      f"B /*{pair.b.first:04x}*/ {pct(pair.b_share)} ({100 * pair.change:+.1f} pp){loop}",
                      overflow="fold", highlight=False)
    for row in sorted(unpaired, key=lambda r: -abs(r.change))[:limit]:
        sides = []
        for label, profile, record in (("A", c.a, row.a), ("B", c.b, row.b)):
            samples = c.unit == "samples"
            top = max(record.sites, key=lambda s: (site_share(profile, s, samples), -s.first))
            loop = f" in the loop {address_range(*top.loop)}" if top.loop else ""
            sides.append(f"{label} {len(record.sites)} sites, most {address_range(top.first, top.first)} "
                         f"{pct(site_share(profile, top, samples))}{loop}")
        console.print(f"  {row.file}:{row.line} ({100 * row.change:+.1f} pp): " + "; ".join(sides),
                      overflow="fold", highlight=False)


def print_sass_hot_spots(console: Console, title: str, profile: LineProfile, limit: int = 10) -> None:
    """The hottest instructions of a kernel that has no line information, labelled as such."""
    total = profile.total_samples()
    insts = [i for r in profile.records for i in r.instructions]
    console.print(Text(title, style="bold cyan"))
    if not total:
        console.print("  [dim]no PC samples[/dim]")
        return
    for i in sorted(insts, key=lambda i: (-i.sample_total, i.offset))[:limit]:
        console.print(_inst_row(i, total), overflow="fold", highlight=False)
