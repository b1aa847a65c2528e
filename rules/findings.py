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
    impact: float | None        # headroom: share of the kernel's own time at stake, 0..1; None: no estimate
    rule_file: str
    quoted: list[QuotedValue] = field(default_factory=list)
    # Device facts the rule used that the profile did not hold (documented defaults were used).
    assumptions: list[str] = field(default_factory=list)
    cause: str | None = None    # an id of rules/causes.toml; None: a symptom that names no cause
    # Against a reference: the rule's estimate of the time (ns) the target loses through this
    # cause, and the share of the measured gap that is (capped at the gap); None: no estimate.
    gap_ns: float | None = None
    explains: float | None = None
    # Nsight Compute's own rule results on the target that agree (rule, title, speedup, speedup_kind).
    evidence: list[dict[str, Any]] = field(default_factory=list)
    # Source lines where the finding's samples sit, most first: {file, line, share, reason}
    # (rules.line_locations); empty when the profile has no per-line records.
    locations: list[dict[str, Any]] = field(default_factory=list)

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
            "cause": self.cause,
            "explains": self.explains,
            "gap_ns": self.gap_ns,
            "impact": self.impact,
            "rule_file": self.rule_file,
            "values": [{"name": q.name, "value": q.value, "unit": q.unit, "text": q.text} for q in self.quoted],
            "assumptions": list(self.assumptions),
            "evidence": list(self.evidence),
            "locations": [dict(x) for x in self.locations],
        }


def rank(findings: list[Finding]) -> list[Finding]:
    """Findings that name a cause before symptoms (which say what differs, not why); within
    each, the largest share of the measured gap explained first (against a reference), then
    the largest headroom; severity only breaks ties. No estimate ranks after any estimate."""
    return sorted(findings, key=lambda f: (f.cause is None, f.explains is None, -(f.explains or 0.0),
                                           f.impact is None, -(f.impact or 0.0), f.severity_rank, f.rule_id))
