"""The rule engine: rules are data (TOML files), evaluated safely over catalog metrics.

Built-in rules live in rules/builtin/*.toml; users add or replace rules with their own
files (`--rules FILE`) and switch rules off by id (`--disable ID`). The file format is
documented in docs/rules.md. Conditions, impact estimates, named values and the numbers a
message quotes are expressions of kernelscope.profiler.expression (parsed with `ast`,
whitelisted, never `eval`); a metric that was not collected makes the condition unknown,
and an unknown condition is reported as "not evaluated", never as passed or fired.

Names an expression may use:
  target.ID, reference.ID, baseline.ID   catalog metric ids (`kernelscope views`) and the
                                         derived ids below, of that kernel
  delta.ID                               (target - compared) / |compared|
  ratio.ID                               target / compared
  device.NAME                            device limits (DEVICE_FACTS) of the target's GPU
  {target:ncu__raw.metric}               a raw metric of the report, by its ncu name
  NAME                                   a threshold or a `let` value of the rule
"""

from __future__ import annotations

import ast
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from kernelscope.errors import UserError
from kernelscope.profiler.catalog import Catalog, evaluate as evaluate_metric, load_catalog
from kernelscope.profiler.expression import Expression, ExpressionError, parse
from kernelscope.profiler.record import KernelProfile
from kernelscope.reports.formatting import NOT_COLLECTED, format_value
from kernelscope.rules.findings import SEVERITIES, Finding, QuotedValue, rank

BUILTIN_DIR = Path(__file__).parent / "builtin"
COMPARES = ("target", "reference", "baseline")
# Which profiles a rule reads: measured (ncu) ones, compile-only (static) ones, or any.
PROFILE_KINDS = ("any", "measured", "static")
SIDES = ("target", "reference", "baseline")
_RULE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# `target.branch_ratio` is written with a dot; the expression language has no attribute
# access, so such names are rewritten to the verbatim form {target.branch_ratio} first.
_DOTTED = re.compile(r"(?<![\w.{:])(target|reference|baseline|delta|ratio|device)\.([A-Za-z_][A-Za-z0-9_]*)")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")

# Message formats beyond the catalog's units: a factor, a 0..1 share shown as %, a relative change.
EXTRA_FORMATS = ("x", "share", "rel", "text", "number")
CATALOG_UNITS = ("ns", "byte", "%", "count", "inst", "reg", "cycle", "hz", "ratio", "block", "thread", "warp")
FORMATS = CATALOG_UNITS + EXTRA_FORMATS

_STALL_EXCLUDED = ("stall_selected", "stall_not_selected")

# Values computed from several catalog entries of one kernel, usable like catalog ids.
DERIVED = {
    "stall_max": ("ratio", "the largest stall reason, cycles per issued instruction (issuing and not-selected excluded)"),
    "stall_sum": ("ratio", "all stall reasons added up, cycles per issued instruction (issuing and not-selected excluded)"),
    "stall_all": ("ratio", "every warp state per issued instruction, issuing and not-selected included"),
    "stall_top": ("text", "the label of the largest stall reason"),
    "blocks_per_sm": ("block", "blocks resident per SM: the smallest of the occupancy limits"),
    "occupancy_limiter": ("text", "which limits allow only blocks_per_sm blocks (registers, shared memory, ...)"),
    "warps_per_block": ("warp", "warps in a block (block size / 32, rounded up)"),
    "smem_per_block": ("byte", "static + dynamic shared memory a block requests"),
}
_LIMITS = (
    ("occupancy_limit_registers", "registers"),
    ("occupancy_limit_shared_mem", "shared memory"),
    ("occupancy_limit_warps", "warp slots"),
    ("occupancy_limit_blocks", "block slots"),
    ("occupancy_limit_barriers", "named barriers"),
)

