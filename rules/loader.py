"""Loading rule files: TOML into validated Rule objects (rules/model.py). Format: docs/rules.md."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from kernelscope.errors import UserError
from kernelscope.profiler.catalog import Catalog, load_catalog
from kernelscope.profiler.derived import DEVICE_FACTS
from kernelscope.profiler.expression import FUNCTIONS, Expression, ExpressionError, parse
from kernelscope.profiler.documents import read_toml
from kernelscope.rules.findings import SEVERITIES
from kernelscope.rules.model import COMPARES, FORMATS, PROFILE_KINDS, SIDES, Placeholder, Rule, RuleSet

BUILTIN_DIR = Path(__file__).parent / "builtin"
CAUSES_FILE = Path(__file__).parent / "causes.toml"
_RULE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# `target.branch_ratio` is written with a dot; the expression language has no attribute
# access, so such names are rewritten to the verbatim form {target.branch_ratio} first.
_DOTTED = re.compile(r"(?<![\w.{:])(target|reference|baseline|delta|ratio|device)\.([A-Za-z_][A-Za-z0-9_]*)")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


@lru_cache(maxsize=None)
def causes() -> dict[str, dict[str, str]]:
    """The vocabulary of causes (rules/causes.toml): id -> {title, description}."""
    return read_toml(CAUSES_FILE, "causes file")


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
    data = read_toml(path, "rule file")
    unknown = sorted(set(data) - {"rule", "thresholds"})
    if unknown:
        raise UserError(f"{path}: unknown top-level key {unknown[0]!r} (a rule file holds [[rule]] entries and [thresholds.ID] tables)")
    entries = data.get("rule", [])
    if not isinstance(entries, list):
        raise UserError(f"{path}: 'rule' must be an array of tables: write [[rule]]")
    seen: set[str] = set()
    raw: dict[str, dict] = {}
    for index, entry in enumerate(entries):
        entry = _with_like(entry, raw, path)
        rule = _rule_from(entry, path, index, catalog)
        raw[rule.id] = entry
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


def _with_like(entry: Any, earlier: Mapping[str, dict], path: Path) -> Any:
    """`like = "ID"`: the entry takes the thresholds and let values of rule ID, defined earlier in the
    same file, under its own (two readings of one measurement need not repeat its definitions)."""
    if not isinstance(entry, dict) or "like" not in entry:
        return entry
    like = entry["like"]
    base = earlier.get(like) if isinstance(like, str) and like != entry.get("id") else None
    if base is None:
        raise UserError(f"{path}: rule {entry.get('id')!r}: field 'like': no earlier rule {like!r} in this file")
    merged = {k: v for k, v in entry.items() if k != "like"}
    for table in ("thresholds", "let"):
        if isinstance(base.get(table), dict) and isinstance(entry.get(table, {}), dict):
            merged[table] = {**base[table], **entry.get(table, {})}
    return merged


def _rule_from(entry: Any, path: Path, index: int, catalog: Catalog) -> Rule:
    if not isinstance(entry, dict):
        raise UserError(f"{path}: rule #{index + 1}: must be a table")
    ident = entry.get("id")
    where = f"{path}: rule {ident!r}" if isinstance(ident, str) else f"{path}: rule #{index + 1}"

    def fail(fieldname: str, problem: str) -> UserError:
        return UserError(f"{where}: field {fieldname!r}: {problem}")

    known_fields = {"id", "title", "compares", "severity", "condition", "message", "hint", "section",
                    "impact", "thresholds", "let", "description", "profiles", "cause", "gap", "ncu_evidence",
                    "measure", "worse"}
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
    cause = entry.get("cause")
    if cause is not None and cause not in causes():
        raise fail("cause", f"unknown cause {cause!r} (causes: {', '.join(causes())}; rules/causes.toml)")
    evidence = entry.get("ncu_evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) and e for e in evidence):
        raise fail("ncu_evidence", "must be a list of Nsight Compute rule identifiers")
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

    def compile_expr(fieldname: str, text: Any, side: str = compares) -> Expression:
        if not isinstance(text, str) or not text.strip():
            raise fail(fieldname, "must be a non-empty expression string")
        try:
            # Long expressions may span lines in TOML's triple-quoted strings.
            expr = parse(rewrite_names(re.sub(r"\s*\n\s*", " ", text)), frozenset(FUNCTIONS))
        except ExpressionError as e:
            raise fail(fieldname, str(e)) from None
        problem = _check_names(expr, local_names, side, catalog)
        if problem:
            raise fail(fieldname, problem)
        return expr

    # A rule about one kernel that estimates its cost against a reference (`gap`) may name the
    # reference in its lets too; such a let is n/a when no reference is given.
    let_side = "reference" if compares == "target" and "gap" in entry else compares
    lets = {name: compile_expr(f"let.{name}", text, let_side) for name, text in lets_raw.items()}
    cycle = _let_cycle(lets)
    if cycle:
        raise fail(f"let.{cycle[0]}", f"refers to itself through {' -> '.join(cycle)}")
    condition = compile_expr("condition", entry["condition"])
    impact = compile_expr("impact", entry["impact"]) if "impact" in entry else None
    gap = None
    if "gap" in entry:
        # A rule about one kernel may still say what its cause costs against a reference (read
        # only when one is given): its `gap` may name reference.ID besides target.ID.
        gap_compares = "reference" if compares == "target" else compares
        gap = compile_expr("gap", entry["gap"], gap_compares)
        if compares == "target" and any(b.partition(".")[0] in ("delta", "ratio") for b in gap.braced):
            raise fail("gap", "write reference.ID in a rule with compares = \"target\" (delta. and ratio. need compares = \"reference\")")
    measure = compile_expr("measure", entry["measure"]) if "measure" in entry else None
    if measure is not None and compares != "target":
        raise fail("measure", "is read on each kernel alone: only for compares = \"target\"")
    if entry.get("worse", "higher") not in ("higher", "lower"):
        raise fail("worse", f"must be \"higher\" or \"lower\", not {entry['worse']!r}")
    if gap is not None and compares not in ("reference", "target"):
        raise fail("gap", "estimates time lost against the reference: only for compares = \"reference\" or \"target\"")

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
        cause=cause,
        gap=gap,
        ncu_evidence=tuple(evidence),
        measure=measure,
        worse=entry.get("worse", "higher"),
        texts={"condition": " ".join(entry["condition"].split()),
               **({"impact": " ".join(entry["impact"].split())} if "impact" in entry else {}),
               **({"gap": " ".join(entry["gap"].split())} if "gap" in entry else {}),
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
    if ident not in catalog.metrics:
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
