"""Renderings of a gate result: terminal (rich), markdown, JUnit XML, JSON, GitHub annotations.

Nothing here decides a verdict (kernelscope.gate.verdicts does); these only lay it out.
The JSON document is versioned: schema `kernelscope.gate`, GATE_SCHEMA_VERSION.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable
from xml.sax.saxutils import escape, quoteattr

from kernelscope import __version__
from kernelscope.gate.policy import TIMING
from kernelscope.gate.verdicts import IMPROVEMENT, INCONCLUSIVE, PASS, REGRESSION, VERDICTS, GateResult, MetricVerdict

GATE_SCHEMA = "kernelscope.gate"
GATE_SCHEMA_VERSION = 1

_STYLE = {PASS: "green", REGRESSION: "bold red", IMPROVEMENT: "cyan", INCONCLUSIVE: "yellow"}
_EMOJI = {PASS: "✅", REGRESSION: "❌", IMPROVEMENT: "🚀", INCONCLUSIVE: "⚠️"}
_SHORT_KERNEL = 48


def short_kernel(name: str | None, width: int = _SHORT_KERNEL) -> str:
    if not name:
        return ""
    return name if len(name) <= width else name[: width - 1] + "…"


def metric_label(m: MetricVerdict) -> str:
    return f"{m.family}:{m.metric}"


def _value(v: Any, unit: str = "") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if unit == "ms":
            return f"{v * 1000:.2f} µs" if v < 1 else f"{v:.4f} ms"
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:.6g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _change(m: MetricVerdict) -> str:
    return "" if m.change is None else f"{m.change:+.2%}"


def _shown(result: GateResult, verbose: bool) -> Iterable[tuple[str, list[MetricVerdict]]]:
    """Per case: the metrics worth a row (all with verbose; else timings and non-PASS)."""
    for case in result.cases:
        rows = [m for m in case.metrics if verbose or m.family == TIMING or m.verdict != PASS]
        yield case.case, rows


def summary_line(result: GateResult) -> str:
    counts = result.counts()
    parts = [f"{counts[v]} {v.lower()}" for v in VERDICTS if counts[v]]
    cases = len(result.cases)
    return (f"gate: {result.verdict} ({cases} case{'s' if cases != 1 else ''}; "
            f"{', '.join(parts) or 'no metrics'}) -> exit {result.exit_code}")


# ----------------------------------------------------------------------------- terminal

def print_gate(result: GateResult, console=None, *, verbose: bool = False) -> None:
    from rich.table import Table
    from rich.text import Text

    if console is None:
        from kernelscope.reports.terminal import make_console

        console = make_console()
    for d in result.environment_differences:
        console.print(Text(f"environment differs: {d.key}: baseline {d.baseline!r}, current {d.current!r} "
                           f"-> {', '.join(d.families)} inconclusive", style="yellow"))
    for case in result.cases:
        counts = case.counts()
        head = Text(f"{case.case}", style="bold") + Text(f"  {case.description}  ", style="dim")
        head += Text(case.verdict, style=_STYLE[case.verdict])
        head += Text("  " + ", ".join(f"{counts[v]} {v.lower()}" for v in VERDICTS if counts[v]), style="dim")
        console.print(head)
        rows = [m for m in case.metrics if verbose or m.family == TIMING or m.verdict != PASS]
        if not rows:
            continue
        table = Table(show_edge=False, pad_edge=False, box=None, padding=(0, 1))
        for col, justify in (("metric", "left"), ("kernel", "left"), ("baseline", "right"),
                             ("current", "right"), ("change", "right"), ("verdict", "left"), ("why", "left")):
            table.add_column(col, justify=justify, overflow="fold")
        for m in rows:
            table.add_row(metric_label(m), short_kernel(m.kernel, 24), _value(m.baseline, m.unit),
                          _value(m.current, m.unit), _change(m), Text(m.verdict, style=_STYLE[m.verdict]), m.reason)
        console.print(table)
    console.print(Text(summary_line(result), style=_STYLE[result.verdict]))


# ----------------------------------------------------------------------------- markdown

def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def gate_markdown(result: GateResult, *, title: str = "kernelscope gate", verbose: bool = False) -> str:
    v = result.verdict
    lines = [f"## {_EMOJI[v]} {title}: {v}", "", f"`{summary_line(result)}`", ""]
    if result.environment_differences:
        lines += ["**Environment differs** (affected metrics are inconclusive):", ""]
        lines += [f"- `{d.key}`: baseline `{d.baseline}`, current `{d.current}` ({', '.join(d.families)})"
                  for d in result.environment_differences]
        lines.append("")
    lines += ["| case | verdict | regression | inconclusive | improvement | pass |", "|---|---|---:|---:|---:|---:|"]
    for case in result.cases:
        c = case.counts()
        lines.append(f"| `{_cell(case.case)}` | {_EMOJI[case.verdict]} {case.verdict} | {c[REGRESSION]} | "
                     f"{c[INCONCLUSIVE]} | {c[IMPROVEMENT]} | {c[PASS]} |")
    lines.append("")
    detail = [(cid, rows) for cid, rows in _shown(result, verbose) if rows]
    if detail:
        lines += ["| case | metric | kernel | baseline | current | change | verdict | why |",
                  "|---|---|---|---:|---:|---:|---|---|"]
        for cid, rows in detail:
            for m in rows:
                lines.append(f"| `{_cell(cid)}` | `{_cell(metric_label(m))}` | {_cell(short_kernel(m.kernel, 32))} | "
                             f"{_cell(_value(m.baseline, m.unit))} | {_cell(_value(m.current, m.unit))} | "
                             f"{_change(m)} | {m.verdict} | {_cell(m.reason)} |")
        lines.append("")
    env = result.current_environment
    gpu = (env.get("gpu") or {}).get("name")
    facts = [f"kernelscope {__version__}"]
    if gpu:
        facts.append(gpu)
    if env.get("nvidia-cutlass-dsl"):
        facts.append(f"nvidia-cutlass-dsl {env['nvidia-cutlass-dsl']}")
    commit = (env.get("git") or {}).get("commit")
    base_commit = (result.baseline_environment.get("git") or {}).get("commit")
    if commit or base_commit:
        facts.append(f"commit {str(commit)[:10]} vs baseline {str(base_commit)[:10]}")
    lines += [f"<sub>{' · '.join(facts)}</sub>", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- JUnit

def gate_junit(result: GateResult, *, suite_name: str = "kernelscope.gate") -> str:
    """One <testcase> per case: <failure> for a regression, <skipped> when inconclusive."""
    counts = {REGRESSION: 0, INCONCLUSIVE: 0}
    body = []
    for case in result.cases:
        lines = [f"{m.verdict:12} {metric_label(m)} {short_kernel(m.kernel, 40)} "
                 f"{_value(m.baseline, m.unit)} -> {_value(m.current, m.unit)} {_change(m)}: {m.reason}"
                 for m in case.metrics]
        out = f"<system-out>{escape(chr(10).join(lines))}</system-out>"
        attrs = f"classname={quoteattr(suite_name)} name={quoteattr(case.case)}"
        if case.verdict == REGRESSION:
            counts[REGRESSION] += 1
            bad = [m for m in case.metrics if m.verdict == REGRESSION]
            message = "; ".join(f"{metric_label(m)}: {m.reason}" for m in bad[:5])
            text = "\n".join(f"{metric_label(m)} [{m.kernel or '-'}]: {m.reason}" for m in bad)
            body.append(f"  <testcase {attrs}>\n    <failure message={quoteattr(message)} type=\"regression\">"
                        f"{escape(text)}</failure>\n    {out}\n  </testcase>")
        elif case.verdict == INCONCLUSIVE:
            counts[INCONCLUSIVE] += 1
            unsure = [m for m in case.metrics if m.verdict == INCONCLUSIVE]
            message = "inconclusive: " + "; ".join(f"{metric_label(m)}: {m.reason}" for m in unsure[:5])
            body.append(f"  <testcase {attrs}>\n    <skipped message={quoteattr(message)}/>\n    {out}\n  </testcase>")
        else:
            body.append(f"  <testcase {attrs}>\n    {out}\n  </testcase>")
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name={quoteattr(suite_name)} tests="{len(result.cases)}" '
            f'failures="{counts[REGRESSION]}" skipped="{counts[INCONCLUSIVE]}">\n'
            f'<testsuite name={quoteattr(suite_name)} tests="{len(result.cases)}" failures="{counts[REGRESSION]}" '
            f'errors="0" skipped="{counts[INCONCLUSIVE]}">')
    return "\n".join([head, *body, "</testsuite>", "</testsuites>", ""])


# ----------------------------------------------------------------------------- JSON

def gate_document(result: GateResult, *, baseline_path: str | None = None, source: str | None = None) -> dict[str, Any]:
    return {
        "schema": GATE_SCHEMA,
        "schema_version": GATE_SCHEMA_VERSION,
        "kernelscope_version": __version__,
        "mode": result.mode,
        "baseline": baseline_path,
        "source": source,
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "accept_inconclusive": result.accept_inconclusive,
        "counts": result.counts(),
        "environment": {
            "baseline": result.baseline_environment,
            "current": result.current_environment,
            "differences": [vars(d) for d in result.environment_differences],
        },
        "cases": [{"case": c.case, "description": c.description, "verdict": c.verdict, "counts": c.counts(),
                   "metrics": [m.to_dict() for m in c.metrics]} for c in result.cases],
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, default=str) + "\n"


# ----------------------------------------------------------------------------- GitHub Actions

def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(result: GateResult, *, file: str | None = None, limit: int = 20) -> list[str]:
    """Workflow commands: ::error for regressions, ::warning when inconclusive, ::notice for
    improvements (GitHub shows a limited number per step, so the worst come first)."""
    level = {REGRESSION: "error", INCONCLUSIVE: "warning", IMPROVEMENT: "notice"}
    ordered = sorted((m for m in result.metrics if m.verdict in level), key=lambda m: VERDICTS.index(m.verdict))
    out = []
    for m in ordered[:limit]:
        title = f"{m.verdict}: {m.case} {metric_label(m)}"
        props = f"title={_escape_property(title)}"
        if file:
            props = f"file={_escape_property(file)},{props}"
        kernel = f" [{short_kernel(m.kernel)}]" if m.kernel else ""
        message = f"{m.case} {metric_label(m)}{kernel}: {_value(m.baseline, m.unit)} -> {_value(m.current, m.unit)}: {m.reason}"
        out.append(f"::{level[m.verdict]} {props}::{_escape_data(message)}")
    if len(ordered) > limit:
        out.append(f"::notice title=kernelscope gate::{len(ordered) - limit} more findings in the gate summary")
    return out


def under_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"
