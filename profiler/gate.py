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
kernelscope.profiler.baseline) and returns a GateResult.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

PASS = "PASS"
REGRESSION = "REGRESSION"
IMPROVEMENT = "IMPROVEMENT"
INCONCLUSIVE = "INCONCLUSIVE"
VERDICTS = (REGRESSION, INCONCLUSIVE, IMPROVEMENT, PASS)   # most to least severe

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3

# Metric families: where a metric comes from, which decides its default rule and
# which environment facts must match for it to be comparable.
TIMING = "timing"          # per-launch CUDA-event samples
COUNTERS = "counters"      # Nsight Compute metrics of a profiled launch
STATIC = "static"          # compile-only inspection of the binary
CORRECTNESS = "correctness"
FAMILIES = (CORRECTNESS, TIMING, COUNTERS, STATIC)

# Environment facts that must be equal on both sides for a family to be comparable.
# The git commit and the creation time are recorded but never compared.
ENVIRONMENT_KEYS: dict[str, tuple[str, ...]] = {
    TIMING: ("gpu.name", "gpu.sm_count", "gpu.compute_capability", "driver", "cuda",
             "torch", "nvidia-cutlass-dsl", "timing.clock_control", "timing.flush_l2",
             "timing.application_clocks_mhz", "timing.power_limit"),
    COUNTERS: ("gpu.name", "gpu.sm_count", "gpu.compute_capability", "driver", "ncu.version",
               "ncu.clock_control", "ncu.cache_control", "nvidia-cutlass-dsl"),
    STATIC: ("nvidia-cutlass-dsl", "static.analysis"),
    CORRECTNESS: (),
}


# ----------------------------------------------------------------------------- statistics

def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) of `values`, and the sizes of the groups of ties."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        average = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = average
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


# Below this many arrangements the exact distribution of U is enumerated (no ties only).
_EXACT_LIMIT = 30


def _exact_upper_tail(u: float, n1: int, n2: int) -> float:
    """P(U >= u) under the null hypothesis, with no ties, by counting arrangements."""
    # counts[m][n] is a list: number of orderings of m x's and n y's with each value of U.
    table: dict[tuple[int, int], list[int]] = {}

    def counts(m: int, n: int) -> list[int]:
        if m == 0 or n == 0:
            return [1]
        key = (m, n)
        if key not in table:
            # The largest element is an x (it beats all n y's) or a y.
            with_x = counts(m - 1, n)
            with_y = counts(m, n - 1)
            out = [0] * (m * n + 1)
            for k, c in enumerate(with_x):
                out[k + n] += c
            for k, c in enumerate(with_y):
                out[k] += c
            table[key] = out
        return table[key]

    dist = counts(n1, n2)
    total = sum(dist)
    start = max(0, math.ceil(u - 1e-9))
    return sum(dist[start:]) / total


