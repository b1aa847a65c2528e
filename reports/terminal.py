"""Rich tables for the terminal."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelscope.profiler.compare import Comparison, MetricReading, comparability_warnings
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.units import (
    FULL_NAMES,
    format_change,
    format_relative,
    format_share,
    format_value,
    kernel_label,
    launch_shape,
)


def make_console(**kwargs) -> Console:
    # Piped output (CI logs, files) gets a width that fits the tables instead of 80 columns.
    if "width" not in kwargs and not sys.stdout.isatty():
        kwargs["width"] = int(os.environ.get("COLUMNS", "150"))
    return Console(highlight=False, soft_wrap=False, **kwargs)


def report_table(title: str, name: str, *numbers: str) -> Table:
    """A table in the reports' style: the row's `name` column, then right-aligned `numbers`."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column(name)
    for header in numbers:
        table.add_column(header, justify="right")
    return table


def describe(p: KernelProfile) -> str:
    launch = f"grid {launch_shape(p.grid)}  block {launch_shape(p.block)}"
    if p.cluster:
        launch += f"  cluster {launch_shape(p.cluster)}"
    if p.launches > 1:
        launch += f"  ({p.launches} launches)"
    return launch


def session_line(p: KernelProfile) -> str:
    d, s = p.device, p.session
    parts = [d.name or "device n/a"]
    if d.sm_count:
        parts.append(f"{d.sm_count} SMs")
    if d.sm_clock_hz:
        parts.append(f"SM clock {d.sm_clock_hz / 1e9:.2f} GHz measured")
    if s.tool == "ncu":
        parts.append(f"ncu {s.tool_version.split()[0] if s.tool_version else 'version n/a'}")
        parts.append(f"clock control {s.clock_control or 'n/a'}")
        parts.append(f"cache control {s.cache_control or 'n/a'}")
        if s.replay_passes:
            parts.append(f"{s.replay_passes} passes")
    else:
        parts.append(f"{s.tool} (compile-only)")
    return " · ".join(parts)


def print_show(console: Console, entries: list[tuple[KernelProfile, dict[str, list[MetricReading]]]], view_titles: dict[str, str]) -> None:
    for profile, views in entries:
        console.print(Text(f"[{profile.index}] {kernel_label(profile)}", style="bold cyan"), overflow="fold")
        if FULL_NAMES.get() and profile.demangled_name and profile.demangled_name != profile.name:
            console.print(Text(f"    {profile.demangled_name}", style="dim"), overflow="fold")
        console.print(f"    {describe(profile)}")
        console.print(f"    {session_line(profile)}", style="dim")
        for view, rs in views.items():
            table = report_table(view_titles[view], "Metric", "Value")
            table.add_column("id", style="dim")
            for r in rs:
                text = format_value(r.value, r.definition.unit)
                table.add_row(r.definition.label, Text(text, style="dim" if r.value is None else ""), r.definition.id)
            if not any(r.collected for r in rs):
                console.print(Text(f"  {view_titles[view]}: not collected in this report", style="yellow"))
                continue
            console.print(table)
        if profile.instruction_mix:
            print_top_opcodes(console, profile)
        console.print()


# Catalog id -> short column header for the one-line-per-kernel summary.
SUMMARY_METRICS = {
    "registers_per_thread": "Regs",
    "duration": "Duration",
    "sm_throughput_pct": "SM %",
    "memory_throughput_pct": "Mem %",
    "instructions_executed": "Instructions",
}


# Columns of the summary, most dispensable first: what goes when the terminal is narrow.
_SUMMARY_DROP_ORDER = ("Block", "Instructions", "Grid", "Mem %", "Regs", "SM %")
_KERNEL_MIN, _KERNEL_MAX = 16, 48