# Device limits: read from the report's device__attribute_* metrics; a profile without them
# (a compile-only, static profile) falls back to the documented value for its architecture.
DEVICE_FACTS: dict[str, tuple[str, str, str]] = {
    # name: (ncu device attribute, unit, description)
    "max_registers_per_thread": ("device__attribute_max_registers_per_thread", "reg", "registers a thread may have"),
    "registers_per_sm": ("device__attribute_max_registers_per_multiprocessor", "reg", "register file of one SM"),
    "registers_per_block": ("device__attribute_max_registers_per_block", "reg", "registers one block may have"),
    "shared_mem_per_sm": ("device__attribute_max_shared_memory_per_multiprocessor", "byte", "shared memory of one SM"),
    "shared_mem_per_block_optin": ("device__attribute_max_shared_memory_per_block_optin", "byte",
                                   "shared memory one block may opt in to"),
    "reserved_shared_mem_per_block": ("device__attribute_reserved_shared_memory_per_block", "byte",
                                      "shared memory the driver reserves per block"),
    "max_warps_per_sm": ("device__attribute_max_warps_per_multiprocessor", "warp", "warp slots of one SM"),
    "max_blocks_per_sm": ("device__attribute_max_blocks_per_multiprocessor", "block", "block slots of one SM"),
    "sm_count": ("device__attribute_multiprocessor_count", "count", "SMs of the GPU"),
    "cc_major": ("device__attribute_compute_capability_major", "number", "compute capability, major"),
    "cc_minor": ("device__attribute_compute_capability_minor", "number", "compute capability, minor"),
}
# Documented fallbacks by compute capability (CUDA programming guide, "Technical Specifications").
# The SM count is deliberately absent: it differs between boards of one architecture.
DEVICE_FALLBACKS: dict[str, dict[str, int]] = {
    "9.0": {"max_registers_per_thread": 255, "registers_per_sm": 65536, "registers_per_block": 65536,
            "shared_mem_per_sm": 233472, "shared_mem_per_block_optin": 232448, "reserved_shared_mem_per_block": 1024,
            "max_warps_per_sm": 64, "max_blocks_per_sm": 32, "cc_major": 9, "cc_minor": 0},
    "12.0": {"max_registers_per_thread": 255, "registers_per_sm": 65536, "registers_per_block": 65536,
             "shared_mem_per_sm": 102400, "shared_mem_per_block_optin": 101376, "reserved_shared_mem_per_block": 1024,
             "max_warps_per_sm": 48, "max_blocks_per_sm": 32, "cc_major": 12, "cc_minor": 0},
}


def _floor(x):
    return None if x is None else math.floor(x)


def _ceil(x):
    return None if x is None else math.ceil(x)


def _min(*xs):
    return None if any(x is None for x in xs) else min(xs)


def _max(*xs):
    return None if any(x is None for x in xs) else max(xs)


def _abs(x):
    return None if x is None else abs(x)


def _clamp(x, lo, hi):
    return None if x is None or lo is None or hi is None else min(max(x, lo), hi)


def _known(x):
    return x is not None


def _max_known(*xs):
    """The largest of the known values; None only when none is known."""
    known = [x for x in xs if x is not None]
    return max(known) if known else None


def _sum_known(*xs):
    known = [x for x in xs if x is not None]
    return sum(known) if known else None


def _coalesce(*xs):
    return next((x for x in xs if x is not None), None)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": _min, "max": _max, "abs": _abs, "floor": _floor, "ceil": _ceil,
    "clamp": _clamp, "known": _known, "coalesce": _coalesce, "max_known": _max_known, "sum_known": _sum_known,
}


# ---------------------------------------------------------------------------------- rules

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
            if rule.impact is not None:
                expressions.append(rule.impact)
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


class _RuleFileError(Exception):
    pass


def builtin_files() -> list[Path]:
    return sorted(BUILTIN_DIR.glob("*.toml"))


def load_rules(extra_files: Iterable[str | Path] = (), catalog: Catalog | None = None) -> RuleSet:
    """Built-in rules, then each extra file in order: a rule with a known id replaces it,
    a [thresholds.ID] table overrides named thresholds of an existing rule."""
    catalog = catalog or load_catalog()
    paths = tuple(str(p) for p in [*builtin_files(), *extra_files])
    key = (tuple(_file_identity(p) for p in paths), id(catalog))
    if key not in _LOADED:
        ruleset = RuleSet()
        for path in paths:
            _merge_file(ruleset, Path(path), catalog)
        _LOADED[key] = ruleset
    return _LOADED[key]


# Rule sets by (files as they are now, catalog): the catalog loader returns one object per set of
# catalog files; an edited rule file is read again.
_LOADED: dict[tuple[tuple[tuple[str, int, int], ...], int], RuleSet] = {}


