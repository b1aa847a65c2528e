"""The rule engine: rules are data (TOML files), evaluated safely over catalog metrics.

Built-in rules live in rules/builtin/*.toml; users add or replace rules with their own
files (`--rules FILE`) and switch rules off by id (`--disable ID`). The file format is
documented in docs/rules.md; loading and validation are in rules/loader.py, the rule
model in rules/model.py, and the A/B diagnosis (gap explained, shared findings, ncu
evidence) in rules/diagnosis.py. Conditions, impact estimates, named values and the
numbers a message quotes are expressions of kernelscope.profiler.expression (parsed with
`ast`, whitelisted, never `eval`); a metric that was not collected makes the condition
unknown, and an unknown condition is reported as "not evaluated", never as passed or fired.

Names an expression may use:
  target.ID, reference.ID, baseline.ID   catalog metric ids (`kernelscope views`) of that kernel
  delta.ID                               (target - compared) / |compared|
  ratio.ID                               target / compared
  device.NAME                            device limits (profiler/derived.DEVICE_FACTS) of the target's GPU
  {target:ncu__raw.metric}               a raw metric of the report, by its ncu name
  NAME                                   a threshold or a `let` value of the rule
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from kernelscope.errors import UserError
from kernelscope.profiler.catalog import Catalog, evaluate as evaluate_metric, load_catalog
from kernelscope.profiler.derived import DEVICE_FACTS, device_fact, is_number as _is_number, plain as _plain
from kernelscope.profiler.expression import FUNCTIONS, Expression
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.units import NOT_COLLECTED, format_value
from kernelscope.rules.findings import Finding, QuotedValue, rank
from kernelscope.rules.loader import _PLACEHOLDER, builtin_files, load_rules, rewrite_names  # noqa: F401  (re-exported)
from kernelscope.rules.model import Rule, RuleSet  # noqa: F401  (re-exported)


@dataclass
class Evaluation:
    """Every enabled rule's outcome for one target (and its reference or baseline)."""

    findings: list[Finding]
    passed: list[str]
    not_evaluated: dict[str, list[str]]     # rule id -> the names that were not collected
    not_applicable: list[str]               # rules needing a kernel that was not given


class _Scope:
    """Resolves names for one rule on one set of kernels, remembering what was missing."""

    def __init__(self, rule: Rule, profiles: Mapping[str, KernelProfile | None], catalog: Catalog,
                 cache: dict[tuple[int, str], Any]):
        self.rule = rule
        self.profiles = profiles
        self.catalog = catalog
        self.cache = cache
        self.missing: list[str] = []
        self.assumptions: list[str] = []
        self.let_values: dict[str, Any] = {}

    # -- resolution
    def bare(self, name: str) -> Any:
        if name in self.rule.thresholds:
            return self.rule.thresholds[name]
        if name not in self.let_values:
            self.let_values[name] = self.evaluate(self.rule.lets[name])
        return self.let_values[name]

    def braced(self, name: str) -> Any:
        value = self._braced(name)
        if value is None and name not in self.missing:
            self.missing.append(name)
        return value

    def _braced(self, name: str) -> Any:
        if ":" in name:
            side, _, raw = name.partition(":")
            profile = self.profiles.get(side)
            return None if profile is None else _plain(profile.value(raw))
        space, _, ident = name.partition(".")
        if space == "device":
            return self.device(ident)
        if space in ("delta", "ratio"):
            a = self.metric("target", ident)
            b = self.metric(self.rule.compares, ident)
            if not _is_number(a) or not _is_number(b) or float(b) == 0.0:
                return None
            return (float(a) - float(b)) / abs(float(b)) if space == "delta" else float(a) / float(b)
        return self.metric(space, ident)

    def metric(self, side: str, ident: str) -> Any:
        profile = self.profiles.get(side)
        if profile is None:
            return None
        key = (id(profile), ident)
        if key not in self.cache:
            self.cache[key] = _plain(evaluate_metric(self.catalog.metrics[ident], profile, self.catalog))
        return self.cache[key]

    def device(self, fact: str) -> Any:
        value, note = device_fact(self.profiles["target"], fact)
        if note and note not in self.assumptions:
            self.assumptions.append(note)
        return value

    def evaluate(self, expr: Expression) -> Any:
        return expr.evaluate(resolve=self.bare, functions=FUNCTIONS, resolve_braced=self.braced)


def evaluate_rules(
    rules: Iterable[Rule],
    target: KernelProfile,
    reference: KernelProfile | None = None,
    baseline: KernelProfile | None = None,
    catalog: Catalog | None = None,
) -> Evaluation:
    catalog = catalog or load_catalog()
    profiles = {"target": target, "reference": reference, "baseline": baseline}
    cache: dict[tuple[int, str], Any] = {}
    findings, passed, not_evaluated, not_applicable = [], [], {}, []
    for rule in rules:
        if rule.compares != "target" and profiles[rule.compares] is None:
            not_applicable.append(rule.id)
            continue
        if rule.profiles != "any" and (target.session.tool == "static") != (rule.profiles == "static"):
            not_applicable.append(rule.id)
            continue
        scope = _Scope(rule, profiles, catalog, cache)
        try:
            outcome = scope.evaluate(rule.condition)
        except (TypeError, ValueError, OverflowError) as e:
            # Rule files are checked when loaded; what fails here is a value of the input.
            sources = ", ".join(sorted({p.source for p in profiles.values() if p is not None}))
            raise UserError(f"{sources}: rule {rule.id!r} cannot be evaluated on these values ({e}); "
                            "is every metric it reads a number?") from None
        if outcome is None:
            not_evaluated[rule.id] = list(scope.missing)
        elif outcome:
            findings.append(_finding(rule, scope))
        else:
            passed.append(rule.id)
    return Evaluation(rank(findings), passed, not_evaluated, not_applicable)


