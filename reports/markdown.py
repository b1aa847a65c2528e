"""Markdown tables (for PR comments and GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

from kernelscope.profiler.compare import Comparison, MetricReading, comparability_warnings
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.units import format_change, format_relative, format_share, format_value, kernel_label
from kernelscope.reports.terminal import describe, session_line

_MARK = {"a": "**A**", "b": "B", "same": "="}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def show_markdown(entries: list[tuple[KernelProfile, dict[str, list[MetricReading]]]], view_titles: dict[str, str]) -> str:
    lines: list[str] = []
    for profile, views in entries:
        lines += [f"## [{profile.index}] `{kernel_label(profile)}`", "", f"{describe(profile)}  ", f"{session_line(profile)}", ""]
        for view, rs in views.items():
            lines += [f"### {view_titles[view]}", ""]
            if not any(r.collected for r in rs):
                lines += ["_not collected in this report_", ""]
                continue
            lines += ["| Metric | Value |", "|---|---:|"]
            lines += [f"| {_cell(r.definition.label)} | {format_value(r.value, r.definition.unit)} |" for r in rs]
            lines.append("")
    return "\n".join(lines)


def diff_markdown(comparison: Comparison) -> str:
    a, b = comparison.a, comparison.b
    lines = [
        f"**A** `{kernel_label(a)}` — {describe(a)} — {session_line(a)}  ",
        f"**B** `{kernel_label(b)}` — {describe(b)} — {session_line(b)}",
        "",
    ]
    lines += [f"> note: {w}" for w in comparability_warnings(a, b)]
    for view, deltas in comparison.views.items():
        lines += [f"### {comparison.view_titles[view]}", ""]
        if not any(d.a is not None or d.b is not None for d in deltas):
            lines += ["_not collected in either report_", ""]
            continue
        lines += ["| Metric | A | B | Change | Rel. | Better |", "|---|---:|---:|---:|---:|:---:|"]
        for d in deltas:
            u = d.definition.unit
            lines.append(
                f"| {_cell(d.definition.label)} | {format_value(d.a, u)} | {format_value(d.b, u)} | "
                f"{format_change(d.change, u)} | {format_relative(d.relative)} | {_MARK.get(d.better or '', '')} |"
            )
        lines.append("")
    if comparison.opcodes:
        lines += ["### Instruction mix: opcodes that differ most", "", "| Opcode | A count | A share | B count | B share | Share change |", "|---|---:|---:|---:|---:|---:|"]
        for o in comparison.opcodes:
            ch = "" if o.share_change is None else f"{o.share_change * 100:+.2f} pp"
            lines.append(f"| {o.opcode} | {format_value(o.count_a, 'inst')} | {format_share(o.share_a)} | {format_value(o.count_b, 'inst')} | {format_share(o.share_b)} | {ch} |")
        lines.append("")
    return "\n".join(lines)