def _file_identity(path: str) -> tuple[str, int, int]:
    try:
        st = Path(path).stat()
    except OSError:
        return (path, -1, -1)
    return (path, st.st_mtime_ns, st.st_size)


def _merge_file(ruleset: RuleSet, path: Path, catalog: Catalog) -> None:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such rule file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read the rule file ({e})") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML ({e})") from None
    unknown = sorted(set(data) - {"rule", "thresholds"})
    if unknown:
        raise UserError(f"{path}: unknown top-level key {unknown[0]!r} (a rule file holds [[rule]] entries and [thresholds.ID] tables)")
    entries = data.get("rule", [])
    if not isinstance(entries, list):
        raise UserError(f"{path}: 'rule' must be an array of tables: write [[rule]]")
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        rule = _rule_from(entry, path, index, catalog)
        if rule.id in seen:
            raise UserError(f"{path}: rule {rule.id!r}: defined twice in this file")
        seen.add(rule.id)
        ruleset.rules[rule.id] = rule
    overrides = data.get("thresholds", {})
    if not isinstance(overrides, dict):
        raise UserError(f"{path}: 'thresholds' must be tables: [thresholds.RULE-ID]")
    for rule_id, values in overrides.items():
        rule = ruleset.rules.get(rule_id)
        if rule is None:
            raise UserError(f"{path}: [thresholds.{rule_id}]: no rule has that id (see `kernelscope rules list`)")
        if not isinstance(values, dict):
            raise UserError(f"{path}: rule {rule_id!r}: field 'thresholds' must be a table of numbers")
        for name, value in values.items():
            if name not in rule.thresholds:
                known = ", ".join(sorted(rule.thresholds)) or "none"
                raise UserError(f"{path}: rule {rule_id!r}: field 'thresholds.{name}': the rule has no such threshold (it has: {known})")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UserError(f"{path}: rule {rule_id!r}: field 'thresholds.{name}' must be a number")
        ruleset.rules[rule_id] = rule.with_thresholds(values)
    ruleset.files.append(str(path))


def _rule_from(entry: Any, path: Path, index: int, catalog: Catalog) -> Rule:
    if not isinstance(entry, dict):
        raise UserError(f"{path}: rule #{index + 1}: must be a table")
    ident = entry.get("id")
    where = f"{path}: rule {ident!r}" if isinstance(ident, str) else f"{path}: rule #{index + 1}"

    def fail(fieldname: str, problem: str) -> UserError:
        return UserError(f"{where}: field {fieldname!r}: {problem}")

    known_fields = {"id", "title", "compares", "severity", "condition", "message", "hint", "section",
                    "impact", "thresholds", "let", "description", "profiles"}
    for key in entry:
        if key not in known_fields:
            raise fail(key, f"unknown field (fields: {', '.join(sorted(known_fields))})")
    for key in ("id", "title", "compares", "severity", "condition", "message", "hint", "section"):
        if key not in entry:
            raise fail(key, "missing")
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise fail(key, "must be a non-empty string")
    if not _RULE_ID.match(ident):
        raise fail("id", "use lower-case letters, digits and '-'")
    if entry["compares"] not in COMPARES:
        raise fail("compares", f"must be one of {', '.join(COMPARES)}, not {entry['compares']!r}")
    if entry["severity"] not in SEVERITIES:
        raise fail("severity", f"must be one of {', '.join(SEVERITIES)}, not {entry['severity']!r}")
    if entry.get("profiles", "any") not in PROFILE_KINDS:
        raise fail("profiles", f"must be one of {', '.join(PROFILE_KINDS)}, not {entry['profiles']!r}")

    thresholds = entry.get("thresholds", {})
    if not isinstance(thresholds, dict):
        raise fail("thresholds", "must be a table of named numbers")
    for name, value in thresholds.items():
        if not _NAME.match(name):
            raise fail(f"thresholds.{name}", "names are letters, digits and '_'")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(f"thresholds.{name}", "must be a number")
    lets_raw = entry.get("let", {})
    if not isinstance(lets_raw, dict):
        raise fail("let", "must be a table of named expressions")
    for name in lets_raw:
        if not _NAME.match(name):
            raise fail(f"let.{name}", "names are letters, digits and '_'")
        if name in thresholds:
            raise fail(f"let.{name}", "a threshold has the same name")

    compares = entry["compares"]
    local_names = set(thresholds) | set(lets_raw)

    def compile_expr(fieldname: str, text: Any) -> Expression:
        if not isinstance(text, str) or not text.strip():
            raise fail(fieldname, "must be a non-empty expression string")
        try:
            # Long expressions may span lines in TOML's triple-quoted strings.
            expr = parse(rewrite_names(re.sub(r"\s*\n\s*", " ", text)), frozenset(FUNCTIONS))
        except ExpressionError as e:
            raise fail(fieldname, str(e)) from None
        problem = _check_names(expr, local_names, compares, catalog)
        if problem:
            raise fail(fieldname, problem)
        return expr

    lets = {name: compile_expr(f"let.{name}", text) for name, text in lets_raw.items()}
    cycle = _let_cycle(lets)
    if cycle:
        raise fail(f"let.{cycle[0]}", f"refers to itself through {' -> '.join(cycle)}")
    condition = compile_expr("condition", entry["condition"])
    impact = compile_expr("impact", entry["impact"]) if "impact" in entry else None

    placeholders = []
    message = entry["message"]
    for m in _PLACEHOLDER.finditer(message):
        content = m.group(1)
        text, sep, fmt = content.rpartition(":")
        if not sep:
            text, fmt = content, None
        elif fmt.strip() not in FORMATS:
            raise fail("message", f"unknown format {fmt.strip()!r} in {{{content}}} (formats: {', '.join(FORMATS)})")
        else:
            fmt = fmt.strip()
        placeholders.append(Placeholder(content, compile_expr("message", text), fmt))

    return Rule(
        id=ident,
        title=entry["title"].strip(),
        compares=compares,
        severity=entry["severity"],
        condition=condition,
        message=message.strip(),
        placeholders=tuple(placeholders),
        hint=entry["hint"].strip(),
        section=entry["section"].strip(),
        impact=impact,
        thresholds=dict(thresholds),
        lets=lets,
        description=str(entry.get("description", "")).strip(),
        file=str(path),
        profiles=entry.get("profiles", "any"),
        texts={"condition": " ".join(entry["condition"].split()),
               **({"impact": " ".join(entry["impact"].split())} if "impact" in entry else {}),
               **{f"let.{n}": " ".join(str(t).split()) for n, t in lets_raw.items()}},
    )


