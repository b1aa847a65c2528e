"""A kernel against its reference: which findings explain the measured time gap, and how much.

The impact model, stated once:
- A rule comparing with the reference may estimate, in its `gap` expression, the time (ns)
  the target loses through its cause (extra DRAM bytes at the reference's DRAM rate, the
  tensor work at the reference's tensor-pipe utilization, ...).
- A rule about one kernel states its `impact`: the share of that kernel's own time at stake
  (its headroom). Against a reference, the time it explains is what the cause costs the
  target minus what the same expression says it costs the reference:
  impact(A) x time(A) - impact(B) x time(B), floored at 0. Where the expression cannot be
  evaluated on the reference (a metric it reads was not collected there), the finding claims
  no share of the gap: only its headroom is shown. A rule about one kernel may instead give
  its own `gap` expression (reading reference.ID too), used when a reference is given: the
  stall rules do, because a stall's share moves between stall reasons without changing time.
- A rule may name the quantity that defines its cause (`measure`, with the direction that is
  `worse`): where the target is not worse than the reference on it (within MEASURE_WITHIN), the
  cause is no difference between them and explains nothing of the gap.
- Either estimate is capped at the measured gap and reported as the share of it explained.
  Where the target ran at a lower SM clock (cause CLOCK_CAUSE), the time that clock explains
  is frequency, not cycles: every other finding is capped at the rest of the gap.
  Where the two take the same time (profiler.compare.SAME_WITHIN), no finding claims a share.
  A finding whose rule also fires on the reference, and that explains less than
  SHARED_WITHIN of the gap, is no difference: it is folded into one "shared by both" note.
- Findings rank by the share of the gap explained; headroom, then severity, break ties.
- The verdict names a main reason only where it can be defended: A is slower by more than
  NOISE_FLOOR (below it, two kernels measured once differ by run-to-run noise), and the first
  finding names a cause that explains at least MAIN_REASON_MIN of the gap; otherwise it says
  that no single cause explains the gap.

Nsight Compute's own rule results are evidence: those a finding's rule names in
`ncu_evidence` are attached to it, and the A/B frame lists what ncu advises for one kernel
and not for the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kernelscope.profiler.catalog import Catalog, evaluate, load_catalog
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
# A gap smaller than this (relative to the faster kernel) between two single measurements is
# within run-to-run noise: clocks, DRAM refresh and cache state move one launch by a few percent.
NOISE_FLOOR = 0.03
# The least share of the gap a cause must explain to be called the main reason.
MAIN_REASON_MIN = 0.25
# The cause whose share of the gap is clock frequency: what the code costs is the rest.
CLOCK_CAUSE = "lower-clock"
# Instructions are counted, not timed: a target executing this much more than the reference
# differs in its code even where one launch each cannot time the difference (polling loops let
# the counts of one kernel vary a little between launches).
MORE_INSTRUCTIONS = 0.02


@dataclass
class Diagnosis:
    findings: list[Finding]                 # ranked: the first names the main reason
    shared: list[Finding]                   # true of both kernels: not a difference
    passed: list[str]
    not_evaluated: dict[str, list[str]]
    not_applicable: list[str]
    verdict: Verdict | None = None
    ncu_frame: dict[str, list[dict[str, Any]]] = field(default_factory=dict)   # a_only, b_only, both
    # The target's extra executed instructions against the reference, when beyond MORE_INSTRUCTIONS.
    more_instructions: str | None = None
    # What neither report collected of the evidence most causes are read from (warp stalls, the
    # instruction mix, memory traffic): a report of few sections cannot rule those causes in or out.
    missing_evidence: list[str] = field(default_factory=list)

    @property
    def within_noise(self) -> bool:
        """A is slower than B, but by less than run-to-run noise between single measurements."""
        v = self.verdict
        return v is not None and v.faster == "b" and (v.slower_by or 0.0) < NOISE_FLOOR

    @property
    def main_reason(self) -> Finding | None:
        """The first finding, when A is slower beyond noise and it names a cause that explains
        at least MAIN_REASON_MIN of the gap (without a reference: the first finding)."""
        top = self.findings[0] if self.findings else None
        if self.verdict is None or top is None:
            return top
        if self.verdict.faster != "b" or self.within_noise or top.cause is None:
            return None
        return top if (top.explains or 0.0) >= MAIN_REASON_MIN else None

    @property
    def unexplained(self) -> str | None:
        """Why no main reason is named: noise, no single cause, or A being the faster one."""
        v = self.verdict
        if v is not None and v.faster == "a" and (v.slower_by or 0.0) >= NOISE_FLOOR:
            # The rules explain what makes the target slower; here the reference is.
            return (f"A is the faster kernel: its findings are its own headroom, none is the reason for a gap; "
                    f"to see what makes B {(v.slower_by or 0.0) * 100:.1f}% slower, swap the two (B first)")
        if v is None or v.faster != "b" or self.main_reason is not None:
            return None
        gap = f"{(v.slower_by or 0.0) * 100:.1f}%"
        if self.within_noise:
            note = (f"the {gap} gap is within run-to-run noise (under {NOISE_FLOOR * 100:.0f}% between two kernels "
                    f"measured once): measure both again before looking for a cause")
            if self.more_instructions:
                note += f"; what is counted, not timed, does differ: {self.more_instructions}"
            return note
        note = f"no single cause explains the {gap} gap"
        if self.missing_evidence:
            lacking = self.missing_evidence
            listed = lacking[0] if len(lacking) == 1 else ", ".join(lacking[:-1]) + " or " + lacking[-1]
            note += (f" that these reports can show: neither has {listed}, which most causes are read from; "
                     f"profile both kernels with --set full (or the sections WarpStateStats, InstructionStats, "
                     f"MemoryWorkloadAnalysis_Tables and SourceCounters) to check them")
        return note


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
    # Two kernels that take the same time have no gap to share out: "explains ~100% of the gap"
    # of a 30 ns difference would read as the diagnosis of a difference nobody measured.
    gap = result.gap_ns if result.faster == "b" and result.gap_ns is not None and result.gap_ns > 0 else None
    own = [r for r in rules if r.compares == "target"]
    on_reference = {f.rule_id for f in evaluate_rules(own, reference, None, None, catalog).findings}
    findings, shared = [], []
    for f in evaluation.findings:
        rule = by_id[f.rule_id]
        explained = f.gap_ns
        if rule.compares == "target" and rule.gap is None:
            explained = _cost_difference(rule, f, reference, result, catalog)
        if rule.compares == "target" and explained is not None and not _worse(rule, target, reference, catalog):
            explained = 0.0
        f.gap_ns = explained
    by_clock = sum(f.gap_ns or 0.0 for f in evaluation.findings if f.cause == CLOCK_CAUSE)
    for f in evaluation.findings:
        rule = by_id[f.rule_id]
        if gap is not None and f.gap_ns is not None:
            # Cycles cannot explain time the clock already does.
            room = gap if f.cause == CLOCK_CAUSE else max(0.0, gap - by_clock)
            f.explains = min(f.gap_ns, room) / gap
        if rule.compares == "target" and f.rule_id in on_reference and (f.explains or 0.0) < SHARED_WITHIN:
            shared.append(f)
        else:
            findings.append(f)
    return Diagnosis(rank(findings), shared, evaluation.passed, evaluation.not_evaluated,
                     evaluation.not_applicable, result, ncu_frame(target, reference),
                     _more_instructions(target, reference, catalog), _missing_evidence(target, reference, catalog))


def _missing_evidence(target: KernelProfile, reference: KernelProfile, catalog: Catalog) -> list[str]:
    """The kinds of evidence neither profile holds, of those most cause rules read."""
    def collected(view: str) -> bool:
        return any(catalog.evaluate(p, m.id) is not None for p in (target, reference) for m in catalog.metrics_of([view]))
    missing = []
    if not collected("stalls"):
        missing.append("the warp stalls")
    if not (target.instruction_mix or reference.instruction_mix):
        missing.append("the instruction mix")
    if not collected("memory"):
        missing.append("the memory traffic")
    return missing


def _more_instructions(target: KernelProfile, reference: KernelProfile, catalog: Catalog) -> str | None:
    """'N% more warp instructions than the reference; the most added: OP (Kx), ...' when the
    target executes at least MORE_INSTRUCTIONS more; None otherwise or where either count is
    missing."""
    metric = catalog.metrics.get("instructions_executed")
    if metric is None:
        return None
    a, b = evaluate(metric, target, catalog), evaluate(metric, reference, catalog)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)) or b <= 0:
        return None
    if a / b - 1 < MORE_INSTRUCTIONS:
        return None
    mine, theirs = target.instruction_mix, reference.instruction_mix
    added = sorted((op for op in mine if theirs and mine[op] > theirs.get(op, 0.0)),
                   key=lambda op: (theirs.get(op, 0.0) - mine[op], op))[:3]
    opcodes = [f"{op} ({mine[op] / theirs[op]:.1f}x)" if theirs.get(op) else f"{op} (new)" for op in added]
    which = f"; the most added: {', '.join(opcodes)}" if opcodes else ""
    return f"the target executes {(a / b - 1) * 100:.1f}% more warp instructions than the reference{which}"


def _cost_difference(rule, f: Finding, reference: KernelProfile, result: Verdict, catalog: Catalog) -> float | None:
    """What the cause costs A minus what it costs B (ns, floored at 0); None where either side's
    cost is unknown: a rule cannot claim time it did not measure on the reference."""
    reference_share = headroom(rule, reference, catalog)
    if not result.known or f.impact is None or reference_share is None:
        return None
    # Within noise the two times are one time, and headrooms a few percent apart (a stall share
    # re-weighted by other instruction counts) are one headroom: their difference is no cost.
    if (result.slower_by or 0.0) < NOISE_FLOOR and f.impact <= reference_share * (1 + MEASURE_WITHIN):
        return 0.0
    return max(0.0, f.impact * result.a_ns - reference_share * result.b_ns)


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
