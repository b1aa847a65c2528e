"""HTML pages: the page model, the pieces every page shares, and rendering.

A page needs no network: styles are inline, plots are inline SVG, and there is no script.
What goes on a page is decided in kernelscope.reports.html_pages (one builder per kind of
result) and kernelscope.reports.page_inputs (which page an input file makes).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope import __version__
from kernelscope.profiler.units import NOT_COLLECTED
from kernelscope.reports import plots


@dataclass
class Plot:
    name: str                 # file stem for --png, and data-plot attribute in the page
    title: str
    figure: Any               # matplotlib Figure
    caption: str = ""


@dataclass
class Page:
    title: str
    subtitle: str
    plots: list[Plot] = field(default_factory=list)
    lead: str = ""                                                # HTML shown first (a gate's verdict)
    blocks: list[tuple[str, str]] = field(default_factory=list)   # (heading, HTML fragment), in page order
    findings: list[dict[str, Any]] | None = None                  # None: no rules ran
    gap_within_noise: bool = False                                # the findings' shares are of a gap within noise
    findings_note: str = ""                                       # what the findings are where A is not slower
    rules_not_evaluated: dict[str, list[str]] = field(default_factory=dict)   # rule id -> metrics missing
    notes: list[str] = field(default_factory=list)


def escape(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def findings_html(findings: list[dict[str, Any]] | None, within_noise: bool = False) -> str:
    if findings is None:
        return ""
    if not findings:
        return "<p>No rule fired.</p>"
    cards = []
    for f in findings:
        sev = str(f.get("severity", "info"))
        values = "".join(f"<li><code>{escape(v.get('name'))}</code> = {escape(v.get('text'))}</li>" for v in f.get("values") or [])
        impact = f.get("impact")
        meta = [f"rule <code>{escape(f.get('rule'))}</code>"]
        if f.get("compares"):
            meta.append(f"compares {escape(f['compares'])}")
        if f.get("section"):
            meta.append(f"ncu section {escape(f['section'])}")
        if f.get("cause"):
            meta.append(f"cause {escape(f['cause'])}")
        if is_number(f.get("explains")):
            of = "a gap within noise" if within_noise else "the gap"
            meta.append(f"explains ~{float(f['explains']) * 100:.0f}% of {of}")
        if is_number(impact):
            meta.append(f"headroom ~{float(impact) * 100:.0f}% of the kernel's time")
        for e in f.get("evidence") or []:
            speedup = f", est. speedup {float(e['speedup']):.1f}%" if is_number(e.get("speedup")) else ""
            meta.append(f"ncu agrees: {escape(e.get('rule'))} {escape(e.get('title') or '')}{speedup}")
        cards.append(
            f"<div class=\"finding sev-{escape(sev)}\"><div class=\"fhead\"><span class=\"badge\">{escape(sev)}</span> "
            f"<b>{escape(f.get('title'))}</b></div><p>{escape(f.get('message'))}</p>"
            + "".join(f"<p class=\"at\">at <code>{escape(loc.get('file'))}:{escape(loc.get('line'))}</code> — "
                      f"{100 * float(loc.get('share') or 0):.0f}% of {escape(loc.get('reason'))}</p>"
                      for loc in f.get("locations") or [])
            + (f"<p class=\"hint\">Try: {escape(f.get('hint'))}</p>" if f.get("hint") else "")
            + (f"<details><summary>numbers quoted</summary><ul class=\"values\">{values}</ul></details>" if values else "")
            + "".join(f"<p class=\"dim\">assumed: {escape(a)}</p>" for a in f.get("assumptions") or [])
            + f"<p class=\"dim\">{' · '.join(meta)}</p></div>"
        )
    return "".join(cards)


def shorten(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def plain(v: Any) -> str:
    if v is None:
        return NOT_COLLECTED
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return "x".join(str(x) for x in v)
    return str(v)


def signed_percent(v: Any) -> str:
    return f"{float(v):+.2%}" if is_number(v) else ""


def number(v: Any, spec: str, suffix: str = "") -> str:
    return f"{float(v):{spec}}{suffix}" if is_number(v) else NOT_COLLECTED


# ============================================================================ output

_CSS = """
:root { --fg:#1d2330; --dim:#6b7280; --line:#e3e6eb; --bg:#ffffff; --band:#f6f7f9; --good:#1e7e34; --bad:#b42318; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; padding: 24px 32px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px; border-bottom: 1px solid var(--line);
     padding-bottom: 4px; } h3 { font-size: 14px; margin: 6px 0; }