def rewrite_names(text: str) -> str:
    """`target.x` -> `{target.x}` outside string literals and braces."""
    out = []
    for i, part in enumerate(re.split(r"(\"[^\"]*\"|'[^']*'|\{[^{}]*\})", text)):
        out.append(part if i % 2 else _DOTTED.sub(lambda m: "{" + m.group(0) + "}", part))
    return "".join(out)


def _check_names(expr: Expression, local_names: set[str], compares: str, catalog: Catalog) -> str | None:
    for name in sorted(expr.names):
        if name not in local_names:
            return (f"unknown name {name!r}: write target.ID / reference.ID / delta.ID / device.NAME, "
                    f"or define it under thresholds or let")
    for braced in sorted(expr.braced):
        problem = _check_braced(braced, compares, catalog)
        if problem:
            return problem
    return None


def _check_braced(name: str, compares: str, catalog: Catalog) -> str | None:
    if ":" in name:
        side, _, raw = name.partition(":")
        if side not in SIDES or not raw:
            return f"{{{name}}}: raw metrics are written {{target:ncu_metric_name}} (or reference:, baseline:)"
        return _check_side(side, compares)
    space, _, ident = name.partition(".")
    if space == "device":
        if ident not in DEVICE_FACTS:
            return f"unknown device fact {name!r} (known: {', '.join('device.' + d for d in DEVICE_FACTS)})"
        return None
    if space in ("delta", "ratio"):
        if compares == "target":
            return f"{name!r} compares with another kernel, but the rule has compares = \"target\""
    elif space in SIDES:
        problem = _check_side(space, compares)
        if problem:
            return problem
    else:
        return f"unknown name {name!r}"
    if ident not in catalog.metrics and ident not in DERIVED:
        return f"unknown metric {ident!r} in {name!r} (see `kernelscope views`)"
    return None


def _check_side(side: str, compares: str) -> str | None:
    if side != "target" and side != compares:
        return f"uses the {side} kernel, but the rule has compares = {compares!r}"
    return None


