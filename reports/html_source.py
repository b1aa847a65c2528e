"""The HTML page's source view: a kernel's source lines in file order with a heat column per stall
reason, for one kernel or two side by side. Render only: the numbers are the LineProfile's."""

from __future__ import annotations

import html
from typing import Any

from kernelscope.profiler.line_compare import file_identity, site_share, weight
from kernelscope.profiler.line_sites import address_range
from kernelscope.profiler.source_lines import LineProfile

MAX_REASONS = 6          # heat columns: the reasons with the most samples
MIN_FILE_SHARE = 0.005   # files below this share of the kernel are summarised, not listed
MAX_LINES = 150          # lines per kernel, hottest kept, shown in file order
MAX_SITES_LISTED = 6     # sites of a line named in its Sites tooltip, heaviest first

CSS = """
.srcpair { display: flex; gap: 16px; align-items: flex-start; flex-wrap: wrap; }
.srcpair > div { flex: 1 1 560px; min-width: 0; overflow-x: auto; }
table.src td.code { font-family: ui-monospace, monospace; white-space: pre; max-width: 520px; overflow: hidden;
                    text-overflow: ellipsis; }
table.src td.heat { text-align: right; min-width: 38px; }
table.src tr.file td { background: var(--band); font-weight: 600; }
table.src td.stale { color: var(--bad); }
"""


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def _heat(share: float) -> str:
    """A cell shaded by its share (0..1); empty below half a percent."""
    if share < 0.005:
        return "<td class=\"heat\"></td>"
    alpha = min(1.0, 0.08 + 1.6 * share)
    return f"<td class=\"heat\" style=\"background: rgba(214, 69, 30, {alpha:.2f})\">{100 * share:.1f}</td>"


def _sites_cell(profile: LineProfile, rec) -> str:
    """How many places the line sits in, each one (address range, share, loop) in the tooltip."""
    if not rec.sites:
        return "<td>-</td>"
    samples = profile.has_source_counters
    parts = []
    for site in sorted(rec.sites, key=lambda x: (-site_share(profile, x, samples), x.first))[:MAX_SITES_LISTED]:
        loop = f", loop {address_range(*site.loop)}" if site.loop else ""
        parts.append(f"{address_range(site.first, site.last)} {100 * site_share(profile, site, samples):.1f}%{loop}")
    return f"<td title=\"{_e('; '.join(parts))}\">{len(rec.sites)}</td>"


def kernel_source_table(profile: LineProfile) -> str:
    """One kernel's lines: share of all samples, then per reason the line's share of that reason's samples."""
    counters = profile.has_source_counters
    reasons = profile.reasons()[:MAX_REASONS] if counters else []
    totals = {r: sum(rec.samples.get(r, 0.0) for rec in profile.records) for r in reasons}
    kept = profile.hottest(MAX_LINES, include_unmapped=False)
    by_file: dict[str, list] = {}
    for rec in kept:
        by_file.setdefault(rec.file, []).append(rec)
    file_share = {f: sum(weight(profile, r) for r in recs) for f, recs in by_file.items()}
    head = "<th>Line</th><th>All</th>" if counters else "<th>Line</th><th>Instr. share</th>"
    head += "".join(f"<th title=\"share of this reason's samples\">{_e(r)}</th>" for r in reasons)
    head += ("<th>Instr.</th><th title=\"places in the SASS the line compiled to; hover for each\">Sites</th>"
             + ("<th>Executed</th>" if counters else "") + "<th>Source</th>")
    rows = []
    width = 5 + len(reasons) + (1 if counters else 0)
    for path in sorted(by_file, key=lambda f: -file_share[f]):
        if file_share[path] < MIN_FILE_SHARE and counters:
            continue
        info = profile.files.get(path)
        status = f" ({info.status})" if info and info.status not in ("same", "moved") else ""
        rows.append(f"<tr class=\"file\"><td colspan=\"{width}\">{_e(file_identity(profile, path))}{_e(status)} — "
                    f"{100 * file_share[path]:.1f}%</td></tr>")
        for rec in sorted(by_file[path], key=lambda r: r.line):
            text = info.line_text(rec.line) if info else None
            stale = bool(info and rec.line in info.stale_lines)
            cells = [f"<td>{rec.line}</td>", _heat(weight(profile, rec))]
            samples = rec.samples
            cells += [_heat(samples.get(r, 0.0) / totals[r] if totals[r] else 0.0) for r in reasons]
            cells.append(f"<td>{rec.count}</td>")
            cells.append(_sites_cell(profile, rec))
            if counters:
                cells.append(f"<td>{_e(f'{rec.executed:,.0f}' if rec.executed is not None else 'n/a')}</td>")
            code = _e(text if text is not None else "(source not available)")
            cells.append(f"<td class=\"code{' stale' if stale else ''}\" title=\"{'may be stale' if stale else ''}\">{code}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
    unmapped = [r for r in profile.records if r.line is None]
    notes = []
    if unmapped:
        share = sum(weight(profile, r) for r in unmapped)
        notes.append(f"{100 * share:.1f}% on instructions without line information "
                     f"({', '.join(sorted({r.function or '?' for r in unmapped}))[:200]}).")
    notes.extend(profile.notes)
    body = "".join(rows) or f"<tr><td colspan=\"{width}\">no source lines</td></tr>"
    foot = "".join(f"<p class=\"dim\">{_e(n)}</p>" for n in notes)
    return f"<table class=\"src\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{foot}"


def source_view(sides: list[tuple[str, LineProfile]]) -> str:
    """One kernel, or two side by side, each with its own lines (heat: share of that kernel's samples)."""
    blocks = []
    for label, profile in sides:
        what = ("share of its PC samples" if profile.has_source_counters else "share of its instructions (compile only)")
        blocks.append(f"<div><h3>{_e(label)}</h3><p class=\"dim\">Heat: {what}; per stall reason, the line's share of "
                      f"that reason's samples.</p>{kernel_source_table(profile)}</div>")
    return f"<style>{CSS}</style><div class=\"srcpair\">{''.join(blocks)}</div>"
