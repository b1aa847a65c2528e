"""Rule files for the tests: a minimal valid `[[rule]]` whose fields a test replaces or adds to
(None drops one), with more TOML after it where a test needs thresholds or lets."""

from __future__ import annotations

import textwrap
from pathlib import Path

MINIMAL = dict(id="x-rule", title="t", compares="target", severity="info", section="s",
               condition="target.registers_per_thread > 0", message="m", hint="h")


def rule_text(**fields) -> str:
    lines = ["[[rule]]"]
    for key, value in {**MINIMAL, **fields}.items():
        if value is not None:
            lines.append(f"{key} = '''{value}'''")  # TOML literal string: quotes inside stay as written
    return "\n".join(lines) + "\n"


def write_rule_file(folder: Path, name: str = "rules.toml", *, after: str = "", **fields) -> Path:
    """`folder/name` holding one rule (MINIMAL with `fields`) followed by the TOML text `after`."""
    path = Path(folder) / name
    path.write_text(rule_text(**fields) + textwrap.dedent(after))
    return path
