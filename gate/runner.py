"""Running a suite: each case inspected compile-only, and on a GPU also checked, timed and
(when the suite asks) profiled under ncu; the result is a baseline document."""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any, Callable

from kernelscope.errors import UserError
from kernelscope.gate.baseline import SCHEMA, SCHEMA_VERSION, counter_entry
from kernelscope.gate.environment import capture_environment, version_number
from kernelscope.gate.suite import Case, Suite
from kernelscope.profiler.code_identity import case_identity


def _kernel_entry(profile) -> dict[str, Any]:
    return {"index": profile.index, "name": profile.name,
            "metrics": {k: {"value": m.value, "unit": m.unit} for k, m in profile.metrics.items()},
            "instruction_mix": dict(profile.instruction_mix)}


def static_entries(case: Case, use_cache: bool = True):
    """(one entry per compiled kernel, the inspection that resolved the case's defaults)"""
    from kernelscope.profiler.static import inspect_target

    inspection = inspect_target(case.target, config=case.config, shape=case.shape, dtype=case.dtype,
                                arch=case.arch, use_cache=use_cache)
    return [_kernel_entry(p) for p in inspection.profiles], inspection


def _case_record(case: Case) -> dict[str, Any]:
    return {"id": case.id, "target": case.target, "reference": case.reference, "shape": dict(case.shape),
            "config": {k: list(v) if isinstance(v, tuple) else v for k, v in case.config.items()},
            "dtype": case.dtype, "arch": case.arch}


def _measure_case(case: Case, suite: Suite, record: dict[str, Any]) -> None:
    """Correctness, then the target's and the reference's per-launch timings (GPU)."""
    import torch

    from kernelscope.kernels import references, registry
    from kernelscope.profiler import measure
    from kernelscope.profiler.checked_timing import time_checked

    spec = registry.resolve(case.target)
    shape = {**record["shape"]}
    config = spec.config_for(shape, record["dtype"], case.config)
    measure.check_config_keys(spec, config)
    measure.validate_dtype(spec, record["dtype"])
    inputs = spec.make_inputs(shape, record["dtype"], case.seed, "cuda")
    compiled = measure.compile_checked(spec, config, shape, record["dtype"], case.arch)
    target_fn = compiled.bound(inputs)
    out = target_fn()
    torch.cuda.synchronize()
    out = inputs[spec.output] if spec.output in inputs else out
    report = measure.check_output(spec, out, inputs, record["dtype"])
    record["correctness"] = {"ok": report.ok, "max_abs_error": report.max_abs_error,
                             "bad_count": report.bad_count,
                             "summary": None if report.ok else f"{report.bad_count} elements over tolerance "
                                                               f"(max abs {report.max_abs_error:.3g}); {report.where()}"}
    timing: dict[str, Any] = {}
    fl, nb = float(spec.flops(shape)), float(spec.bytes_moved(shape, record["dtype"]))
    peaks = measure.measure_peaks(need_matmul=nb > 0 and fl / nb >= measure.COMPUTE_BOUND_INTENSITY)
    common = dict(spec=spec, inputs=inputs, shape=shape, dtype=record["dtype"], seed=case.seed, flops=fl, nbytes=nb,
                  peaks=peaks, fresh=suite.fresh_inputs, warmup_ms=suite.warmup_ms, iters=case.samples,
                  flush_l2=suite.flush_l2)
    timing["target"] = time_checked(target_fn, **common).to_dict()
    if case.reference:
        ref_fn = references.bind(case.reference, spec, inputs)
        timing["reference"] = time_checked(ref_fn, is_target=False, **common).to_dict()
    record["timing"] = timing
    del inputs, compiled, target_fn
    torch.cuda.empty_cache()


