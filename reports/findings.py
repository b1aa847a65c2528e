"""The headline and the rule findings as text: terminal (rich), Markdown and JSON pieces. Pure rendering."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from kernelscope.profiler.compare import Comparison, Verdict
from kernelscope.profiler.units import format_value, kernel_label
from kernelscope.rules.diagnosis import Diagnosis
from kernelscope.rules.findings import Finding
from kernelscope.rules.line_locations import location_text

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def impact_text(f: Finding, within_noise: bool = False, no_gap: bool = False) -> str:
    """The share of the gap a finding explains and its headroom; a share of a gap within noise says
    so, and so does a finding with neither where A is not the slower kernel (no_gap)."""
    parts = []
    if f.explains is not None:
        of = "a gap within noise" if within_noise else "the gap"
        parts.append(f"explains ~{f.explains * 100:.0f}% of {of}")
    if f.impact is not None:
        parts.append(f"headroom ~{f.impact * 100:.0f}%")
    if not parts:
        return "no gap to explain" if no_gap else "impact n/a"
    return "; ".join(parts)


def not_slower(result: Diagnosis | None) -> bool:
    """A against a reference and measured not slower (the same time, or faster): its findings are
    counters that differ, none of them a cost."""
    v = result.verdict if result is not None else None
    return v is not None and v.known and v.faster != "b"


def findings_heading(count: int, result: Diagnosis | None) -> str:
    faster = result.verdict.faster if not_slower(result) else None
    return f"Findings ({count})" + (not_slower_note(faster) or
                                     ", causes first, the largest share of the gap explained first")


def not_slower_note(faster: str | None) -> str:
    """What findings are where A is not the slower kernel ('same' or 'a', the verdict's `faster`);
    '' otherwise."""
    if faster == "same":
        return ": A and B take the same time, so none of them costs time here; counters that differ, not reasons"
    if faster == "a":
        return " on A, the faster kernel: its own headroom, none the reason for a gap"
    return ""


def headline(verdict: Verdict | None, name_a: str = "A", name_b: str = "B") -> str:
    """'A is 12.3% slower than B (177.95 us vs 175.20 us, a gap of 2.75 us)', or why it cannot be said."""
    if verdict is None or not verdict.known:
        return "Durations: not collected for both kernels; no verdict on which is faster."
    a, b = format_value(verdict.a_ns, "ns"), format_value(verdict.b_ns, "ns")
    if verdict.faster == "same":
        return f"{name_a} and {name_b} take the same time ({a} vs {b})."
    gap = format_value(abs(verdict.gap_ns or 0.0), "ns")
    slower, faster = (name_a, name_b) if verdict.faster == "b" else (name_b, name_a)
    return f"{slower} is {(verdict.slower_by or 0.0) * 100:.1f}% slower than {faster} ({a} vs {b}, a gap of {gap})."


def reason_text(result: Diagnosis | None) -> str | None:
    """The main reason, when A is the slower kernel and a cause explains enough of the gap."""
    if result is None or result.verdict is None or result.verdict.faster != "b":
        return None
    top = result.main_reason
    if top is None:
        return None
    share = f" (explains ~{top.explains * 100:.0f}% of the gap)" if top.explains is not None else ""
    return f"{top.title}{share}"


def unexplained_text(result: Diagnosis | None) -> str | None:
    """Why no main reason is named ('no single cause explains ...', or that A is the faster one)."""
    note = result.unexplained if result is not None and result.verdict is not None else None
    return note[0].upper() + note[1:] + "." if note else None


def print_headline(comparison: Comparison, result: Diagnosis | None, console: Console) -> None:
    console.print(Text(headline(comparison.verdict, f"A ({kernel_label(comparison.a)})", f"B ({kernel_label(comparison.b)})"), style="bold"),
                  overflow="fold")
    reason, note = reason_text(result), unexplained_text(result)
    if reason:
        console.print(Text(f"Main reason: {reason}", style="bold"), overflow="fold")
    elif note:
        console.print(Text(note, style="bold"), overflow="fold")


def headline_markdown(comparison: Comparison, result: Diagnosis | None) -> str:
    lines = [f"**{headline(comparison.verdict, f'A (`{kernel_label(comparison.a)}`)', f'B (`{kernel_label(comparison.b)}`)')}**  "]
    reason, note = reason_text(result), unexplained_text(result)
    if reason:
        lines.append(f"**Main reason:** {reason}")
    elif note:
        lines.append(f"**{note}**")
    return "\n".join(lines) + "\n"


def print_findings(findings: list[Finding], console: Console, not_evaluated: dict[str, list[str]] | None = None,
                   result: Diagnosis | None = None) -> None:
    """Findings under the tables, the largest share of the gap explained first."""
    if not findings:
        console.print(Text("Findings: no rule fired.", style="green"))
    else:
        console.print(Text(findings_heading(len(findings), result), style="bold"), overflow="fold")
    noise = result is not None and result.within_noise
    for n, f in enumerate(findings, 1):
        head = Text(f"{n:>2}. ")
        head.append(f"{f.severity.upper():<7}", style=_STYLE.get(f.severity, ""))
        head.append(f" {f.title}", style="bold")
        head.append(f"  [{f.rule_id}; {impact_text(f, noise, not_slower(result))}]", style="dim")
        console.print(head)
        console.print(Text(f"      {f.message}"), overflow="fold")
        for loc in f.locations:
            console.print(Text(f"      at: {location_text(loc)}"), overflow="fold")
        console.print(Text(f"      try: {f.hint}", style="dim"), overflow="fold")
        console.print(Text(f"      look at: {f.section}", style="dim"), overflow="fold")
        if f.evidence:
            console.print(Text(f"      ncu agrees: {evidence_text(f.evidence)}", style="dim"), overflow="fold")
        for note in f.assumptions:
            console.print(Text(f"      assumed: {note}", style="dim"), overflow="fold")
    if result is not None and result.shared:
        console.print(Text(f"Shared by both (not a difference): {shared_text(result)}", style="dim"), overflow="fold")
    if result is not None and result.ncu_frame.get("a_only"):
        console.print(Text("Nsight Compute advises for A and not for B: " + _ncu_list(result.ncu_frame["a_only"]), style="dim"),
                      overflow="fold")
    if not_evaluated:
        console.print(Text(f"Not evaluated: {not_evaluated_text(not_evaluated)}", style="dim"), overflow="fold")


def not_evaluated_text(not_evaluated: dict[str, list[str]]) -> str:
    """Why each rule gave no answer: metrics not collected, or (nothing missing) a value it
    computes is undefined, such as a ratio over a count that is zero."""
    return "; ".join(f"{rule} ({', '.join(missing)} not collected)" if missing
                     else f"{rule} (undefined with these values, e.g. a division by zero)"
                     for rule, missing in not_evaluated.items())


def evidence_text(evidence: list[dict[str, Any]]) -> str:
    return "; ".join(_ncu_item(e) for e in evidence)


def _ncu_item(e: dict[str, Any]) -> str:
    label = f"{e['rule']}" + (f" ({e['title']})" if e.get("title") else "")
    if e.get("speedup") is not None:
        label += f", est. speedup {e['speedup']:.1f}% {e.get('speedup_kind') or ''}".rstrip()
    return label


def _ncu_list(rows: list[dict[str, Any]]) -> str:
    return "; ".join(_ncu_item(r) for r in rows)


def shared_text(result: Diagnosis) -> str:
    return "; ".join(f"{f.title} [{f.rule_id}]" for f in result.shared)


def findings_markdown(findings: list[Finding], not_evaluated: dict[str, list[str]] | None = None,
                      result: Diagnosis | None = None) -> str:
    lines = ["### Findings", ""]
    if not findings:
        lines += ["No rule fired.", ""]
    elif not_slower(result):
        lines += [f"_{findings_heading(len(findings), result)}._", ""]
    noise = result is not None and result.within_noise
    for n, f in enumerate(findings, 1):
        lines.append(f"{n}. **{f.severity.upper()}** {f.title} (`{f.rule_id}`, {impact_text(f, noise, not_slower(result))})  ")
        lines.append(f"   {f.message}  ")
        for loc in f.locations:
            lines.append(f"   _At:_ `{loc['file']}:{loc['line']}` — {100 * loc['share']:.0f}% of {loc['reason']}  ")
        lines.append(f"   _Try:_ {f.hint}  ")
        lines.append(f"   _Look at:_ {f.section}")
        if f.evidence:
            lines[-1] += "  "
            lines.append(f"   _ncu agrees:_ {evidence_text(f.evidence)}")
        for note in f.assumptions:
            lines[-1] += "  "
            lines.append(f"   _Assumed:_ {note}")
    if result is not None and result.shared:
        lines += ["", f"_Shared by both (not a difference):_ {shared_text(result)}"]
    if result is not None and result.ncu_frame.get("a_only"):
        lines += ["", f"_Nsight Compute advises for A and not for B:_ {_ncu_list(result.ncu_frame['a_only'])}"]
    if not_evaluated:
        lines += ["", "_Not evaluated:_ " + not_evaluated_text(not_evaluated)]
    lines.append("")
    return "\n".join(lines)


def findings_json(findings: list[Finding]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in findings]


def diagnosis_json(result: Diagnosis) -> dict[str, Any]:
    """The parts of a diff document the diagnosis adds (docs/json-format.md)."""
    verdict = result.verdict.to_dict() if result.verdict is not None else None
    if verdict is not None:
        top = result.main_reason
        verdict["main_reason"] = (
            {"rule": top.rule_id, "cause": top.cause, "title": top.title, "explains": top.explains}
            if top is not None and top.cause is not None and result.verdict.faster == "b" else None
        )
        verdict["within_noise"] = result.within_noise
        verdict["unexplained"] = result.unexplained
    return {
        "verdict": verdict,
        "findings": findings_json(result.findings),
        "shared": findings_json(result.shared),
        "ncu_rules": result.ncu_frame,
        "rules_not_evaluated": result.not_evaluated,
    }
