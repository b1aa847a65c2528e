"""Finding: what one rule concluded about one kernel (or kernel pair). Rules make them, renderers show them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Most severe first; ranking and exit codes follow this order.
SEVERITIES = ("error", "warning", "info")


@dataclass
class QuotedValue:
    """A number a finding's message quotes, kept raw for JSON and formatted for text."""

    name: str                   # as written in the rule, e.g. "target.branch_ratio" or "reg_limit"
    value: float | int | str | None
    unit: str                   # a catalog unit or a message format (x, share, rel, text)
    text: str                   # formatted, "n/a" when not collected


@dataclass
class Finding:
    rule_id: str
    title: str
    severity: str               # one of SEVERITIES
    compares: str               # "target", "reference" or "baseline"
    message: str                # the rule's template with the numbers filled in
    hint: str
    section: str                # the Nsight Compute section to look at
    impact: float | None        # estimated share of the kernel's time at stake, 0..1; None: no estimate
    rule_file: str
    quoted: list[QuotedValue] = field(default_factory=list)
    # Device facts the rule used that the profile did not hold (documented defaults were used).
    assumptions: list[str] = field(default_factory=list)

    @property
    def severity_rank(self) -> int:
        return SEVERITIES.index(self.severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule_id,
            "title": self.title,
            "severity": self.severity,
            "compares": self.compares,
            "message": self.message,
            "hint": self.hint,
            "section": self.section,
            "impact": self.impact,
            "rule_file": self.rule_file,
            "values": [{"name": q.name, "value": q.value, "unit": q.unit, "text": q.text} for q in self.quoted],
            "assumptions": list(self.assumptions),
        }


def rank(findings: list[Finding]) -> list[Finding]:
    """Most severe first; within a severity, the largest estimated impact first (no estimate last)."""
    return sorted(findings, key=lambda f: (f.severity_rank, f.impact is None, -(f.impact or 0.0), f.rule_id))
