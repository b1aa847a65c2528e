"""A suite's cases spread over an executor (every GPU of a host, or a Dask cluster).

Each case runs where the executor puts it: its compile-only facts, then on the worker's GPU
(held exclusively) correctness, timing and, when the suite asks, ncu. The worker records the
device it measured on with the case (`device`: host, name, UUID, SM clock, driver) and the GPU
facts of its environment. The document is the one `run_suite` writes; when the cases ran on
devices whose facts differ (two GPU models, two drivers), the environment says `mixed`, so the
gate finds it comparable to no single-device baseline and stays INCONCLUSIVE.
A case whose task fails is retried once; a case that fails twice ends the run with its reason,
the cases already measured kept in a partial document beside the output.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from kernelscope.errors import UserError
from kernelscope.gate.baseline import SCHEMA, SCHEMA_VERSION, save_baseline
from kernelscope.gate.environment import capture_environment
from kernelscope.gate.runner import _case_record, _measure_case, _profile_case, static_entries
from kernelscope.gate.suite import Case, Suite
from kernelscope.profiler.code_identity import case_identity
from kernelscope.profiler.executors import PointExecutor

_GPU_ENV_KEYS = ("gpu", "driver", "cuda", "torch", "timing")
_gpu_env_kept: dict[str, Any] = {}


def run_case(case: Case, suite: Suite, use_cache: bool, keep_reports: str | None) -> dict[str, Any]:
    """One case on this process's GPU: the record run_suite makes, with its device and GPU facts."""
    from kernelscope.profiler import gpu_device

    entries, inspection = static_entries(case, use_cache=use_cache)
    record = _case_record(case)
    record["shape"], record["dtype"] = dict(inspection.shape), inspection.dtype
    record["config"] = dict(inspection.config)
    record["static"] = entries
    record["code"] = case_identity(inspection)     # the gate's same-code verdicts need it
    uuid = gpu_device.device_uuid()
    ncu = None
    with gpu_device.exclusive(uuid):
        _measure_case(case, suite, record)
        record["code"]["launches"] = record["timing"]["target"].get("launches")
        if case.ncu:
            ncu = _profile_case(case, suite, record, keep_reports)
        record["device"] = gpu_device.current_device_facts()
    if not _gpu_env_kept:
        env = capture_environment(gpu=True, flush_l2=suite.flush_l2)
        _gpu_env_kept.update({k: env.get(k) for k in _GPU_ENV_KEYS})
    return {"record": record, "ncu": ncu, "gpu_environment": dict(_gpu_env_kept)}


def run_suite_on(executor: PointExecutor, suite: Suite, *, output: str, use_cache: bool = True,
                 keep_reports: str | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The baseline document of the suite, its cases measured through `executor`."""
    cases = list(suite.cases)
    attempts = {i: 1 for i in range(len(cases))}
    for i, case in enumerate(cases):
        executor.submit(i, run_case, case, suite, use_cache, keep_reports)
    done: dict[int, dict[str, Any]] = {}
    try:
        for i, value, error in executor.results():
            if error is None:
                done[i] = value
                if progress:
                    progress(f"{cases[i].id} on {(value['record'].get('device') or {}).get('name')}")
                continue
            if attempts[i] > 1:
                _keep_partial(output, suite, cases, done)
                raise UserError(f"case {cases[i].id} failed twice: {error} (measured cases kept in "
                                f"{output}.partial.json)", exit_code=3)
            attempts[i] += 1
            if progress:
                progress(f"{cases[i].id} failed ({error}); trying it once more")
            executor.submit(i, run_case, cases[i], suite, use_cache, keep_reports)
    except KeyboardInterrupt:
        executor.cancel_all()
        _keep_partial(output, suite, cases, done)
        raise UserError(f"interrupted: {len(done)} of {len(cases)} cases measured, kept in {output}.partial.json",
                        exit_code=130) from None
    return document(suite, cases, done)


def document(suite: Suite, cases: list, done: dict[int, dict[str, Any]]) -> dict[str, Any]:
    results = [done[i] for i in sorted(done)]
    env = capture_environment(gpu=False, ncu=next((r["ncu"] for r in results if r["ncu"]), None),
                                 flush_l2=suite.flush_l2)
    env.pop("gpu", None)
    gpu_envs = {json.dumps(r["gpu_environment"], sort_keys=True, default=str) for r in results}
    if len(gpu_envs) == 1:
        env.update(results[0]["gpu_environment"])
    elif gpu_envs:
        names = sorted({str((r["gpu_environment"].get("gpu") or {}).get("name")) for r in results})
        drivers = sorted({str(r["gpu_environment"].get("driver")) for r in results})
        env["gpu"] = {"name": f"mixed: {', '.join(names)}"}
        env["driver"] = drivers[0] if len(drivers) == 1 else f"mixed: {', '.join(drivers)}"
    if suite.fresh_inputs:
        env["timing"] = dict(env.get("timing") or {}, fresh_inputs=True)     # as run_suite (a copy: shared)
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "kind": "gpu",
            "suite": {"path": suite.path, "name": suite.name, "static_only": False, "samples": suite.samples},
            "environment": env, "cases": [r["record"] for r in results]}


def _keep_partial(output: str, suite: Suite, cases: list, done: dict[int, dict[str, Any]]) -> None:
    if done:
        save_baseline(document(suite, cases, done), output + ".partial.json", force=True)
