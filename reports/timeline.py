"""The terminal view of a launch's PM samples: `show --timeline`. Render only."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.timeline import Phases, Timeline, phases
from kernelscope.profiler.units import kernel_label
from kernelscope.reports.terminal import describe, report_table, session_line

# Short name -> column header; percentages are of the unit's sustained peak over the interval.
HEADERS = {
    "tensor_pipe_pct": "Tensor pipe %",
    "issue_pct": "Issue %",
    "dram_read_pct": "DRAM read %",
    "dram_write_pct": "DRAM write %",
    "l2_pct": "L2 %",
    "sm_active_cycles": "SM active cycles",
    "clusters_active": "Clusters active",
}


def _cell(name: str, value: float) -> str:
    # Percentages to a tenth of a point; cycle and cluster counts (averages per unit) as whole numbers.
    return f"{value:.1f}" if name.endswith("_pct") else f"{value:,.0f}"


def phases_line(found: Phases | None) -> str:
    if found is None:
        return "phases: n/a (no tensor-pipe or issue activity recorded)"
    return (f"phases of {found.series}: plateau {found.plateau:.2f} % · ramp {found.ramp_us:.1f} us · "
            f"tail {found.tail_us:.1f} us · active span {found.active_span_us:.1f} us "
            f"({found.active_samples} samples) · interval {found.interval_us:g} us")


def print_timeline(console: Console, profile: KernelProfile) -> None:
    timeline: Timeline = profile.timeline
    console.print(Text(f"[{profile.index}] {kernel_label(profile)}", style="bold cyan"), overflow="fold")
    console.print(f"    {describe(profile)}")
    console.print(f"    {session_line(profile)}", style="dim")
    span = timeline.active()
    if span is None:
        console.print(Text(f"    none of its {len(timeline.times_us)} PM samples saw SM activity", style="yellow"))
        return
    found = phases(timeline)
    table = report_table(f"PM samples every {timeline.interval_us:g} us (ncu's PmSampling), "
                         "time from the first sample with SM activity", "t (us)",
                         *(HEADERS[name] for name in timeline.series))
    table.columns[0].justify = "right"
    table.add_column("Phase", style="dim")
    first, last = span
    for i in range(max(first - 1, 0), min(last + 1, len(timeline.times_us) - 1) + 1):
        cells = [_cell(name, values[i]) for name, values in timeline.series.items()]
        phase = found.phase_of(i) if found else ("active" if first <= i <= last else "")
        table.add_row(f"{timeline.times_us[i]:.1f}", *cells, phase)
    console.print(table)
    console.print(f"  {phases_line(found)}")
    if timeline.left_out:
        console.print(Text(f"  left out (sampled in another replay pass, on other timestamps): "
                           f"{', '.join(timeline.left_out)}", style="dim"))


def print_phase_comparison(console: Console, a: KernelProfile, b: KernelProfile) -> None:
    """The phases of A and B side by side (`diff --timeline`). A difference under one sampling
    interval is not resolved, so the spans are compared in whole intervals."""
    pa, pb = phases(a.timeline), phases(b.timeline)
    if pa is None or pb is None:
        console.print("Timeline: n/a (a launch without tensor-pipe or issue activity in its PM samples)", style="dim")
        return
    interval = max(pa.interval_us, pb.interval_us)
    table = report_table(f"Phases (PM samples every {interval:g} us)", "Phase", "A", "B", "A - B")
    rows = [(f"plateau of {pa.series} (%)" if pa.series == pb.series else "plateau (%)", pa.plateau, pb.plateau, 2),
            ("ramp (us)", pa.ramp_us, pb.ramp_us, 1),
            ("tail (us)", pa.tail_us, pb.tail_us, 1),
            ("active span (us)", pa.active_span_us, pb.active_span_us, 1)]
    for label, x, y, digits in rows:
        change = round(x - y, digits) + 0.0            # + 0.0: no "-0.00"
        table.add_row(label, f"{x:.{digits}f}", f"{y:.{digits}f}", f"{change:+.{digits}f}")
    console.print(table)
    if pa.series != pb.series:
        console.print("  the two phases come from different series: compare their spans, not their plateaus",
                      style="dim")
    console.print(f"  spans are whole sampling intervals: a difference under {interval:g} us is not resolved",
                  style="dim")