.dim, .subtitle { color: var(--dim); } code { font-size: 12px; background: var(--band); padding: 0 3px; border-radius: 3px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 4px 0 12px; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--band); } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.ident { max-width: 560px; overflow-wrap: anywhere; } td.better { color: var(--good); font-weight: 600; }
td.worse { color: var(--bad); font-weight: 600; }
.views { display: flex; flex-wrap: wrap; gap: 8px 28px; } .view { flex: 1 1 520px; min-width: 420px; } .view.wide { flex-basis: 100%; }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 18px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 8px; background: #fff; }
figcaption { color: var(--dim); font-size: 12px; margin-top: 4px; }
svg.plot { width: 100%; max-width: 900px; height: auto; display: block; margin: 0 auto; }
.finding { border-left: 4px solid var(--dim); background: var(--band); padding: 8px 12px; margin: 8px 0; border-radius: 4px; }
.finding p { margin: 4px 0; } .finding ul.values { margin: 4px 0; padding-left: 20px; font-size: 12.5px; }
.sev-error { border-color: var(--bad); } .sev-warning { border-color: #d4a017; } .sev-info { border-color: #1f6fd1; }
.badge { display: inline-block; font-size: 11px; text-transform: uppercase; padding: 0 6px; border-radius: 3px;
         background: #fff; border: 1px solid var(--line); }
.hint { font-style: italic; } details summary { cursor: pointer; color: var(--dim); font-size: 12px; } .notes li { color: var(--dim); }
.verdict { font-size: 20px; font-weight: 700; } .v-regression { color: var(--bad); } .v-pass { color: var(--good); }
.v-improvement { color: #17a2b8; } .v-inconclusive { color: #b8860b; } .s-ok { color: var(--good); }
.s-invalid, .s-failed, .s-wrong { color: var(--bad); }
footer { margin-top: 32px; color: var(--dim); font-size: 12px; }
"""


def render(page: Page) -> str:
    """The page as one HTML document (no external resources, no script)."""
    out = [
        "<!DOCTYPE html>",
        "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>{escape(page.title)} — kernelscope</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{escape(page.title)}</h1><p class=\"subtitle\">{escape(page.subtitle)}</p>",
        *_sections(page),
    ]
    out.append(f"<footer>kernelscope {escape(__version__)}. A metric a report did not hold reads {NOT_COLLECTED}, never 0.</footer>")
    out.append("</body></html>\n")
    return "\n".join(out)


def fragment(page: Page, *, with_plots: bool = True) -> str:
    """The page's sections as one <div> to embed (a notebook cell): no document, no style
    sheet, no script; the same findings, tables and inline SVG plots as the page."""
    body = "\n".join(_sections(page, with_plots=with_plots))
    return (f"<div class=\"kernelscope\"><h3>{escape(page.title)}</h3><p><i>{escape(page.subtitle)}</i></p>\n{body}\n"
            f"<p><small>kernelscope {escape(__version__)}; {NOT_COLLECTED} marks a metric that was not collected.</small></p></div>")


def _sections(page: Page, *, with_plots: bool = True) -> list[str]:
    out: list[str] = []
    if page.lead:
        out.append(f"<section id=\"summary\">{page.lead}</section>")
    if page.findings is not None:
        skipped = ""
        if page.rules_not_evaluated:
            names = ", ".join(f"{rule} ({', '.join(missing) or 'data missing'})" for rule, missing in page.rules_not_evaluated.items())
            skipped = f"<p class=\"dim\">Not evaluated (metrics not collected): {escape(names)}</p>"
        note = f"<p class=\"dim\">{escape(page.findings_note)}</p>" if page.findings_note and page.findings else ""
        out.append(f"<section id=\"findings\"><h2>Findings</h2>{note}"
                   f"{findings_html(page.findings, page.gap_within_noise)}{skipped}</section>")
    if page.plots and with_plots:
        figs = "".join(
            f"<figure id=\"plot-{escape(p.name)}\">{plots.to_svg(p.figure, p.name)}<figcaption>{escape(p.caption)}</figcaption></figure>"
            for p in page.plots
        )
        out.append(f"<section id=\"plots\"><h2>Plots</h2><div class=\"plots\">{figs}</div></section>")
    if page.notes:
        notes = "".join(f"<li>{escape(n)}</li>" for n in dict.fromkeys(page.notes))
        out.append(f"<section id=\"notes\"><h2>Notes</h2><ul class=\"notes\">{notes}</ul></section>")
    for heading, block in page.blocks:
        anchor = "".join(c if c.isalnum() else "-" for c in heading.lower()).strip("-")
        out.append(f"<section id=\"{escape(anchor)}\"><h2>{escape(heading)}</h2>{block}</section>")
    return out


def write_pngs(page: Page, directory: str | Path) -> list[Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for p in page.plots:
        path = directory / f"{p.name}.png"
        plots.to_png(p.figure, path)
        written.append(path)
    return written
