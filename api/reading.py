"""Reading results that already exist: reports, profile JSON, sweeps; diffs and rule findings.

None of these needs a GPU.
"""

from __future__ import annotations

import json
import lzma
import os
from typing import TYPE_CHECKING, Any, Sequence, Union

from kernelscope.api.measurements import Sweep
from kernelscope.api.results import Diff, Findings, Inspection, Profiles
from kernelscope.api.selection import load_spec, only, pick
from kernelscope.errors import UserError

if TYPE_CHECKING:
    from kernelscope.profiler.record import KernelProfile

# What `diff` and `evaluate` accept for one kernel: a spec string (FILE[:REGEX|:@INDEX]),
# a KernelProfile, or a one-kernel Profiles / Inspection.
KernelLike = Union[str, os.PathLike, "KernelProfile", Profiles, Inspection]


def load(path: str | os.PathLike, *, kernel: str | None = None, group_nvtx: str | None = None,
         views: Sequence[str] | None = None, catalog: Sequence[str] = ()) -> Profiles:
    """Read a report: `.ncu-rep`, kernelscope JSON (`show --format json`, `inspect --format json`),
    either possibly `.xz`-compressed.

    path: may carry a selector, `FILE:REGEX` or `FILE:@INDEX`.
    kernel: a regex over kernel names (function, demangled, NVTX range) or `@INDEX`.
    group_nvtx: merge the launches inside NVTX ranges whose name starts with this prefix.
    views: the catalog views `to_dict()`/`to_dataframe()` hold (default: all).
    catalog: extra catalog TOML files adding or overriding metric entries.
    """
    source, profiles = load_spec(os.fspath(path), group_nvtx=group_nvtx)
    if kernel is not None:
        profiles = pick(profiles, kernel, source)
    result = Profiles(profiles, source, catalog_files=catalog, views=views)
    if views:
        result._catalog().metrics_of(list(views))  # an unknown view is a UserError now, not later
    return result


def load_sweep(path: str | os.PathLike) -> Sweep:
    """Read a sweep document (`kernelscope sweep --json`, possibly `.xz`)."""
    path = os.fspath(path)
    try:
        opener = lzma.open if path.endswith(".xz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, lzma.LZMAError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not a readable JSON sweep ({e})") from None
    if not isinstance(doc, dict) or doc.get("schema") != "kernelscope.sweep" or not isinstance(doc.get("rows"), list):
        raise UserError(f"{path}: not a kernelscope sweep (expected schema 'kernelscope.sweep', from `sweep --json`)")
    return Sweep(doc)


def kernel(spec: KernelLike, role: str = "kernel", *, merge: bool = False):
    """One KernelProfile from a spec string, a profile, or a one-kernel Profiles/Inspection.
    merge: several launches become one profile (kind "merged": counts and times summed)."""
    from kernelscope.profiler.merge import merge_profiles
    from kernelscope.profiler.record import KernelProfile

    if isinstance(spec, KernelProfile):
        return spec
    if isinstance(spec, Inspection):
        spec = spec.profiles
    if isinstance(spec, Profiles):
        where, profiles = spec.source, spec.profiles
    elif isinstance(spec, (str, os.PathLike)):
        where = os.fspath(spec)
        _, profiles = load_spec(where, lines=True)
    else:
        profiles = None
    if profiles is not None:
        if merge and len(profiles) > 1:
            names = list(dict.fromkeys(p.name for p in profiles))
            return merge_profiles(names[0] if len(names) == 1 else f"{len(profiles)} launches of {where}", profiles,
                                  kind="merged")
        return only(profiles, where, role)
    raise TypeError(f"{role}: expected a path spec, KernelProfile, Profiles or Inspection, not {type(spec).__name__}")