def print_summary(console: Console, rows: list[tuple[KernelProfile, list[MetricReading]]]) -> None:
    """One line per kernel: the overview for reports with many launches. Columns are chosen by
    the terminal's width: a column is left out whole rather than every number squeezed to '…'."""
    headers = ["#", "Kernel", "Grid", "Block"] + [SUMMARY_METRICS.get(r.definition.id, r.definition.label)
                                                  for r in (rows[0][1] if rows else [])]
    cells = [[str(p.index), kernel_label(p), launch_shape(p.grid), launch_shape(p.block),
              *(format_value(r.value, r.definition.unit) for r in rs)] for p, rs in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    kernel_width = min(widths[1], _KERNEL_MAX)

    def needed(keep: list[int]) -> int:   # rich puts " │ " (3 columns) between cells
        return sum(_KERNEL_MIN if i == 1 else widths[i] for i in keep) + 3 * (len(keep) - 1)

    keep = list(range(len(headers)))
    dropped = []
    for name in _SUMMARY_DROP_ORDER:
        if needed(keep) <= console.width or name not in headers:
            continue
        keep.remove(headers.index(name))
        dropped.append(name)
    spare = console.width - needed(keep)
    kernel_width = max(_KERNEL_MIN, min(kernel_width, _KERNEL_MIN + spare))
    table = Table(title=f"{len(rows)} kernels", title_justify="left", show_edge=False, pad_edge=False)
    for i in keep:
        if i == 1:
            table.add_column("Kernel", overflow="ellipsis", width=kernel_width, no_wrap=True)
        else:
            table.add_column(headers[i], justify="left" if i in (2, 3) else "right", no_wrap=True)
    for row in cells:
        table.add_row(*(row[i] for i in keep))
    console.print(table)
    if dropped:
        console.print(Text(f"left out at {console.width} columns: {', '.join(dropped)} "
                           "(a wider terminal, or --format csv, shows them)", style="dim"))


def print_top_opcodes(console: Console, profile: KernelProfile, top: int = 12) -> None:
    total = sum(profile.instruction_mix.values()) or 1.0
    static = profile.session.tool == "static"
    title = "SASS opcodes in the binary (static counts)" if static else "Instruction mix (top opcodes)"
    table = report_table(title, "Opcode", "In binary" if static else "Executed", "Share")
    for op, count in sorted(profile.instruction_mix.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:
        table.add_row(op, format_value(count, "inst"), format_share(count / total))
    console.print(table)


_BETTER_STYLE = {"a": ("A", "green"), "b": ("B", "red"), "same": ("=", "dim")}


def print_comparison(comparison: Comparison, console: Console | None = None) -> None:
    console = console or make_console()
    a, b = comparison.a, comparison.b
    console.print(Text("A ", style="bold") + Text(kernel_label(a), style="bold cyan") + Text(f"  [{a.index}] {a.source}", style="dim"))
    console.print(f"  {describe(a)}")
    console.print(f"  {session_line(a)}", style="dim")
    console.print(Text("B ", style="bold") + Text(kernel_label(b), style="bold magenta") + Text(f"  [{b.index}] {b.source}", style="dim"))
    console.print(f"  {describe(b)}")
    console.print(f"  {session_line(b)}", style="dim")
    for warning in comparability_warnings(a, b):
        console.print(Text(f"  note: {warning}", style="yellow"))
    console.print(Text("  Change = A - B; Better marks the side the metric's direction favours.", style="dim"))
    for view, deltas in comparison.views.items():
        title = comparison.view_titles[view]
        if not any(d.a is not None or d.b is not None for d in deltas):
            console.print(Text(f"{title}: not collected in either report", style="yellow"))
            continue
        table = report_table(title, "Metric", "A", "B", "Change", "Rel.")
        table.add_column("Better", justify="center")
        for d in deltas:
            unit = d.definition.unit
            mark, style = _BETTER_STYLE.get(d.better or "", ("", ""))
            table.add_row(
                d.definition.label,
                Text(format_value(d.a, unit), style="dim" if d.a is None else ""),
                Text(format_value(d.b, unit), style="dim" if d.b is None else ""),
                format_change(d.change, unit),
                format_relative(d.relative),
                Text(mark, style=style),
            )
        console.print(table)
    print_opcode_table(comparison, console)


def print_opcode_table(comparison: Comparison, console: Console) -> None:
    if not comparison.opcodes:
        console.print(Text("Instruction mix: not collected in either report (needs SourceCounters or InstructionStats)", style="yellow"))
        return
    static = {comparison.a.session.tool, comparison.b.session.tool} == {"static"}
    counted = "instructions in the binary" if static else "executed instructions"
    table = report_table(f"Instruction mix: opcodes that differ most (share of all {counted})", "Opcode",
                         "A count", "A share", "B count", "B share", "Share change", "Count rel.")
    for o in comparison.opcodes:
        change = o.share_change
        table.add_row(
            o.opcode,
            format_value(o.count_a, "inst"),
            format_share(o.share_a),
            format_value(o.count_b, "inst"),
            format_share(o.share_b),
            "" if change is None else f"{change * 100:+.2f} pp",
            format_relative(o.relative) if o.relative is not None else ("new" if (o.count_a or 0) > 0 and o.count_b == 0 else ""),
        )
    console.print(table)


def print_timing_checks(console: Console, label: str, checks) -> None:
    """One line per check of a timing (timing_checks.Checks): passed, FAILED, or not run."""
    if checks is None or not checks.items:
        return
    head = "[red]SUSPECT[/red]: not a valid speed" if checks.suspect else "[green]trusted[/green]"
    console.print(f"  checks of {label}: {head}")
    for check in checks.to_dict()["items"].keys():
        c = checks.get(check)
        mark = "[green]pass[/green]" if c.passed else "[red]FAIL[/red]" if c.ran else "[dim]not run[/dim]"
        console.print(f"    {mark:>20} {c.name}: {c.detail}", soft_wrap=True)


def print_heat(console: Console, heat, static_name: str, profile_name: str, top: int = 20) -> None:
    """hot_instructions.HeatMap as a table: static instances, executions, executions per instance."""
    def short(name: str) -> str:
        return name if len(name) <= 48 else name[:45] + "..."

    table = Table(title=f"Executed instructions ({short(profile_name)}) over the SASS of {short(static_name)}",
                  title_justify="left", show_edge=False)
    for col in ("opcode", "static", "executed", "per instance", "share"):
        table.add_column(col, justify="left" if col == "opcode" else "right")
    for r in heat.rows[:top]:
        table.add_row(r.opcode, str(r.static_count), "n/a" if r.executed is None else f"{r.executed:,.0f}",
                      "n/a" if r.per_instance is None else f"{r.per_instance:,.1f}",
                      "n/a" if r.share is None else f"{100 * r.share:.1f}%")
    console.print(table)
    if len(heat.rows) > top:
        console.print(f"  ... {len(heat.rows) - top} more opcodes", style="dim")
    if heat.unmatched:
        console.print(f"  [yellow]warning:[/yellow] executed opcodes absent from this binary: "
                      f"{', '.join(heat.unmatched)}: the profile is of other code")