def _let_cycle(lets: Mapping[str, Expression]) -> list[str] | None:
    def visit(name: str, trail: list[str]) -> list[str] | None:
        if name in trail:
            return trail[trail.index(name):] + [name]
        for dep in sorted(lets[name].names & set(lets)):
            found = visit(dep, trail + [name])
            if found:
                return found
        return None

    for name in lets:
        found = visit(name, [])
        if found:
            return found
    return None


# ---------------------------------------------------------------------------------- evaluation

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
            if ident in DERIVED:
                self.cache[key] = _derived(profile, ident, self.catalog)
            else:
                self.cache[key] = _plain(evaluate_metric(self.catalog.metrics[ident], profile))
        return self.cache[key]

    def device(self, fact: str) -> Any:
        profile = self.profiles["target"]
        attribute, _, _ = DEVICE_FACTS[fact]
        value = _plain(profile.value(attribute))
        if value is not None:
            return value
        if fact == "sm_count" and profile.device.sm_count:
            return profile.device.sm_count
        cc = profile.device.compute_capability
        if fact in ("cc_major", "cc_minor") and cc:
            major, _, minor = cc.partition(".")
            return int(major) if fact == "cc_major" else int(minor or 0)
        fallback = DEVICE_FALLBACKS.get(cc or "", {}).get(fact)
        if fallback is not None:
            note = f"device.{fact} = {fallback} (documented value for compute capability {cc}; the profile has no device attributes)"
            if note not in self.assumptions:
                self.assumptions.append(note)
        return fallback

    def evaluate(self, expr: Expression) -> Any:
        return expr.evaluate(resolve=self.bare, functions=FUNCTIONS, resolve_braced=self.braced)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _derived(profile: KernelProfile, ident: str, catalog: Catalog) -> Any:
    def value(metric_id: str) -> Any:
        return _plain(evaluate_metric(catalog.metrics[metric_id], profile)) if metric_id in catalog.metrics else None

    if ident in ("stall_max", "stall_sum", "stall_all", "stall_top"):
        ids = [m for m in catalog.metrics if m.startswith("stall_")]
        readings = {m: value(m) for m in ids}
        readings = {m: float(v) for m, v in readings.items() if _is_number(v)}
        if ident == "stall_all":
            return sum(readings.values()) if readings else None
        stalls = {m: v for m, v in readings.items() if m not in _STALL_EXCLUDED}
        if not stalls:
            return None
        if ident == "stall_sum":
            return sum(stalls.values())
        top = max(stalls, key=lambda m: stalls[m])
        return stalls[top] if ident == "stall_max" else catalog.metrics[top].label
    if ident in ("blocks_per_sm", "occupancy_limiter"):
        limits = {word: value(m) for m, word in _LIMITS}
        limits = {w: float(v) for w, v in limits.items() if _is_number(v)}
        if not limits:
            return None
        least = min(limits.values())
        if ident == "blocks_per_sm":
            return least
        return " and ".join(w for w, v in limits.items() if v == least)
    if ident == "warps_per_block":
        size = value("block_size")
        return math.ceil(float(size) / 32) if _is_number(size) else None
    if ident == "smem_per_block":
        static, dynamic = value("shared_mem_static"), value("shared_mem_dynamic")
        if not _is_number(static) and not _is_number(dynamic):
            return None
        return (float(static) if _is_number(static) else 0.0) + (float(dynamic) if _is_number(dynamic) else 0.0)
    raise KeyError(ident)


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
            raise UserError(f"{rule.file}: rule {rule.id!r}: field 'condition': cannot be evaluated ({e})") from None
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
    impact = None
    if rule.impact is not None:
        raw = _safe(scope, rule.impact)
        if _is_number(raw) and math.isfinite(float(raw)):
            impact = min(max(float(raw), 0.0), 1.0)
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
    )


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
    if ident in DERIVED:
        return DERIVED[ident][0]
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


def findings_for(
    target: KernelProfile,
    reference: KernelProfile | None = None,
    baseline: KernelProfile | None = None,
    extra_rule_files: Iterable[str | Path] = (),
    disabled: Iterable[str] = (),
    catalog: Catalog | None = None,
) -> list[Finding]:
    """The ranked findings of the built-in rules (plus extra rule files, minus disabled ids)."""
    return evaluate_all(target, reference, baseline, extra_rule_files, disabled, catalog).findings