def diff(a: KernelLike, b: KernelLike | None = None, *, views: Sequence[str] | None = None,
         rules: Sequence[str] = (), disable: Sequence[str] = (), catalog: Sequence[str] = (),
         top_opcodes: int = 15, merge: bool = False) -> Diff:
    """Kernel A (yours) beside kernel B (its reference), metric by metric, with rule findings.

    With `b` omitted, `a` must name (or be) a report holding exactly two kernels.
    rules: extra rule files (docs/rules.md); disable: rule ids to skip; catalog: extra
    catalog files; views: the views to compare (default: all); merge: A and B may each match
    several launches, merged per side (as many on both sides), as `diff --merge`.
    """
    from kernelscope.profiler.catalog import load_catalog
    from kernelscope.profiler.compare import compare

    if b is None:
        if isinstance(a, (str, os.PathLike)):
            where, profiles = load_spec(os.fspath(a), lines=True)
        elif isinstance(a, Profiles):
            where, profiles = a.source, a.profiles
        else:
            raise TypeError("diff with one argument needs a report spec or a Profiles of two kernels")
        if len(profiles) != 2:
            raise UserError(f"diff with one report needs exactly two kernels there; {where} has {len(profiles)} "
                            "matching (give A and B)")
        first, second = profiles
    else:
        first, second = kernel(a, "A", merge=merge), kernel(b, "B", merge=merge)
        if merge and first.launches != second.launches:
            raise UserError(f"merge: A merges {first.launches} launch(es) and B {second.launches}; summed counts and "
                            f"times compare like with like only for as many launches on both sides: narrow A or B")
    from kernelscope.rules.line_locations import attach_locations

    cat = load_catalog(catalog)
    comparison = compare(first, second, cat, list(views) if views else None, top_opcodes)
    findings = _evaluate(first, second, None, rules, disable, cat)
    # Findings name the source lines where their samples sit, as `kernelscope diff` does.
    attach_locations(findings.diagnosis.findings + findings.diagnosis.shared, first.source_lines, second.source_lines)
    return Diff(comparison, findings, rules, disable)


def evaluate(target: KernelLike, reference: KernelLike | None = None, *, baseline: KernelLike | None = None,
             rules: Sequence[str] = (), disable: Sequence[str] = (), catalog: Sequence[str] = ()) -> Findings:
    """Run the rules on a target alone, against a reference and/or against a baseline profile."""
    from kernelscope.profiler.catalog import load_catalog

    t = kernel(target, "target")
    r = kernel(reference, "reference") if reference is not None else None
    bl = kernel(baseline, "baseline") if baseline is not None else None
    return _evaluate(t, r, bl, rules, disable, load_catalog(catalog))


def _evaluate(target, reference, baseline, rules, disable, catalog) -> Findings:
    from kernelscope.rules.diagnosis import diagnose

    return Findings(diagnose(target, reference, baseline, extra_rule_files=rules, disabled=disable, catalog=catalog))


def list_rules(files: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every rule (built-in plus `files`), one dict each: id, severity, compares, title."""
    from kernelscope.rules.engine import load_rules

    ruleset = load_rules(files)
    return [{"id": r.id, "severity": r.severity, "compares": r.compares, "title": r.title}
            for r in sorted(ruleset.rules.values(), key=lambda r: (r.compares, r.id))]


def explain_rule(rule_id: str, files: Sequence[str] = ()) -> dict[str, Any]:
    """Everything about one rule: condition, thresholds, named values, impact, message, hint,
    section and the file it comes from. A UserError (with close ids) when no rule has the id."""
    from kernelscope.rules.engine import load_rules

    rule = load_rules(files).rule(rule_id)
    return {
        "id": rule.id,
        "title": rule.title,
        "severity": rule.severity,
        "compares": rule.compares,
        "description": " ".join(rule.description.split()) if rule.description else "",
        "condition": rule.texts.get("condition", rule.condition.text),
        "thresholds": dict(rule.thresholds),
        "lets": {name: rule.texts.get("let." + name, expr.text) for name, expr in rule.lets.items()},
        "impact": None if rule.impact is None else rule.texts.get("impact", rule.impact.text),
        "message": rule.message,
        "hint": rule.hint,
        "section": rule.section,
        "file": str(rule.file),
    }
