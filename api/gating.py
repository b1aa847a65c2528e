"""Baselines and the gate: save what a suite (or a report) measures, judge a run against it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from kernelscope.api.measurements import Baseline, Gate
from kernelscope.errors import UserError

DEFAULT_GPU_SUITE = "suites/gpu.toml"
DEFAULT_STATIC_SUITE = "suites/static.toml"


def find_suite(path: str) -> str:
    """A suite path as given, else relative to the kernelscope source tree (editable installs)."""
    if os.path.isfile(path):
        return path
    import kernelscope

    candidate = Path(kernelscope.__file__).resolve().parent / path
    if not os.path.isabs(path) and candidate.is_file():
        return str(candidate)
    raise UserError(f"{path}: no such suite file")


def load_checked_suite(path: str):
    """The suite, with every case's target checked by name now: a misspelt target is an input
    error before the first case is measured, not after the others."""
    from kernelscope.gate.suite import load_suite
    from kernelscope.kernels import registry

    suite = load_suite(find_suite(path))
    for case in suite.cases:
        file, _, attr = case.target.rpartition(":")
        if case.target in registry.REGISTERED or (file.endswith(".py") and attr and os.path.isfile(file)):
            continue
        if file.endswith(".py"):
            raise UserError(f"{suite.path}: case {case.id}: no such file {file}")
        raise UserError(f"{suite.path}: case {case.id}: unknown target {case.target!r}: known are "
                        f"{', '.join(registry.names())}, or give path/to/file.py:NAME")
    return suite


def baseline(*, suite: str | None = None, report: str | None = None, static_only: bool = False,
             use_cache: bool = True, keep_reports: str | None = None, progress=None) -> Baseline:
    """Measure a suite (TOML, docs/ci.md) or take the counters of an ncu report, as
    `kernelscope baseline save` does; `.save(path)` writes it. A GPU suite needs a GPU;
    `static_only` (or a static suite) compiles only."""
    from kernelscope.gate import baseline as bl
    from kernelscope.gate.runner import run_suite

    if report and suite:
        raise UserError("give suite or report, not both")
    if report:
        return Baseline(bl.document_from_report(report))
    chosen = load_checked_suite(suite or (DEFAULT_STATIC_SUITE if static_only else DEFAULT_GPU_SUITE))
    return Baseline(run_suite(chosen, static_only=static_only, use_cache=use_cache, keep_reports=keep_reports,
                                 progress=progress))


def load_baseline(path: str | os.PathLike) -> Baseline:
    """Read a baseline file (`kernelscope.baseline`)."""
    from kernelscope.gate.baseline import load_baseline as load

    return Baseline(load(path))


def gate_against(baseline: str | os.PathLike | Baseline | Mapping[str, Any], *, suite: str | None = None,
         report: str | None = None, current: Baseline | Mapping[str, Any] | None = None, static_only: bool = False,
         accept_inconclusive: bool = False, min_effect: float | None = None, alpha: float | None = None,
         rules: Iterable[Mapping[str, Any] | Any] = (), use_cache: bool = True, progress=None) -> Gate:
    """Judge a fresh run of the suite (default: the suite the baseline was saved from), the
    kernels of an ncu report, or an already measured `current` document against a baseline:
    PASS, REGRESSION, IMPROVEMENT or INCONCLUSIVE per case and metric, as `kernelscope gate`.

    rules: per-metric rules as dicts (`{"match": "counters:dram__*", "rel": 0.1}`, docs/ci.md) or
    `MetricRule`s. `.current` of the result is the run that was judged (a baseline document).
    """
    from kernelscope.gate import baseline as bl
    from kernelscope.gate import policy as gt
    from kernelscope.gate.runner import run_suite
    from kernelscope.gate.verdicts import gate as judge

    if sum(x is not None for x in (suite, report, current)) > 1:
        raise UserError("give one of suite, report or current")
    if alpha is not None and not 0 < alpha < 1:
        raise UserError("alpha (--alpha) must lie between 0 and 1")
    baseline_path = None
    if isinstance(baseline, (str, os.PathLike)):
        baseline_path = os.fspath(baseline)
        base = bl.load_baseline(baseline_path)
    else:
        base = dict(baseline.to_dict() if isinstance(baseline, Baseline) else baseline)
    chosen = None
    families = None
    if report is not None:
        now = bl.align_report_to_baseline(bl.document_from_report(report), base)
        if not now["cases"]:
            raise UserError(f"{report}: no kernel of the report matches a case of {baseline_path or 'the baseline'}")
        mode, families, source = "report", [gt.COUNTERS], report
    elif current is not None:
        now = dict(current.to_dict() if isinstance(current, Baseline) else current)
        mode, source = "suite", (now.get("suite") or {}).get("path")
        if now.get("kind") == "static":
            families = [gt.STATIC]
    else:
        recorded = (base.get("suite") or {}).get("path")
        chosen = load_checked_suite(suite or recorded or (DEFAULT_STATIC_SUITE if static_only
                                                          else DEFAULT_GPU_SUITE))
        static_only = static_only or base.get("kind") == "static" or chosen.static_only
        now = run_suite(chosen, static_only=static_only, use_cache=use_cache, progress=progress)
        mode, source = "suite", chosen.path
        families = [gt.STATIC] if static_only else None
    extra = list(chosen.rules) if chosen is not None else []
    if min_effect is not None:
        extra.append(gt.MetricRule("timing:*", min_effect=min_effect))
    if alpha is not None:
        extra.append(gt.MetricRule("timing:*", alpha=alpha))
    extra += [r if isinstance(r, gt.MetricRule) else gt.MetricRule.from_dict(r, f"rule {r.get('match')}") for r in rules]
    policy = gt.Policy(accept_inconclusive=accept_inconclusive).with_rules(extra)
    result = judge(base, now, policy, mode=mode, families=families)
    return Gate(result, baseline_path=baseline_path, source=source, mode=mode, current=Baseline(now))
