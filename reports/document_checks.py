"""Checks of the result documents `kernelscope report` reads back (diff, gate and sweep JSON).

A document may have been edited or produced by another version: every field the page reads
is checked for its type first, so a malformed file is one line naming the field, never a
traceback from deep inside the page.
"""

from __future__ import annotations

from typing import Any

from kernelscope.errors import UserError

NUMBER, TEXT, ANY = "number", "text", "any"


class Opt:
    """The field may be missing or null."""

    def __init__(self, spec: Any):
        self.spec = spec


VALUE = Opt((NUMBER, TEXT))      # a metric value: a number, a text, or not collected
IDENTITY = Opt({"name": Opt(TEXT), "short_name": Opt(TEXT), "demangled_name": Opt(TEXT), "source": Opt(TEXT),
                "index": Opt(NUMBER), "device": Opt(dict), "session": Opt(dict)})
DIFF = {
    "a": IDENTITY, "b": IDENTITY,
    "comparability": Opt([TEXT]),
    "views": Opt({"*": {"title": Opt(TEXT), "metrics": Opt([{
        "id": TEXT, "label": TEXT, "unit": Opt(TEXT), "a": VALUE, "b": VALUE, "change": VALUE,
        "relative": VALUE, "better_side": Opt(TEXT)}])}}),
    "instruction_mix": Opt([{"opcode": TEXT, "count_a": Opt(NUMBER), "count_b": Opt(NUMBER),
                             "share_a": Opt(NUMBER), "share_b": Opt(NUMBER), "share_change": Opt(NUMBER),
                             "relative": Opt(NUMBER)}]),
    "findings": Opt([dict]),
    "rules_not_evaluated": Opt({"*": Opt([TEXT])}),
}
GATE = {
    "counts": Opt({"*": Opt(NUMBER)}),
    "environment": Opt({"differences": Opt([dict])}),
    "cases": Opt([{"case": Opt(TEXT), "verdict": Opt(TEXT), "description": Opt(TEXT),
                   "metrics": Opt([{"metric": Opt(TEXT), "family": Opt(TEXT), "kernel": Opt(TEXT),
                                    "change": Opt(NUMBER), "verdict": Opt(TEXT), "reason": Opt(TEXT),
                                    "baseline": Opt(ANY), "current": Opt(ANY)}])}]),
}
SWEEP = {
    "target": Opt(TEXT), "reference": Opt(TEXT), "dtype": Opt(TEXT), "shape": Opt({"*": Opt(NUMBER)}),
    "reference_timing": Opt({"median_ms": NUMBER}),
    "rows": Opt([{"config": Opt(dict), "status": Opt(TEXT), "message": Opt(TEXT),
                  "timing": Opt({"median_ms": NUMBER}), "speed_vs_reference_pct": Opt(NUMBER),
                  "metrics": Opt(dict)}]),
}


def check_document(doc: Any, spec: dict, path: str, kind: str) -> None:
    problem = _problem(doc, spec, "")
    if problem:
        raise UserError(f"{path}: malformed {kind} document: {problem}")


def _problem(value: Any, spec: Any, where: str) -> str | None:
    if isinstance(spec, Opt):
        if value is None:
            return None
        spec = spec.spec
    if isinstance(spec, tuple):
        problems = [_problem(value, s, where) for s in spec]
        return None if any(p is None for p in problems) else problems[0]
    if spec == ANY:
        return None
    if spec == NUMBER:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"{where or 'the document'} must be a number, not {value!r}"
    if spec == TEXT:
        return None if isinstance(value, str) else f"{where or 'the document'} must be a string, not {value!r}"
    if spec is dict:
        return None if isinstance(value, dict) else f"{where or 'the document'} must be an object"
    if isinstance(spec, list):
        if not isinstance(value, list):
            return f"{where} must be a list"
        return next((p for i, item in enumerate(value) if (p := _problem(item, spec[0], f"{where}[{i}]"))), None)
    if not isinstance(value, dict):
        return f"{where or 'the document'} must be an object"
    if "*" in spec:
        return next((p for k, item in value.items() if (p := _problem(item, spec["*"], f"{where}.{k}".lstrip(".")))), None)
    for key, sub in spec.items():
        if key not in value and not isinstance(sub, Opt):
            return f"{where}.{key}".lstrip(".") + " is missing"
        p = _problem(value.get(key), sub, f"{where}.{key}".lstrip("."))
        if p:
            return p
    return None
