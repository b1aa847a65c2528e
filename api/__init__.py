"""kernelscope from Python: `import kernelscope as ks`.

Reading (no GPU): `ks.load`, `ks.load_sweep`, `ks.diff`, `ks.evaluate`, `ks.list_rules`,
`ks.explain_rule`; compile-only: `ks.inspect`; on a GPU: `ks.run`, `ks.profile`,
`ks.sweep`; baselines and the gate: `ks.baseline`, `ks.load_baseline`, `ks.gate_against`; a
compact digest of any result: `ks.brief`. Results are typed (`Profiles`, `Diff`,
`Findings`, `Inspection`, `Run`, `ProfileResult`, `Sweep`, `Baseline`, `Gate`) and give
`to_dict()` / `to_json()` (the CLI's versioned JSON), `to_dataframe()` (pandas, the extra
`kernelscope[pandas]`) and HTML in notebooks. Errors a user can cause raise `UserError`
(`exit_code` as the CLI would exit). docs/api.md has the whole page.
"""

from __future__ import annotations

from typing import Any

from kernelscope.api.gating import baseline, gate_against, load_baseline
from kernelscope.api.measuring import inspect, profile, run, sweep
from kernelscope.api.reading import diff, evaluate, explain_rule, list_rules, load, load_sweep
from kernelscope.api.measurements import Baseline, Gate, ProfileResult, Run, Sweep
from kernelscope.api.results import Diff, Findings, Inspection, MissingExtra, Profiles, Result
from kernelscope.errors import UserError


def brief(result: Result | dict[str, Any], tokens: int = 400) -> str:
    """A compact digest of a result or a kernelscope JSON document: the headline, then the top
    findings with their evidence, within about `tokens` tokens."""
    from kernelscope.api.digest import digest

    return digest(result.to_dict() if isinstance(result, Result) else result, tokens=tokens)


__all__ = [
    "load", "load_sweep", "diff", "evaluate", "list_rules", "explain_rule", "inspect", "run", "profile", "sweep",
    "baseline", "load_baseline", "gate_against", "brief",
    "Result", "Profiles", "Diff", "Findings", "Inspection", "Run", "ProfileResult", "Sweep", "Baseline", "Gate",
    "UserError", "MissingExtra",
]
