"""Findings that point at source lines, as CI annotations: GitHub workflow commands and SARIF 2.1.0.

Only located findings (with `locations`) become annotations; each location is one annotation, so a
pull request shows the finding on the line where its samples sit.
"""

from __future__ import annotations

import json
from typing import Any

from kernelscope import __version__
from kernelscope.rules.findings import Finding
from kernelscope.rules.line_locations import location_text

_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(findings: list[Finding]) -> list[str]:
    """`::warning file=F,line=N,title=T::message` lines (GitHub Actions workflow commands)."""
    out = []
    for f in findings:
        for loc in f.locations:
            level = _GITHUB_LEVEL.get(f.severity, "notice")
            props = f"file={_escape_property(str(loc['file']))},line={int(loc['line'])},title={_escape_property(f.title)}"
            message = f"{location_text(loc)}. {f.message} Try: {f.hint}"
            out.append(f"::{level} {props}::{_escape_data(message)}")
    return out


def sarif_document(findings: list[Finding]) -> dict[str, Any]:
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for f in findings:
        if not f.locations:
            continue
        rules.setdefault(f.rule_id, {"id": f.rule_id, "name": f.rule_id, "shortDescription": {"text": f.title},
                                     "help": {"text": f.hint}})
        results.append({
            "ruleId": f.rule_id,
            "level": _SARIF_LEVEL.get(f.severity, "note"),
            "message": {"text": f"{f.title}: {f.message}"},
            "locations": [{
                "physicalLocation": {"artifactLocation": {"uri": str(loc["file"])},
                                     "region": {"startLine": int(loc["line"])}},
                "message": {"text": location_text(loc)},
            } for loc in f.locations],
            "properties": {"impact": f.impact, "shares": [loc["share"] for loc in f.locations]},
        })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "kernelscope", "version": __version__, "rules": list(rules.values())}},
            "results": results,
        }],
    }


def write_sarif(findings: list[Finding], path: str) -> None:
    with open(path, "w") as f:
        json.dump(sarif_document(findings), f, indent=1)