def _finding(rule: Rule, scope: _Scope) -> Finding:
    quoted: list[QuotedValue] = []

    def fill(m: re.Match) -> str:
        placeholder = next(p for p in rule.placeholders if p.text == m.group(1))
        value = _plain(_safe(scope, placeholder.expression))
        unit = placeholder.fmt or _default_unit(placeholder.expression, scope.catalog)
        text = format_quoted(value, unit)
        name = placeholder.text.rpartition(":")[0] if placeholder.fmt else placeholder.text
        quoted.append(QuotedValue(name.strip(), value, unit, text))
        return text

    message = _PLACEHOLDER.sub(fill, rule.message)
    impact = _share(_safe(scope, rule.impact)) if rule.impact is not None else None
    gap_ns = None
    if rule.gap is not None:
        raw = _safe(scope, rule.gap)
        if _is_number(raw) and math.isfinite(float(raw)):
            gap_ns = max(float(raw), 0.0)
    return Finding(
        rule_id=rule.id,
        title=rule.title,
        severity=rule.severity,
        compares=rule.compares,
        message=message,
        hint=rule.hint,
        section=rule.section,
        impact=impact,
        rule_file=rule.file,
        quoted=quoted,
        assumptions=list(scope.assumptions),
        cause=rule.cause,
        gap_ns=gap_ns,
    )


def _share(raw: Any) -> float | None:
    if _is_number(raw) and math.isfinite(float(raw)):
        return min(max(float(raw), 0.0), 1.0)
    return None


def measure(rule: Rule, profile: KernelProfile, catalog: Catalog | None = None) -> float | None:
    """The rule's defining quantity for one kernel alone; None without a measure or the data."""
    if rule.measure is None:
        return None
    scope = _Scope(rule, {"target": profile, "reference": None, "baseline": None}, catalog or load_catalog(), {})
    raw = _safe(scope, rule.measure)
    return float(raw) if _is_number(raw) and math.isfinite(float(raw)) else None


def headroom(rule: Rule, profile: KernelProfile, catalog: Catalog | None = None) -> float | None:
    """The rule's impact (share of the kernel's own time at stake) for one kernel alone,
    whether or not its condition holds there; None without an impact or the data for it."""
    if rule.impact is None or rule.compares != "target":
        return None
    scope = _Scope(rule, {"target": profile, "reference": None, "baseline": None}, catalog or load_catalog(), {})
    return _share(_safe(scope, rule.impact))


def _safe(scope: _Scope, expr: Expression) -> Any:
    """A quoted number or impact that cannot be computed (a string in arithmetic, ...) is n/a."""
    try:
        return scope.evaluate(expr)
    except (TypeError, ValueError, OverflowError):
        return None


def _default_unit(expr: Expression, catalog: Catalog) -> str:
    """A placeholder that is one namespaced name takes that name's unit; anything else is a plain number."""
    node = expr.tree.body
    if not isinstance(node, ast.Name) or len(expr.braced) != 1:
        return "number"
    (name,) = expr.braced
    space, _, ident = name.partition(".")
    if ":" in name or not ident:
        return "number"
    if space == "device":
        return DEVICE_FACTS[ident][1]
    if space == "delta":
        return "rel"
    if space == "ratio":
        return "x"
    return catalog.metrics[ident].unit


def format_quoted(value: Any, unit: str) -> str:
    if value is None:
        return NOT_COLLECTED
    if isinstance(value, str) or unit == "text":
        return str(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    v = float(value)
    if unit == "x":
        return f"{v:.2f}x" if v < 100 else f"{v:,.0f}x"
    if unit == "share":
        return f"{v * 100:.1f}%"
    if unit == "rel":
        return f"{v * 100:+.1f}%"
    if unit == "number":
        if v.is_integer():
            return f"{int(v):,}"
        return f"{v:.4g}"
    if unit == "warp":
        return f"{int(v):,}" if v.is_integer() else f"{v:.2f}"
    return format_value(value, unit)


# ---------------------------------------------------------------------------------- entry points

def evaluate_all(
    target: KernelProfile,
    reference: KernelProfile | None = None,
    baseline: KernelProfile | None = None,
    extra_rule_files: Iterable[str | Path] = (),
    disabled: Iterable[str] = (),
    catalog: Catalog | None = None,
) -> Evaluation:
    catalog = catalog or load_catalog()
    ruleset = load_rules(extra_rule_files, catalog)
    return evaluate_rules(ruleset.enabled(disabled), target, reference, baseline, catalog)

