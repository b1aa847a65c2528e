"""The report's plots, drawn with matplotlib: SVG text for the HTML page, PNG files for --png.

Each function takes values already computed elsewhere and returns a Figure; nothing here
reads a report. Figures are built without pyplot, so no global state or display is involved.
Artists that tests look up carry a `gid` (roofline points: "roofline-point-<role>").
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from typing import Sequence

from kernelscope.profiler.roofline import Roofline

# Colour per role: the kernel (A) and the reference (B); further kernels cycle through the rest.
_ROLE_COLOURS = ("#1f6fd1", "#e0731c", "#2a9d4b", "#9b4dca", "#c23b3b", "#7a7a7a", "#b8860b", "#17a2b8")
_BETTER = "#2a9d4b"
_WORSE = "#c23b3b"
_NEUTRAL = "#8a8f98"
_VERDICT_COLOURS = {"REGRESSION": "#c23b3b", "IMPROVEMENT": "#17a2b8", "INCONCLUSIVE": "#d4a017", "PASS": "#2a9d4b"}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig


def role_colour(index: int) -> str:
    return _ROLE_COLOURS[index % len(_ROLE_COLOURS)]


def _si(v: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


# ----------------------------------------------------------------------------- roofline

def roofline_figure(roof: Roofline):
    """Log-log roofline: each ceiling as min(peak, bandwidth x intensity), each kernel as a point."""
    fig = _figure(7.6, 4.8)
    ax = fig.add_subplot()
    placed = [p for p in roof.placements if p.placed]
    mem = roof.memory
    compute = sorted((c for c in roof.ceilings if c.kind == "compute"), key=lambda c: -c.value)
    xs = [p.intensity for p in placed]
    ys = [p.flop_rate for p in placed]
    knees = [c.value / mem.value for c in compute] if mem else []
    lo = min(xs + knees + [1.0]) / 10.0
    hi = max(xs + knees + [1.0]) * 10.0
    lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    grid = [lo * (hi / lo) ** (i / 400) for i in range(401)]
    for i, c in enumerate(compute):
        style = "-" if i == 0 else "--"
        if mem:
            ax.plot(grid, [min(c.value, mem.value * x) for x in grid], style, color="#333333", lw=1.4, gid=f"roofline-ceiling-{i}")
            knee = c.value / mem.value
            ax.annotate(f"{c.name}: {_si(c.value, 'FLOP/s')}", (max(knee, lo) * 1.15, c.value), textcoords="offset points",
                        xytext=(0, 3), fontsize=8, color="#333333")
        else:
            ax.axhline(c.value, ls=style, color="#333333", lw=1.4, gid=f"roofline-ceiling-{i}")
            ax.annotate(f"{c.name}: {_si(c.value, 'FLOP/s')}", (lo * 1.5, c.value), xytext=(0, 3),
                        textcoords="offset points", fontsize=8)
    if mem:
        x_text = lo * 2.0
        ax.annotate(f"{mem.name}: {_si(mem.value, 'B/s')}", (x_text, mem.value * x_text), xytext=(2, 6),
                    textcoords="offset points", fontsize=8, rotation=0, color="#333333")
    label_offsets = _stacked_label_offsets([(p.intensity, p.flop_rate) for p in placed])
    for p, label_offset in zip(placed, label_offsets):
        index = roof.placements.index(p)
        colour = role_colour(index)
        ax.plot([p.intensity], [p.flop_rate], "o", ms=9, color=colour, mec="white", mew=1.2,
                label=f"{p.role}: {_short(p.label)}", gid=f"roofline-point-{p.role}", zorder=5)
        frac = roof.fraction_of_roof(p)
        note = f"{_si(p.flop_rate, 'FLOP/s')}" + (f" ({frac * 100:.0f}% of roof)" if frac is not None else "")
        ax.annotate(f"{p.role}  {note}", (p.intensity, p.flop_rate), xytext=(8, label_offset), textcoords="offset points",
                    fontsize=8, color=colour)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    tops = [c.value for c in compute] + ys
    bottoms = ys + ([mem.value * lo] if mem else [])
    if tops and bottoms:
        ax.set_ylim(max(min(bottoms) / 10.0, 1.0), max(tops) * 3.0)
    ax.set_xlabel("Arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("Achieved FLOP/s")
    ax.grid(True, which="major", alpha=0.25)
    if placed:
        ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.set_title("Roofline (DRAM)", fontsize=11, loc="left")
    return fig


def _stacked_label_offsets(points: Sequence[tuple[float, float]]) -> list[float]:
    """Vertical offsets (points) for the labels of log-log points: labels of points that lie
    close together (two kernels at the same rate) go one under the other instead of on top."""
    offsets: list[float] = []
    for i, (x, y) in enumerate(points):
        near = [offsets[j] for j, (x2, y2) in enumerate(points[:i])
                if abs(math.log10(x / x2)) < 0.8 and abs(math.log10(y / y2)) < 0.25]
        offsets.append(min(near) - 11 if near else -12)
    return offsets


def _short(text: str, width: int = 44) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# ----------------------------------------------------------------------------- instruction mix

@dataclass
class MixRow:
    opcode: str
    counts: list[float | None]       # instructions of this opcode per kernel (None: not collected)


def instruction_mix_figure(rows: Sequence[MixRow], names: Sequence[str], *, executed: bool = True):
    """Grouped horizontal bars: each opcode's instruction count, per kernel. Counts, not shares:
    the same count in two kernels is the same bar, whatever else each kernel executes."""
    height = 1.2 + len(rows) * (0.12 + 0.09 * max(1, len(names)))
    fig = _figure(7.6, max(2.6, height))
    ax = fig.add_subplot()
    n = len(names)
    bar = 0.8 / max(n, 1)
    for k, name in enumerate(names):
        ys = [i + (k - (n - 1) / 2) * bar for i in range(len(rows))]
        vals = [r.counts[k] or 0.0 for r in rows]
        ax.barh(ys, vals, height=bar * 0.95, color=role_colour(k), label=_short(name))
    ax.set_yticks(range(len(rows)), [r.opcode for r in rows], fontsize=8)
    ax.invert_yaxis()
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _si(v, "").strip() if v else "0"))
    ax.set_xlabel("Executed warp instructions" if executed
                  else "SASS instructions in the binary (compile-only)")
    ax.grid(True, axis="x", alpha=0.25)
    # Above the axes, so it never hides a bar.
    ax.legend(fontsize=8, frameon=False, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=min(n, 3))
    ax.set_title("Instruction mix (opcodes whose counts differ most)", fontsize=11, loc="left")
    return fig


# ----------------------------------------------------------------------------- metric changes

@dataclass
class ChangeRow:
    label: str
    ratio: float                # A / B (> 0)
    better: str | None          # "a", "b", "same" or None


def metric_changes_figure(rows: Sequence[ChangeRow], name_a: str = "A", name_b: str = "B"):
    """Bars of A/B on a log axis from 1: right of 1, A is larger. Green: A better, red: A worse."""
    fig = _figure(7.6, max(2.6, 1.1 + 0.3 * len(rows)))
    ax = fig.add_subplot()
    colours = [_BETTER if r.better == "a" else _WORSE if r.better == "b" else _NEUTRAL for r in rows]
    ratios = [r.ratio for r in rows]
    ax.barh(range(len(rows)), [x - 1.0 for x in ratios], left=1.0, color=colours, height=0.7)
    ax.set_xscale("log")
    ax.axvline(1.0, color="#333333", lw=1)
    ax.set_yticks(range(len(rows)), [_short(r.label, 36) for r in rows], fontsize=8)
    ax.invert_yaxis()
    for i, x in enumerate(ratios):
        ax.annotate(ratio_text(x), (x, i), xytext=(4 if x >= 1 else -4, 0), textcoords="offset points",
                    ha="left" if x >= 1 else "right", va="center", fontsize=7)
    span = max(max(ratios), 1 / min(ratios)) if ratios else 2.0
    # Room for a label beyond the longest bar on either side of a log axis.
    ax.set_xlim(1 / (span * 6), span * 6)
    ax.set_xlabel(f"{name_a} / {name_b} (log scale; green: {name_a} better, red: {name_a} worse, grey: no direction)")
    ax.grid(True, axis="x", alpha=0.25)
    ax.set_title("Largest metric changes", fontsize=11, loc="left")
    return fig


def ratio_text(x: float) -> str:
    """+25% / -60% near 1; beyond 10x either way as a factor, never rounded to 0.00x."""
    if x >= 10:
        return f"{x:.3g}x"
    if x <= 0.1:
        return f"1/{1 / x:.3g}"
    return f"{(x - 1) * 100:+.0f}%"


@dataclass
class VerdictRow:
    label: str
    change: float               # current / baseline - 1
    verdict: str


def gate_changes_figure(rows: Sequence[VerdictRow]):
    """Relative change against the baseline per metric, coloured by the gate's verdict."""
    fig = _figure(7.6, max(2.6, 1.1 + 0.3 * len(rows)))
    ax = fig.add_subplot()
    vals = [r.change * 100.0 for r in rows]
    ax.barh(range(len(rows)), vals, color=[_VERDICT_COLOURS.get(r.verdict, _NEUTRAL) for r in rows], height=0.7)
    ax.axvline(0.0, color="#333333", lw=1)
    ax.set_yticks(range(len(rows)), [_short(r.label, 40) for r in rows], fontsize=8)
    ax.invert_yaxis()
    for i, (v, r) in enumerate(zip(vals, rows)):
        ax.annotate(f"{v:+.1f}% {r.verdict.lower()}", (v, i), xytext=(4 if v >= 0 else -4, 0),
                    textcoords="offset points", ha="left" if v >= 0 else "right", va="center", fontsize=7)
    lim = max([abs(v) for v in vals] + [1.0]) * 1.6
    ax.set_xlim(-lim, lim)
    ax.set_xlabel("Change against the baseline (%)")
    ax.grid(True, axis="x", alpha=0.25)
    ax.set_title("Gate: largest changes", fontsize=11, loc="left")
    return fig


