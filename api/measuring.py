"""Building and measuring targets: compile-only inspection (no GPU), and on a GPU the run,
profile and sweep of a target against its reference.

A target is a registered kernel name (`"rmsnorm"`) or `"path/to/file.py:NAME"`. Shapes and
configs are dicts (`{"M": 4096, "N": 4096}`) or the CLI's text (`"M=4096,N=4096"`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Mapping, Sequence

from kernelscope.api.measurements import ProfileResult, Run, Sweep
from kernelscope.api.results import Inspection
from kernelscope.errors import UserError


def _assignments(value: Mapping[str, Any] | str | Sequence[str] | None, what: str, *,
                 multi: bool = False) -> dict[str, Any]:
    """A dict as given, or the CLI's `KEY=VALUE[,KEY=VALUE]` text (one string or several)."""
    if value is None:
        return {}
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)):
        if not value:
            return {}
        from kernelscope.profiler.assignments import parse_config

        return parse_config(list(value), f"--{what}", several=multi)
    return {k: (list(v) if multi and isinstance(v, (list, tuple)) else v) for k, v in dict(value).items()}


def _shape(value: Mapping[str, int] | str | None) -> dict[str, int] | None:
    if value is None:
        return None
    if isinstance(value, str):
        from kernelscope.profiler.assignments import parse_shape

        return parse_shape(value)
    return {k: int(v) for k, v in dict(value).items()}


def resolve_target(target: str, shapes: Sequence[Mapping[str, int] | str] = (), dtype: str | None = None,
                   config=None, *, multi: bool = False):
    """(spec, shapes, dtype, config overrides): the target's first shape and dtype where none is
    given, every name checked against what the target declares."""
    from kernelscope.kernels import registry
    from kernelscope.profiler import measure

    spec = registry.resolve(target)
    parsed = [_shape(s) for s in shapes]
    if not parsed and spec.default_shapes:
        parsed = [dict(spec.default_shapes[0])]
    if not parsed:
        raise UserError(f"{spec.name} has no default shape: pass --shape (shape= in Python)")
    for shape in parsed:
        measure.check_shape_keys(spec, shape)
    dtype = dtype or (spec.dtypes[0] if spec.dtypes else "bfloat16")
    measure.validate_dtype(spec, dtype)
    overrides = _assignments(config, "config", multi=multi)
    measure.check_config_keys(spec, overrides)
    return spec, parsed, dtype, overrides


def _resolve(target: str, shape, dtype: str | None, config, *, multi: bool = False):
    spec, shapes, dtype, overrides = resolve_target(target, [shape] if shape is not None else [], dtype, config,
                                                    multi=multi)
    return spec, shapes[0], dtype, overrides


def reference_name(spec, vs: str | None) -> str | None:
    """The reference to measure against: `vs`, else the target's first; None for "none"."""
    from kernelscope.kernels import references

    if vs in ("none", ""):
        return None
    name = vs or references.default_for(spec)
    if name not in references.REFERENCES:
        raise UserError(f"unknown reference {name!r}: known are {', '.join(references.names())}")
    if not references.installed(name):
        raise UserError(f"reference {name!r} needs the Python package {references.REFERENCES[name].package}, "
                        "which is not installed")
    return name


def require_gpu(what: str) -> None:
    from kernelscope.profiler.gpu_device import cuda_device_count

    count = cuda_device_count()
    if count is None:                  # no driver library by that name: ask torch as a last resort
        import torch
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 1:
        raise UserError(f"no CUDA GPU is available: `{what}` needs one "
                        "(compile-only analysis works without: `kernelscope inspect`)", exit_code=3)


def inspect(target: str, *, config: Mapping[str, Any] | str | None = None, shape: Mapping[str, int] | str | None = None,
            dtype: str | None = None, arch: str = "sm_90a", use_cache: bool = True,
            command_line: str | None = None) -> Inspection:
    """Compile `target` for `arch` without a GPU (or take it from the compile cache) and read the
    binary: registers, spills, shared memory, barriers, the SASS histogram, expected opcodes."""
    from kernelscope.profiler.static import inspect_target

    overrides = _assignments(config, "config")
    inspection = inspect_target(target, config=overrides, shape=_shape(shape), dtype=dtype, arch=arch,
                                use_cache=use_cache, command_line=command_line or f"kernelscope.inspect({target!r})")
    return Inspection(inspection, target)