def _profile_case(case: Case, suite: Suite, record: dict[str, Any], keep_dir: str | None) -> dict[str, Any]:
    """One ncu profile of the case's target; returns the ncu facts for the environment."""
    from kernelscope.kernels import registry
    from kernelscope.profiler.ncu import ProfileRequest, find_ncu, ncu_version, run_profile
    from kernelscope.profiler.report import load_report
    from kernelscope.profiler.worker import TARGET_RANGE
    from kernelscope.rules.collection import metrics_for_set

    spec = registry.resolve(case.target)
    config = spec.config_for(record["shape"], record["dtype"], case.config)
    folder = keep_dir or tempfile.mkdtemp(prefix="kernelscope-baseline-")
    os.makedirs(folder, exist_ok=True)
    report_path = os.path.join(folder, re.sub(r"[^A-Za-z0-9_.+-]", "_", case.id) + ".ncu-rep")
    ncu = find_ncu()
    req = ProfileRequest(target=case.target, reference="", shape=record["shape"], dtype=record["dtype"],
                         config=config, report_path=report_path, section_set=suite.ncu_sections,
                         clock_control="none", cache_control=suite.cache_control, seed=case.seed, arch=case.arch,
                         metrics=metrics_for_set(suite.ncu_sections))
    run_profile(req, ncu=ncu, timeout_s=600)
    profiles = [p for p in load_report(report_path) if any(r.startswith(TARGET_RANGE) for r in p.nvtx_ranges)]
    if not profiles:
        raise UserError(f"case {case.id}: the profile holds no kernel inside the {TARGET_RANGE} range", exit_code=3)
    record["counters"] = [counter_entry(p) for p in profiles]
    _cross_check(record, profiles)
    if keep_dir is None:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    return {"version": version_number(ncu_version(ncu)), "clock_control": "none",
            "cache_control": suite.cache_control, "sections": suite.ncu_sections}


def _cross_check(record: dict[str, Any], profiles) -> None:
    """The target's CUDA-event median against ncu's clock and DRAM counters of its profiled launch."""
    from kernelscope.profiler.checked_timing import add_profile_checks_from
    from kernelscope.profiler.measure import measure_peaks

    target = (record.get("timing") or {}).get("target")
    if target:
        add_profile_checks_from(target, profiles, measure_peaks(need_matmul=False).copy_gbps)


def run_suite(suite: Suite, *, static_only: bool = False, use_cache: bool = True,
              keep_reports: str | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every case of the suite; returns a baseline document (not yet written)."""
    static_only = static_only or suite.static_only
    gpu = False
    if not static_only:
        import torch

        if not torch.cuda.is_available():
            raise UserError("no CUDA GPU is available: this suite times kernels "
                            "(use --static-only for a compile-only baseline)", exit_code=3)
        gpu = True
    ncu_facts = None
    cases = []
    for case in suite.cases:
        if progress:
            progress(case.id)
        try:
            entries, inspection = static_entries(case, use_cache=use_cache)
            record = _case_record(case)
            # Resolved by the inspection: the defaults the target filled in.
            record["shape"], record["dtype"] = dict(inspection.shape), inspection.dtype
            record["config"] = {k: v for k, v in inspection.config.items()}
            record["static"] = entries
            record["code"] = case_identity(inspection)
            if gpu:
                _measure_case(case, suite, record)
                record["code"]["launches"] = record["timing"]["target"].get("launches")
                if case.ncu:
                    ncu_facts = _profile_case(case, suite, record, keep_reports)
        except UserError as e:
            raise UserError(f"case {case.id}: {e}", e.exit_code) from e
        cases.append(record)
    env = capture_environment(gpu=gpu, ncu=ncu_facts, flush_l2=suite.flush_l2 if gpu else None)
    if gpu and suite.fresh_inputs:
        env["timing"]["fresh_inputs"] = True     # absent otherwise: older baselines stay comparable
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": "static" if not gpu else "gpu",
        "suite": {"path": suite.path, "name": suite.name, "static_only": not gpu,
                  "samples": suite.samples if gpu else None},
        "environment": env,
        "cases": cases,
    }