# ----------------------------------------------------------------------------- sweep

@dataclass
class SweepBar:
    label: str
    value: float


def sweep_figure(bars: Sequence[SweepBar], *, percent_of_reference: bool, reference: str | None):
    """One bar per config: % of the reference's speed (100% = as fast), or the median time."""
    fig = _figure(7.6, max(2.6, 1.2 + 0.3 * len(bars)))
    ax = fig.add_subplot()
    vals = [b.value for b in bars]
    if percent_of_reference:
        colours = [_BETTER if v >= 100.0 else role_colour(0) for v in vals]
    else:
        colours = [role_colour(0)] * len(vals)
    ax.barh(range(len(bars)), vals, color=colours, height=0.7)
    ax.set_yticks(range(len(bars)), [_short(b.label, 48) for b in bars], fontsize=8)
    ax.invert_yaxis()
    for i, v in enumerate(vals):
        ax.annotate(f"{v:.1f}%" if percent_of_reference else f"{v:.4g} ms", (v, i), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=7)
    if percent_of_reference:
        ax.axvline(100.0, color="#333333", lw=1.2, ls="--", label=f"{reference or 'reference'} = 100%")
        # Above the axes, so it never hides a bar or its label.
        ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
        ax.set_xlabel("Speed relative to the reference (reference time / config time, %)")
        ax.set_xlim(0, max(vals + [100.0]) * 1.18)
    else:
        ax.set_xlabel("Median time per launch (ms); no reference timing in this sweep")
        ax.set_xlim(0, max(vals + [0.0]) * 1.18 or 1.0)
    ax.grid(True, axis="x", alpha=0.25)
    ax.set_title("Sweep: configs, fastest first", fontsize=11, loc="left")
    return fig


# ----------------------------------------------------------------------------- output

_SVG_PREAMBLE = re.compile(r"^.*?(?=<svg)", re.S)
_ID = re.compile(r'\b(id)="([^"]+)"')
_REF = re.compile(r'(url\(|href=")#([^)"]+)')


def to_svg(fig, name: str) -> str:
    """The figure as an inline <svg> element (no XML prolog), text kept as text.

    Each figure gets its own hash salt so the ids matplotlib writes (clip paths, glyphs)
    differ between the figures of one page, and repeat between runs.
    """
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"kernelscope-{name}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = _SVG_PREAMBLE.sub("", buf.getvalue(), count=1)
    # matplotlib numbers its element ids per figure (figure_1, axes_1, ...): prefix them with
    # the plot's name so ids stay unique on a page holding several plots.
    svg = _ID.sub(lambda m: f'{m.group(1)}="{name}--{m.group(2)}"', svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}#{name}--{m.group(2)}", svg)
    return svg.replace("<svg ", f'<svg class="plot" data-plot="{name}" ', 1)


def to_png(fig, path) -> None:
    fig.savefig(path, format="png", dpi=130, metadata={"Software": None})
