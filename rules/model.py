"""The rule model: what a rule file declares, after loading and validation (rules/loader.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kernelscope.errors import UserError
from kernelscope.profiler.expression import Expression

COMPARES = ("target", "reference", "baseline")
# Which profiles a rule reads: measured (ncu) ones, compile-only (static) ones, or any.
PROFILE_KINDS = ("any", "measured", "static")
SIDES = ("target", "reference", "baseline")

# Message formats beyond the catalog's units: a factor, a 0..1 share shown as %, a relative change.
EXTRA_FORMATS = ("x", "share", "rel", "text", "number")
CATALOG_UNITS = ("ns", "byte", "%", "count", "inst", "reg", "cycle", "hz", "ratio", "block", "thread", "warp")
FORMATS = CATALOG_UNITS + EXTRA_FORMATS


@dataclass(frozen=True)
class Placeholder:
    text: str               # as written between the braces
    expression: Expression
    fmt: str | None         # explicit format after ':' (a unit or an EXTRA_FORMATS name)


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    compares: str
    severity: str
    condition: Expression
    message: str
    placeholders: tuple[Placeholder, ...]
    hint: str
    section: str
    impact: Expression | None
    thresholds: Mapping[str, float]
    lets: Mapping[str, Expression]
    description: str
    file: str
    profiles: str = "any"
    # The cause this rule names (an id of rules/causes.toml); None: a symptom, not a cause.
    cause: str | None = None
    # Time (ns) the target loses against the reference through this cause; None: derived from
    # `impact` of both sides (see rules/diagnosis.py) or not estimated.
    gap: Expression | None = None
    # Nsight Compute rule identifiers whose advice agrees with this finding (shown as evidence).
    ncu_evidence: tuple[str, ...] = ()
    # The quantity that defines the cause in one kernel (an expression over target.*), and which
    # direction is worse: a finding explains a gap only where the target is worse than the reference.
    measure: Expression | None = None
    worse: str = "higher"
    # Expressions as the rule file wrote them (field name, or "let.NAME" -> text), for `rules explain`.
    texts: Mapping[str, str] = field(default_factory=dict)

    def with_thresholds(self, overrides: Mapping[str, float]) -> "Rule":
        return Rule(**{**self.__dict__, "thresholds": {**self.thresholds, **overrides}})


@dataclass
class RuleSet:
    rules: dict[str, Rule] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def raw_metrics(self) -> list[str]:
        """The ncu metrics the rules read directly ({target:name} and the like), sorted."""
        names: set[str] = set()
        for rule in self.rules.values():
            expressions = [rule.condition, *rule.lets.values(), *(p.expression for p in rule.placeholders)]
            expressions += [e for e in (rule.impact, rule.gap) if e is not None]
            for expr in expressions:
                for braced in expr.braced:
                    side, sep, raw = braced.partition(":")
                    if sep and side in SIDES and raw:
                        names.add(raw)
        return sorted(names)

    def enabled(self, disabled: Iterable[str] = ()) -> list[Rule]:
        disabled = list(disabled)
        unknown = [d for d in disabled if d not in self.rules]
        if unknown:
            raise UserError(f"--disable {unknown[0]}: no rule has that id (see `kernelscope rules list`)")
        return [r for r in self.rules.values() if r.id not in disabled]

    def rule(self, rule_id: str) -> Rule:
        """The rule with this id; a UserError naming up to three close ids when none has it."""
        rule = self.rules.get(rule_id)
        if rule is None:
            close = [r for r in self.rules if rule_id in r or r in rule_id]
            also = f"; did you mean {', '.join(close[:3])}?" if close else ""
            raise UserError(f"no rule has the id {rule_id!r} (see `kernelscope rules list`){also}")
        return rule
