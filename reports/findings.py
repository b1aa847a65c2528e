"""Rule findings as text: terminal (rich), Markdown and JSON pieces. Pure rendering."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from kernelscope.rules.findings import Finding

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def impact_text(f: Finding) -> str:
    return "impact n/a" if f.impact is None else f"impact ~{f.impact * 100:.0f}%"


def print_findings(findings: list[Finding], console: Console, not_evaluated: dict[str, list[str]] | None = None) -> None:
    """Findings under the tables, most severe and largest estimated impact first."""
    if not findings:
        console.print(Text("Findings: no rule fired.", style="green"))
    else:
        console.print(Text(f"Findings ({len(findings)}), most severe and largest estimated impact first", style="bold"))
    for n, f in enumerate(findings, 1):
        head = Text(f"{n:>2}. ")
        head.append(f"{f.severity.upper():<7}", style=_STYLE.get(f.severity, ""))
        head.append(f" {f.title}", style="bold")
        head.append(f"  [{f.rule_id}; {impact_text(f)}]", style="dim")
        console.print(head)
        console.print(Text(f"      {f.message}"), overflow="fold")
        console.print(Text(f"      try: {f.hint}", style="dim"), overflow="fold")
        console.print(Text(f"      look at: {f.section}", style="dim"), overflow="fold")
        for note in f.assumptions:
            console.print(Text(f"      assumed: {note}", style="dim"), overflow="fold")
    if not_evaluated:
        names = ", ".join(f"{rule} ({', '.join(missing) or 'data missing'})" for rule, missing in not_evaluated.items())
        console.print(Text(f"Not evaluated (metrics not collected): {names}", style="dim"), overflow="fold")


def findings_markdown(findings: list[Finding], not_evaluated: dict[str, list[str]] | None = None) -> str:
    lines = ["### Findings", ""]
    if not findings:
        lines += ["No rule fired.", ""]
    for n, f in enumerate(findings, 1):
        lines.append(f"{n}. **{f.severity.upper()}** {f.title} (`{f.rule_id}`, {impact_text(f)})  ")
        lines.append(f"   {f.message}  ")
        lines.append(f"   _Try:_ {f.hint}  ")
        lines.append(f"   _Look at:_ {f.section}")
        for note in f.assumptions:
            lines[-1] += "  "
            lines.append(f"   _Assumed:_ {note}")
    if not_evaluated:
        lines += ["", "_Not evaluated (metrics not collected):_ " + ", ".join(f"`{r}`" for r in not_evaluated)]
    lines.append("")
    return "\n".join(lines)


def findings_json(findings: list[Finding]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in findings]
