"""How the gate judges a metric: metric families, per-metric rules (tolerances, the level of
the rank test, the better direction) and the policy that merges them.

Rules come from the defaults below, then the suite file, then the command line; a later
rule overrides the fields it sets. The better direction of a metric no rule names comes
from the metric catalog.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from kernelscope.errors import UserError
from kernelscope.profiler.catalog import load_catalog

# Metric families: where a metric comes from, which decides its default rule and
# which environment facts must match for it to be comparable.
TIMING = "timing"          # per-launch CUDA-event samples
COUNTERS = "counters"      # Nsight Compute metrics of a profiled launch
STATIC = "static"          # compile-only inspection of the binary
CORRECTNESS = "correctness"
FAMILIES = (CORRECTNESS, TIMING, COUNTERS, STATIC)


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


def catalog_directions() -> dict[str, str]:
    """raw metric name -> better direction, from the metric catalog (single-source entries).

    A catalog that does not load is a UserError like any malformed input: a gate that
    quietly judged without directions would call every change "lower is better"."""
    catalog = load_catalog()
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