@dataclass
class RankTest:
    u: float            # Mann-Whitney U of the first sample (pairs where it is larger)
    p_greater: float    # one-sided p: the first sample tends to be larger
    p_less: float       # one-sided p: the first sample tends to be smaller
    method: str         # "exact" or "normal"


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> RankTest:
    """Mann-Whitney U test of x against y, both one-sided p-values.

    Exact when both samples are small and untied; otherwise the normal approximation
    with the tie correction of the variance and a continuity correction.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney needs two non-empty samples")
    ranks, ties = _ranks(list(x) + list(y))
    r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    untied = all(t == 1 for t in ties)
    if untied and n1 <= _EXACT_LIMIT and n2 <= _EXACT_LIMIT:
        return RankTest(u=u1, p_greater=_exact_upper_tail(u1, n1, n2),
                        p_less=_exact_upper_tail(u2, n1, n2), method="exact")
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    mean = n1 * n2 / 2.0
    if variance <= 0:
        # Every value equal: no evidence either way.
        return RankTest(u=u1, p_greater=1.0, p_less=1.0, method="normal")
    sd = math.sqrt(variance)
    z_greater = (u1 - mean - 0.5) / sd
    z_less = (mean - u1 - 0.5) / sd
    return RankTest(u=u1, p_greater=_upper_normal(z_greater), p_less=_upper_normal(z_less), method="normal")


def _upper_normal(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2


# ----------------------------------------------------------------------------- rules

@dataclass
class MetricRule:
    """How one metric (or a glob of them) is judged. Patterns match "family:metric",
    e.g. "timing:target", "static:launch__registers_per_thread", "counters:sass.*"."""

    match: str
    rel: float | None = None          # counters: relative tolerance of |current - baseline| / |baseline|
    abs: float | None = None          # counters: absolute tolerance
    min_effect: float | None = None   # timing: smallest relative change of the median that counts
    alpha: float | None = None        # timing: level of the rank test
    better: str | None = None         # "lower", "higher" or "none"; None: from the catalog / defaults
    min_samples: int | None = None    # timing: fewer samples on either side -> INCONCLUSIVE
    ignore: bool = False              # leave the metric out of the gate

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "rule") -> "MetricRule":
        from kernelscope.errors import UserError

        known = {"match", "rel", "abs", "min_effect", "alpha", "better", "min_samples", "ignore"}
        unknown = sorted(set(d) - known)
        if unknown:
            raise UserError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        if not isinstance(d.get("match"), str) or not d["match"]:
            raise UserError(f"{where}: `match` must name a metric pattern such as \"static:launch__*\"")
        for key in ("rel", "abs", "min_effect", "alpha"):
            v = d.get(key)
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
                raise UserError(f"{where}: {key} must be a non-negative number")
        if d.get("alpha") is not None and not 0 < d["alpha"] < 1:
            raise UserError(f"{where}: alpha must lie between 0 and 1")
        if d.get("better") not in (None, "lower", "higher", "none"):
            raise UserError(f"{where}: better must be lower, higher or none")
        return cls(**dict(d))


# Defaults, most general first; suite rules and command-line rules come after and win.
DEFAULT_RULES: tuple[MetricRule, ...] = (
    MetricRule("timing:*", min_effect=0.03, alpha=0.01, better="lower", min_samples=10),
    # The binary is deterministic: any change of a compile-only fact is a change.
    MetricRule("static:*", rel=0.0, abs=0.0),
    MetricRule("static:sass.*", rel=0.0, abs=0.0, better="lower"),
    MetricRule("static:static__sass_instructions", rel=0.0, abs=0.0, better="lower"),
    # Launch facts of a run are exact; counts of executed work move a little with spin
    # loops on barriers and with caches, bytes more so.
    MetricRule("counters:*", rel=0.02, abs=0.0),
    MetricRule("counters:launch__*", rel=0.0, abs=0.0),
    MetricRule("counters:sass.*", rel=0.02, abs=64, better="lower"),
    MetricRule("counters:*bytes*", rel=0.05, abs=4096),
    # Conflicts depend on which warps meet in a bank at the same time.
    MetricRule("counters:l1tex__data_bank_conflicts_*", rel=0.05, abs=64),
    MetricRule("counters:*spilling*", rel=0.0, abs=0.0, better="lower"),
    MetricRule("counters:l1tex__t_bytes_pipe_lsu_mem_local_op_*", rel=0.0, abs=0.0, better="lower"),
    MetricRule("correctness:*", better="none"),
)

# Facts whose change means "a different launch", not better or worse.
_NO_DIRECTION = ("launch__block_size", "launch__grid_size", "launch__cluster_size",
                 "launch__barrier_count", "static__expected_sass_missing_opcodes")


@dataclass
class Policy:
    rules: list[MetricRule] = field(default_factory=lambda: list(DEFAULT_RULES))
    accept_inconclusive: bool = False
    # A case whose target timing is a measured improvement may spend resources for it:
    # worse counters and compile-only facts are then reported but do not fail.
    trade_for_speed: bool = True

    def rule_for(self, family: str, metric: str) -> MetricRule:
        """The merged rule: later matching rules override the fields they set."""
        key = f"{family}:{metric}"
        merged = MetricRule(match=key)
        for rule in self.rules:
            if fnmatch.fnmatchcase(key, rule.match):
                for name in ("rel", "abs", "min_effect", "alpha", "better", "min_samples"):
                    value = getattr(rule, name)
                    if value is not None:
                        setattr(merged, name, value)
                if rule.ignore:
                    merged.ignore = True
        return merged

    def with_rules(self, extra: Iterable[MetricRule]) -> "Policy":
        return Policy(rules=list(self.rules) + list(extra), accept_inconclusive=self.accept_inconclusive,
                      trade_for_speed=self.trade_for_speed)


def _catalog_directions() -> dict[str, str]:
    """raw metric name -> better direction, from the metric catalog (single-source entries)."""
    try:
        from kernelscope.profiler.catalog import load_catalog

        catalog = load_catalog()
    except Exception:  # the gate must work even if a catalog file is being edited
        return {}
    out: dict[str, str] = {}
    for definition in catalog.metrics.values():
        if definition.formula is None:
            for source in definition.sources:
                out.setdefault(source, definition.better)
    return out


def direction_for(family: str, metric: str, rule: MetricRule, catalog: Mapping[str, str]) -> str:
    if rule.better is not None:
        return rule.better
    if metric in _NO_DIRECTION:
        return "none"
    if metric in catalog:
        return catalog[metric]
    # Resources, bytes and instruction counts: more is worse unless the catalog says otherwise.
    return "lower"


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
class EnvironmentDifference:
    key: str
    baseline: Any
    current: Any
    families: list[str]


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


def environment_differences(base: Mapping[str, Any], cur: Mapping[str, Any],
                            families: Iterable[str] = FAMILIES) -> list[EnvironmentDifference]:
    """Facts that differ, with the families they make incomparable. A fact unknown on
    both sides is no difference; known on one side only, it is."""
    by_key: dict[str, list[str]] = {}
    for family in families:
        for key in ENVIRONMENT_KEYS.get(family, ()):
            by_key.setdefault(key, []).append(family)
    out = []
    for key, fams in by_key.items():
        a, b = lookup(base, key), lookup(cur, key)
        if a != b:
            out.append(EnvironmentDifference(key=key, baseline=a, current=b, families=fams))
    return out


def lookup(env: Mapping[str, Any], dotted: str) -> Any:
    """env["gpu"]["name"] for "gpu.name"; a key that itself holds a dot (a package name) is
    looked up whole first."""
    if dotted in env:
        return env[dotted]
    node: Any = env
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


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
        for name in names:
            is_mix = name.startswith("sass.")
            rule = policy.rule_for(family, name)
            if rule.ignore:
                continue
            bval, cval = bv.get(name), cv.get(name)
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
    catalog = _catalog_directions()

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
        if CORRECTNESS in judged:
            verdict.metrics += _judge_correctness(cid, b.get("correctness"), c.get("correctness"))
        if TIMING in judged:
            verdict.metrics += _judge_timings(cid, b.get(TIMING), c.get(TIMING), policy, incomparable.get(TIMING))
        for family in (COUNTERS, STATIC):
            if family not in judged:
                continue
            verdict.metrics += _judge_kernels(cid, family, _kernel_entries(b, family), _kernel_entries(c, family),
                                              policy, catalog, incomparable.get(family))
        if policy.trade_for_speed:
            _accept_trades(verdict.metrics)
    if mode == "report":
        results = [r for r in results if r.metrics]
    return GateResult(cases=results, environment_differences=diffs, baseline_environment=base_env,
                      current_environment=cur_env, accept_inconclusive=policy.accept_inconclusive, mode=mode)


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