def run(target: str, *, vs: str | None = None, shape=None, dtype: str | None = None, config=None, seed: int = 0,
        arch: str = "sm_90a", rep_ms: float = 200.0, flush_l2: bool = True, peaks: bool = True) -> Run:
    """Check the target's output against an fp32 reference, then time it and its reference
    (CUDA events per launch, L2 flushed before each), as `kernelscope run` does. Needs a GPU.

    vs: the reference (default: the target's first; "none" for none).
    """
    from kernelscope.profiler import measure

    spec, parsed, dtype, overrides = _resolve(target, shape, dtype, config)
    ref = reference_name(spec, vs)
    require_gpu("run")
    cfg = spec.config_for(parsed, dtype, overrides)
    return Run(measure.run_target(spec, ref, parsed, dtype, cfg, seed=seed, arch=arch, rep_ms=rep_ms,
                                  flush_l2=flush_l2, peaks=peaks))


def sweep(target: str, *, configs: Mapping[str, Sequence[Any]] | str | None = None, vs: str | None = None,
          shape=None, dtype: str | None = None, seed: int = 0, arch: str = "sm_90a", rep_ms: float = 100.0) -> Sweep:
    """Time every combination of config values (default: the target's config space) against the
    reference; a config the kernel rejects is a row with status "invalid", not an error. Needs a GPU."""
    from kernelscope.profiler import measure

    spec, parsed, dtype, space = _resolve(target, shape, dtype, configs, multi=True)
    space = space or dict(spec.config_space)
    if not space:
        raise UserError(f"{spec.name} declares no config space: pass --config KEY=V1,V2 (configs= in Python)")
    ref = reference_name(spec, vs)
    require_gpu("sweep")
    result = measure.sweep(spec, ref, parsed, dtype, measure.combinations(space, spec.default_config), seed=seed,
                           arch=arch, timer_kwargs={"rep_ms": rep_ms})
    return Sweep(result.to_dict(), result)


def profile(target: str, *, vs: str | None = None, shape=None, dtype: str | None = None, config=None,
            output: str | None = None, sections: str | Sequence[str] = "quick", clock_control: str = "none",
            cache_control: str = "all", seed: int = 0, arch: str = "sm_90a",
            rules: Sequence[str] = (), disable: Sequence[str] = ()) -> ProfileResult:
    """Profile one launch of the target and one of its reference under Nsight Compute, as
    `kernelscope profile` does, and diff them with the rule findings. Needs a GPU and ncu.

    output: the report path (default: kernelscope-TARGET-vs-REF.ncu-rep in the current folder).
    sections: "quick", "sections", "full" or a list of ncu section names.
    """
    from kernelscope.profiler.ncu import ProfileRequest, find_ncu, run_profile
    from kernelscope.profiler.worker import REFERENCE_RANGE, TARGET_RANGE

    spec, parsed, dtype, overrides = _resolve(target, shape, dtype, config)
    ref = reference_name(spec, vs)
    require_gpu("profile")
    cfg = spec.config_for(parsed, dtype, overrides)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{spec.name}-vs-{ref or 'none'}")
    req = ProfileRequest(target=target, reference=ref or "", shape=parsed, dtype=dtype, config=cfg,
                         report_path=output or f"kernelscope-{safe}.ncu-rep",
                         section_set=sections if isinstance(sections, str) else list(sections),
                         clock_control=clock_control, cache_control=cache_control, seed=seed, arch=arch)
    done = run_profile(req, ncu=find_ncu())
    by_name = {p.name: p for p in _ranges_in_fresh_process(done.report_path)}
    target_profile, ref_profile = by_name.get(TARGET_RANGE), by_name.get(REFERENCE_RANGE)
    if target_profile is None or (ref and ref_profile is None):
        missing = "target" if target_profile is None else "reference"
        raise UserError(f"{done.report_path}: no launch of the {missing} was captured (report kept)", exit_code=3)
    result = ProfileResult(report_path=done.report_path, sidecar_path=done.sidecar_path, passes=list(done.passes),
                           wall_s=done.wall_s, target=target_profile, reference=ref_profile,
                           worker_status=dict(done.worker_status or {}))
    if ref_profile is not None:
        from kernelscope.api.reading import diff

        result.diff = diff(target_profile, ref_profile, rules=rules, disable=disable)
    return result


def _ranges_in_fresh_process(report_path: str):
    """The report's NVTX-range profiles, read in a child that has not loaded torch: Nsight
    Compute's report module and torch in one process crashed on the device (SIGSEGV)."""
    from kernelscope.profiler.record import KernelProfile
    from kernelscope.profiler.worker import NVTX_PREFIX

    cmd = [sys.executable, "-m", "kernelscope", "show", report_path, "--group-nvtx", NVTX_PREFIX, "--format", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    if r.returncode != 0:
        why = f"signal {-r.returncode}" if r.returncode < 0 else (r.stderr.strip().splitlines() or ["?"])[-1]
        raise UserError(f"reading {report_path} failed: {why} (report kept)", exit_code=3)
    return [KernelProfile.from_dict(k["profile"]) for k in json.loads(r.stdout)["kernels"]]

