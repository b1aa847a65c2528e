"""Verdicts of the pull-request gate: a current run (or report) against a baseline.

Every metric of every case gets one of four verdicts:

- PASS: within tolerance (or a change too small, or too uncertain, to count).
- REGRESSION: worse beyond tolerance. For timings this needs BOTH a minimum effect
  (the relative change of the median, 3% by default) AND statistical evidence: a
  one-sided Mann-Whitney U rank test over the per-launch samples at level `alpha`.
- IMPROVEMENT: better beyond tolerance (never fails the gate).
- INCONCLUSIVE: the two sides cannot be compared: a different environment (GPU, clocks,
  driver, ncu or toolchain version), a metric collected on one side only, too few
  samples, a large change without evidence, or a change in a metric with no better
  direction. Never silently a PASS.

Exit codes: 0 pass, 1 regression, 2 usage or input error (raised as UserError),
3 inconclusive (0 with accept_inconclusive). Improvements never fail.
Nothing here measures or renders: it takes two baseline documents (see
kernelscope.gate.baseline) and returns a GateResult. The rules of judging are in
kernelscope.gate.policy, the statistics in kernelscope.gate.statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from kernelscope.gate.environment import EnvironmentDifference, environment_differences
from kernelscope.gate.policy import (CORRECTNESS, COUNTERS, FAMILIES, STATIC, TIMING, MetricRule, Policy,
                                     catalog_directions, direction_for)
from kernelscope.gate.statistics import mann_whitney, median
from kernelscope.profiler.code_identity import apply_to_timings
from kernelscope.profiler.timing_checks import failures_of

PASS = "PASS"
REGRESSION = "REGRESSION"
IMPROVEMENT = "IMPROVEMENT"
INCONCLUSIVE = "INCONCLUSIVE"
VERDICTS = (REGRESSION, INCONCLUSIVE, IMPROVEMENT, PASS)   # most to least severe

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3


# ----------------------------------------------------------------------------- results

@dataclass
class MetricVerdict:
    case: str
    family: str
    metric: str
    verdict: str
    reason: str
    kernel: str | None = None          # kernel name (counters, static); None for the case as a whole
    baseline: float | int | str | None = None   # value, or the median for timings
    current: float | int | str | None = None
    change: float | None = None        # relative change (current / baseline - 1)
    p_value: float | None = None       # timings: one-sided p of the rank test in the direction seen
    n_baseline: int | None = None
    n_current: int | None = None
    unit: str = ""
    tolerance: str = ""                 # the rule applied, in words

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class CaseVerdict:
    case: str
    description: str
    metrics: list[MetricVerdict] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return worst(m.verdict for m in self.metrics) if self.metrics else INCONCLUSIVE

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for m in self.metrics:
            out[m.verdict] += 1
        return out


@dataclass
class GateResult:
    cases: list[CaseVerdict]
    environment_differences: list[EnvironmentDifference]
    baseline_environment: dict[str, Any]
    current_environment: dict[str, Any]
    accept_inconclusive: bool = False
    mode: str = "suite"          # "suite" or "report"

    @property
    def metrics(self) -> list[MetricVerdict]:
        return [m for c in self.cases for m in c.metrics]

    @property
    def verdict(self) -> str:
        return worst(c.verdict for c in self.cases) if self.cases else INCONCLUSIVE

    @property
    def exit_code(self) -> int:
        v = self.verdict
        if v == REGRESSION:
            return EXIT_REGRESSION
        if v == INCONCLUSIVE:
            return EXIT_PASS if self.accept_inconclusive else EXIT_INCONCLUSIVE
        return EXIT_PASS

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for m in self.metrics:
            out[m.verdict] += 1
        return out


def worst(verdicts: Iterable[str]) -> str:
    seen = set(verdicts)
    for v in VERDICTS:
        if v in seen:
            return v
    return PASS


# ----------------------------------------------------------------------------- judging

def judge_timing(case: str, metric: str, base: Mapping[str, Any] | None, cur: Mapping[str, Any] | None,
                 rule: MetricRule) -> MetricVerdict:
    """Per-launch samples (timing dicts with `samples_ms`) -> verdict."""
    v = MetricVerdict(case=case, family=TIMING, metric=metric, verdict=PASS, reason="", unit="ms",
                      tolerance=f"median change >= {rule.min_effect:.1%} and rank-test p < {rule.alpha}")
    if base is None or cur is None:
        v.verdict = INCONCLUSIVE
        v.reason = f"not measured in the {'baseline' if base is None else 'current run'}"
        return v
    xs = [float(s) for s in (cur.get("samples_ms") or [])]
    ys = [float(s) for s in (base.get("samples_ms") or [])]
    v.n_baseline, v.n_current = len(ys), len(xs)
    if ys:
        v.baseline = median(ys)
    if xs:
        v.current = median(xs)
    need = rule.min_samples or 1
    if len(xs) < need or len(ys) < need:
        v.verdict = INCONCLUSIVE
        v.reason = f"too few samples ({len(ys)} baseline, {len(xs)} current; need {need})"
        return v
    if v.baseline <= 0:
        v.verdict = INCONCLUSIVE
        v.reason = "baseline median is not positive"
        return v
    v.change = v.current / v.baseline - 1.0
    suspect = [(side, f) for side, t in (("current run", cur), ("baseline", base)) for f in failures_of(t)]
    if suspect:
        v.verdict = INCONCLUSIVE
        v.reason = "timing failed its checks, not comparable: " + "; ".join(f"{side}: {f}" for side, f in suspect)
        return v
    test = mann_whitney(xs, ys)
    slower = v.change > 0
    v.p_value = test.p_greater if slower else test.p_less
    large = abs(v.change) >= rule.min_effect
    evident = v.p_value < rule.alpha
    word = "slower" if slower else "faster"
    if large and evident:
        v.verdict = REGRESSION if slower else IMPROVEMENT
        v.reason = f"{abs(v.change):.1%} {word}, p={v.p_value:.2g} ({test.method} rank test)"
    elif large:
        if slower:
            v.verdict = INCONCLUSIVE
            v.reason = (f"median {abs(v.change):.1%} {word} but the samples do not show it "
                        f"(p={v.p_value:.2g} >= {rule.alpha}): too noisy to tell")
        else:
            v.reason = f"median {abs(v.change):.1%} {word}, not significant (p={v.p_value:.2g})"
    elif evident:
        v.reason = f"{abs(v.change):.1%} {word}: significant but below the {rule.min_effect:.0%} minimum effect"
    else:
        v.reason = f"{abs(v.change):.1%} {word}, within noise"
    return v


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def judge_value(case: str, family: str, metric: str, kernel: str | None, base: Any, cur: Any,
                rule: MetricRule, better: str, unit: str = "") -> MetricVerdict:
    """A deterministic counter or compile-only fact against its tolerance."""
    rel, absolute = rule.rel or 0.0, rule.abs or 0.0
    if rel == 0 and absolute == 0:
        tolerance = "exact"
    else:
        tolerance = " or ".join(t for t in (f"{rel:.1%}" if rel else "", f"{absolute:g}" if absolute else "") if t)
    v = MetricVerdict(case=case, family=family, metric=metric, kernel=kernel, verdict=PASS, reason="",
                      baseline=base, current=cur, unit=unit, tolerance=tolerance)
    if base is None or cur is None:
        v.verdict = INCONCLUSIVE
        v.reason = f"not collected in the {'baseline' if base is None else 'current run'}"
        return v
    if not (_is_number(base) and _is_number(cur)):
        if base == cur:
            v.reason = "unchanged"
        else:
            v.verdict = INCONCLUSIVE
            v.reason = f"changed from {base!r} to {cur!r}"
        return v
    diff = cur - base
    if base != 0:
        v.change = cur / base - 1.0
    allowed = max(absolute, rel * abs(base))
    if abs(diff) <= allowed:
        v.reason = "unchanged" if diff == 0 else f"within tolerance ({diff:+g})"
        return v
    what = f"{base:g} -> {cur:g} ({diff:+g}{', ' + format(v.change, '+.1%') if v.change is not None else ''})"
    if better == "none":
        v.verdict = INCONCLUSIVE
        v.reason = f"{what}: changed, and the metric has no better direction"
    elif (diff > 0) == (better == "lower"):
        v.verdict = REGRESSION
        v.reason = f"{what}, beyond {tolerance}"
    else:
        v.verdict = IMPROVEMENT
        v.reason = f"{what}, beyond {tolerance}"
    return v


def _kernel_entries(case: Mapping[str, Any], family: str) -> list[Mapping[str, Any]] | None:
    entries = case.get(family)
    return None if entries is None else list(entries)


def _flatten_kernel(entry: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str], bool]:
    """metric -> value for one kernel (SASS opcode counts as `sass.OPCODE`), units, and
    whether the per-opcode mix was collected at all."""
    values: dict[str, Any] = {}
    units: dict[str, str] = {}
    for name, m in (entry.get("metrics") or {}).items():
        if isinstance(m, Mapping):
            values[name] = m.get("value")
            units[name] = m.get("unit", "")
        else:
            values[name] = m
    mix = entry.get("instruction_mix") or {}
    for op, count in mix.items():
        values[f"sass.{op}"] = count
        units[f"sass.{op}"] = "inst"
    return values, units, bool(mix)


def _judge_kernels(case_id: str, family: str, base_entries, cur_entries, policy: Policy,
                   catalog: Mapping[str, str], incomparable: str | None) -> list[MetricVerdict]:
    out: list[MetricVerdict] = []
    if base_entries is None and cur_entries is None:
        return out
    if base_entries is None or cur_entries is None:
        side = "baseline" if base_entries is None else "current run"
        out.append(MetricVerdict(case=case_id, family=family, metric="*", verdict=INCONCLUSIVE,
                                 reason=f"{family} not collected in the {side}"))
        return out
    for index in range(max(len(base_entries), len(cur_entries))):
        b = base_entries[index] if index < len(base_entries) else None
        c = cur_entries[index] if index < len(cur_entries) else None
        kernel = (c or b).get("name")
        if b is None or c is None:
            out.append(MetricVerdict(case=case_id, family=family, metric="*", kernel=kernel, verdict=INCONCLUSIVE,
                                     reason=f"kernel {index} exists only in the {'current run' if b is None else 'baseline'}"))
            continue
        bv, bu, b_mix = _flatten_kernel(b)
        cv, cu, c_mix = _flatten_kernel(c)
        names = sorted(set(bv) | set(cv))
        base_has_metrics = any(not name.startswith("sass.") for name in bv)
        for name in names:
            is_mix = name.startswith("sass.")
            rule = policy.rule_for(family, name)
            if rule.ignore:
                continue
            bval, cval = bv.get(name), cv.get(name)
            if name not in bv and base_has_metrics and not is_mix:
                # A metric the baseline's tool did not produce (one added since): the baseline
                # defines what is gated, and it lost nothing; re-save it to gate this one too. A
                # baseline entry without any metric is no such baseline: that stays inconclusive.
                out.append(MetricVerdict(case=case_id, family=family, metric=name, kernel=kernel, verdict=PASS,
                                         reason="new since the baseline, not compared", current=cval,
                                         unit=cu.get(name, "")))
                continue
            if is_mix and b_mix and c_mix:
                # An opcode absent from one histogram occurs zero times there.
                bval, cval = bval or 0, cval or 0
            better = direction_for(family, name, rule, catalog)
            verdict = judge_value(case_id, family, name, kernel, bval, cval, rule, better, cu.get(name) or bu.get(name, ""))
            if incomparable and verdict.verdict != INCONCLUSIVE:
                verdict.reason = f"{incomparable} (would be {verdict.verdict}: {verdict.reason})"
                verdict.verdict = INCONCLUSIVE
            out.append(verdict)
    return out


def _judge_correctness(case_id: str, base: Mapping[str, Any] | None, cur: Mapping[str, Any] | None) -> list[MetricVerdict]:
    if cur is None:
        return []
    v = MetricVerdict(case=case_id, family=CORRECTNESS, metric="output", verdict=PASS, reason="matches the fp32 reference",
                      baseline=None if base is None else base.get("ok"), current=cur.get("ok"))
    if not cur.get("ok"):
        v.verdict = REGRESSION
        v.reason = f"wrong output: {cur.get('summary') or 'outside tolerance of the fp32 reference'}"
    elif base is not None and not base.get("ok"):
        v.verdict = IMPROVEMENT
        v.reason = "correct now; the baseline was wrong"
    return [v]


def _describe(case: Mapping[str, Any]) -> str:
    parts = [str(case.get("target", "?"))]
    for key in ("arch", "dtype"):
        if case.get(key):
            parts.append(str(case[key]))
    def fmt(v):
        return "x".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    for key in ("shape", "config"):
        d = case.get(key) or {}
        if d:
            parts.append(",".join(f"{k}={fmt(v)}" for k, v in d.items()))
    return " ".join(parts)


def gate(baseline: Mapping[str, Any], current: Mapping[str, Any], policy: Policy | None = None,
         *, mode: str = "suite", families: Iterable[str] | None = None) -> GateResult:
    """Compare two baseline documents (the committed one and a fresh run of the suite).

    mode "report": the current side is an ncu report; baseline cases it does not hold are
    left out, and environment facts a report cannot tell (driver, toolchain) are not compared.
    families: judge only these (e.g. only "static" for a compile-only run against a GPU baseline).
    """
    policy = policy or Policy()
    base_env = dict(baseline.get("environment") or {})
    cur_env = dict(current.get("environment") or {})
    base_cases = {c["id"]: c for c in baseline.get("cases", [])}
    cur_cases = {c["id"]: c for c in current.get("cases", [])}

    judged = set(families) if families is not None else set(FAMILIES)
    families_present = {f for c in list(base_cases.values()) + list(cur_cases.values())
                        for f in (TIMING, COUNTERS, STATIC) if c.get(f) is not None and f in judged}
    diffs = environment_differences(base_env, cur_env, sorted(families_present))
    if mode == "report":
        diffs = [d for d in diffs if d.current is not None]
    incomparable: dict[str, str] = {}
    for d in diffs:
        for family in d.families:
            incomparable.setdefault(family, f"environment differs: {d.key} {d.baseline!r} vs {d.current!r}")
    catalog = catalog_directions()

    results: list[CaseVerdict] = []
    order = list(cur_cases) + [cid for cid in base_cases if cid not in cur_cases]
    for cid in order:
        b, c = base_cases.get(cid), cur_cases.get(cid)
        verdict = CaseVerdict(case=cid, description=_describe(c or b))
        results.append(verdict)
        if b is None:
            verdict.metrics.append(MetricVerdict(case=cid, family="case", metric="*", verdict=INCONCLUSIVE,
                                                 reason="no baseline for this case: save a new baseline"))
            continue
        if c is None:
            if mode == "report":
                continue
            verdict.metrics.append(MetricVerdict(case=cid, family="case", metric="*", verdict=INCONCLUSIVE,
                                                 reason="in the baseline but not in this run"))
            continue
        other_model = _device_model_differs(b, c)
        if CORRECTNESS in judged:
            verdict.metrics += _judge_correctness(cid, b.get("correctness"), c.get("correctness"))
        if TIMING in judged and (b.get(TIMING) is not None or c.get(TIMING) is not None):
            verdict.metrics += _judge_timings(cid, b.get(TIMING), c.get(TIMING), policy,
                                              incomparable.get(TIMING) or other_model)
            code = apply_to_timings(b, c, verdict.metrics)
            if code is not None:
                verdict.metrics.append(MetricVerdict(case=cid, family="code", metric="identity", verdict=PASS,
                                                     reason=code))
        for family in (COUNTERS, STATIC):
            if family not in judged:
                continue
            verdict.metrics += _judge_kernels(cid, family, _kernel_entries(b, family), _kernel_entries(c, family),
                                              policy, catalog, incomparable.get(family)
                                              or (other_model if family == COUNTERS else None))
        if policy.trade_for_speed:
            _accept_trades(verdict.metrics)
    if mode == "report":
        results = [r for r in results if r.metrics]
    return GateResult(cases=results, environment_differences=diffs, baseline_environment=base_env,
                      current_environment=cur_env, accept_inconclusive=policy.accept_inconclusive, mode=mode)


def _device_model_differs(base: Mapping[str, Any], cur: Mapping[str, Any]) -> str | None:
    """A case measured on one GPU model in the baseline and another now (cases spread over
    several GPUs record their device each) is not comparable, whatever the environments say."""
    a, b = (base.get("device") or {}).get("name"), (cur.get("device") or {}).get("name")
    if a and b and a != b:
        return f"measured on {a} in the baseline and on {b} now"
    return None


def _accept_trades(metrics: list[MetricVerdict]) -> None:
    faster = next((m for m in metrics if m.family == TIMING and m.metric == "target" and m.verdict == IMPROVEMENT), None)
    if faster is None:
        return
    for m in metrics:
        if m.family in (COUNTERS, STATIC) and m.verdict == REGRESSION:
            m.verdict = PASS
            m.reason = f"{m.reason}; accepted: the case is measurably faster ({faster.reason})"


def _judge_timings(case_id: str, base: Mapping[str, Any] | None, cur: Mapping[str, Any] | None,
                   policy: Policy, incomparable: str | None) -> list[MetricVerdict]:
    if base is None and cur is None:
        return []
    out = []
    sides = [s for s in ("target", "reference") if (base or {}).get(s) is not None or (cur or {}).get(s) is not None]
    for side in sides:
        rule = policy.rule_for(TIMING, side)
        if rule.ignore:
            continue
        out.append(judge_timing(case_id, side, (base or {}).get(side), (cur or {}).get(side), rule))
    # The reference's code did not change: if it moved, the machine did, and the target's
    # change cannot be told apart from that drift.
    ref = next((v for v in out if v.metric == "reference"), None)
    if ref is not None and ref.verdict in (REGRESSION, IMPROVEMENT):
        drift = f"the reference moved too ({ref.reason}): the machine is not comparable"
        ref.verdict, ref.reason = INCONCLUSIVE, drift
        for v in out:
            if v.metric != "reference" and v.verdict != PASS:
                v.verdict, v.reason = INCONCLUSIVE, f"{drift}; target: {v.reason}"
    if incomparable:
        for v in out:
            if v.verdict != INCONCLUSIVE:
                v.reason = f"{incomparable} (would be {v.verdict}: {v.reason})"
                v.verdict = INCONCLUSIVE
    return out
