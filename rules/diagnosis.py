"""A kernel against its reference: which findings explain the measured time gap, and how much.

The impact model, stated once:
- A rule comparing with the reference may estimate, in its `gap` expression, the time (ns)
  the target loses through its cause (extra DRAM bytes at the reference's DRAM rate, the
  tensor work at the reference's tensor-pipe utilization, ...).
- A rule about one kernel states its `impact`: the share of that kernel's own time at stake
  (its headroom). Against a reference, the time it explains is what the cause costs the
  target minus what the same expression says it costs the reference:
  impact(A) x time(A) - impact(B) x time(B).
- A rule may name the quantity that defines its cause (`measure`, with the direction that is
  `worse`): where the target is not worse than the reference on it (within MEASURE_WITHIN), the
  cause is no difference between them and explains nothing of the gap.
- Either estimate is capped at the measured gap and reported as the share of it explained.
  A finding whose rule also fires on the reference, and that explains less than
  SHARED_WITHIN of the gap, is no difference: it is folded into one "shared by both" note.
- Findings rank by the share of the gap explained; headroom, then severity, break ties.

Nsight Compute's own rule results are evidence: those a finding's rule names in
`ncu_evidence` are attached to it, and the A/B frame lists what ncu advises for one kernel
and not for the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kernelscope.profiler.catalog import Catalog, load_catalog
from kernelscope.profiler.compare import Verdict, verdict as measure_verdict
from kernelscope.profiler.record import KernelProfile, NcuRuleResult
from kernelscope.rules.engine import evaluate_rules, headroom, measure
from kernelscope.rules.findings import Finding, rank
from kernelscope.rules.loader import load_rules

# A finding that also holds for the reference and explains less than this share of the gap
# is folded into the "shared by both" note.
SHARED_WITHIN = 0.1
# A target within this relative distance of the reference on a rule's measure is "not worse".
MEASURE_WITHIN = 0.05


@dataclass
class Diagnosis:
    findings: list[Finding]                 # ranked: the first names the main reason
    shared: list[Finding]                   # true of both kernels: not a difference
    passed: list[str]
    not_evaluated: dict[str, list[str]]
    not_applicable: list[str]
    verdict: Verdict | None = None
    ncu_frame: dict[str, list[dict[str, Any]]] = field(default_factory=dict)   # a_only, b_only, both

    @property
    def main_reason(self) -> Finding | None:
        return self.findings[0] if self.findings else None


def diagnose(
    target: KernelProfile,
    reference: KernelProfile | None = None,
    baseline: KernelProfile | None = None,
    extra_rule_files: Iterable[str | Path] = (),
    disabled: Iterable[str] = (),
    catalog: Catalog | None = None,
) -> Diagnosis:
    catalog = catalog or load_catalog()
    rules = load_rules(extra_rule_files, catalog).enabled(disabled)
    evaluation = evaluate_rules(rules, target, reference, baseline, catalog)
    by_id = {r.id: r for r in rules}
    for f in evaluation.findings:
        f.evidence = _evidence(target, by_id[f.rule_id].ncu_evidence)
    if reference is None:
        return Diagnosis(evaluation.findings, [], evaluation.passed, evaluation.not_evaluated, evaluation.not_applicable)

    result = measure_verdict(target, reference, catalog)
    gap = result.gap_ns if result.gap_ns is not None and result.gap_ns > 0 else None
    own = [r for r in rules if r.compares == "target"]
    on_reference = {f.rule_id for f in evaluate_rules(own, reference, None, None, catalog).findings}
    findings, shared = [], []
    for f in evaluation.findings:
        rule = by_id[f.rule_id]
        explained = f.gap_ns
        if rule.compares == "target" and result.known:
            cost_a = (f.impact or 0.0) * result.a_ns
            cost_b = (headroom(rule, reference, catalog) or 0.0) * result.b_ns
            explained = max(0.0, cost_a - cost_b) if f.impact is not None else None
            if explained is not None and not _worse(rule, target, reference, catalog):
                explained = 0.0
            f.gap_ns = explained
        if gap is not None and explained is not None:
            f.explains = min(explained, gap) / gap
        if rule.compares == "target" and f.rule_id in on_reference and (f.explains or 0.0) < SHARED_WITHIN:
            shared.append(f)
        else:
            findings.append(f)
    return Diagnosis(rank(findings), shared, evaluation.passed, evaluation.not_evaluated,
                     evaluation.not_applicable, result, ncu_frame(target, reference))


def _worse(rule, target: KernelProfile, reference: KernelProfile, catalog: Catalog) -> bool:
    """Whether the target is worse than the reference on the rule's measure (True without one)."""
    a, b = measure(rule, target, catalog), measure(rule, reference, catalog)
    if a is None or b is None:
        return True
    margin = MEASURE_WITHIN * max(abs(a), abs(b))
    return a > b + margin if rule.worse == "higher" else a < b - margin


def _evidence(profile: KernelProfile, rule_ids: Iterable[str]) -> list[dict[str, Any]]:
    wanted = set(rule_ids)
    return [_brief(r) for r in profile.ncu_rules if r.rule in wanted and r.advice]


def _brief(r: NcuRuleResult) -> dict[str, Any]:
    return {"rule": r.rule, "title": r.title, "speedup": r.speedup, "speedup_kind": r.speedup_kind}


def ncu_frame(a: KernelProfile, b: KernelProfile) -> dict[str, list[dict[str, Any]]]:
    """ncu's advice for A and not B, for B and not A, and for both (matched by rule and title),
    largest estimated speedup first."""
    def advice(p: KernelProfile) -> dict[tuple[str, str], NcuRuleResult]:
        out: dict[tuple[str, str], NcuRuleResult] = {}
        for r in p.ncu_rules:
            if r.advice and (r.title or r.speedup is not None):
                key = (r.rule, r.title)
                if key not in out or (r.speedup or 0) > (out[key].speedup or 0):
                    out[key] = r
        return out

    on_a, on_b = advice(a), advice(b)

    def listed(keys, source) -> list[dict[str, Any]]:
        rows = [{**_brief(source[k]), "message": source[k].message} for k in keys]
        return sorted(rows, key=lambda r: -(r["speedup"] or 0.0))

    return {
        "a_only": listed([k for k in on_a if k not in on_b], on_a),
        "b_only": listed([k for k in on_b if k not in on_a], on_b),
        "both": listed([k for k in on_a if k in on_b], on_a),
    }
