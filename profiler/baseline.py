"""Suites and baselines: what the gate measures, and what it compares against.

A suite (TOML) lists cases: a target, an optional reference, shapes, configs, dtypes and
archs. Running it gives a baseline document (JSON, schema `kernelscope.baseline`) that
holds per case:

- `timing`: per-launch samples of the target and of the reference (median, IQR, n),
- `counters`: deterministic Nsight Compute counters per profiled kernel, when the suite
  asks for a profile (`ncu = true`),
- `static`: the compile-only facts per kernel (registers, spills, shared memory, SASS
  instruction counts), always,
- `correctness` of the target's output against the fp32 reference,

and, once per document, the environment the numbers were taken in. The same document
shape describes a fresh run, so the gate compares two documents of one kind.
Baselines are written atomically (temp file + rename) and replaced only when asked.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from kernelscope.errors import UserError
from kernelscope.profiler.gate import MetricRule

SCHEMA = "kernelscope.baseline"
SCHEMA_VERSION = 1

# Deterministic counters kept from an Nsight Compute profile (when collected): launch
# resources, executed instructions, bytes moved, local-memory (spill) traffic. Rates,
# percentages and durations are left out: one profiled launch is no timing sample.
COUNTER_METRICS = (
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__grid_size",
    "launch__block_size",
    "launch__cluster_size",
    "smsp__inst_executed.sum",
    "smsp__inst_executed_op_branch.sum",
    "smsp__sass_inst_executed_op_tma_ld.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "l1tex__m_xbar2l1tex_read_bytes.sum",
    "l1tex__m_l1tex2xbar_write_bytes.sum",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "derived__local_spilling_requests",
)

_SUITE_KEYS = {"name", "description", "static_only", "registry", "samples", "warmup_ms", "flush_l2",
               "ncu", "ncu_sections", "cache_control", "seed"}
_CASE_KEYS = {"name", "target", "reference", "shape", "shapes", "config", "configs", "dtype", "dtypes",
              "arch", "archs", "samples", "ncu", "seed"}


# ----------------------------------------------------------------------------- suites

@dataclass
class Case:
    """One measured unit: a target at one shape, config, dtype and arch."""

    id: str
    target: str
    reference: str | None
    shape: dict[str, int]             # empty: the target's first default shape
    config: dict[str, Any]            # overrides on the target's default config
    dtype: str | None                 # None: the target's first dtype
    arch: str
    samples: int
    ncu: bool
    seed: int


@dataclass
class Suite:
    path: str
    name: str
    description: str = ""
    static_only: bool = False
    registry: bool = False            # also every registered target x its archs, default config
    samples: int = 100
    warmup_ms: float = 25.0
    flush_l2: bool = True
    ncu: bool = False
    ncu_sections: str | list[str] = "quick"
    cache_control: str = "all"
    seed: int = 0
    cases: list[Case] = field(default_factory=list)
    rules: list[MetricRule] = field(default_factory=list)


def _as_list(entry: Mapping[str, Any], single: str, plural: str, where: str) -> list | None:
    if single in entry and plural in entry:
        raise UserError(f"{where}: give either {single} or {plural}, not both")
    if plural in entry:
        value = entry[plural]
        if not isinstance(value, list) or not value:
            raise UserError(f"{where}: {plural} must be a non-empty list")
        return list(value)
    if single in entry:
        return [entry[single]]
    return None


def _check_positive_int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UserError(f"{what} must be a positive integer, not {value!r}")
    return value


def _shape_text(shape: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def _config_text(config: Mapping[str, Any]) -> str:
    def fmt(v):
        return "x".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v).lower() if isinstance(v, bool) else str(v)
    return ",".join(f"{k}={fmt(v)}" for k, v in config.items()) or "default"


def _tuples(config: Mapping[str, Any]) -> dict[str, Any]:
    # TOML has arrays, kernels take tuples (cluster = [2, 1] -> (2, 1)).
    return {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}


def expand_case(entry: Mapping[str, Any], suite: Suite, where: str) -> list[Case]:
    unknown = sorted(set(entry) - _CASE_KEYS)
    if unknown:
        raise UserError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(_CASE_KEYS))})")
    target = entry.get("target")
    if not isinstance(target, str) or not target:
        raise UserError(f"{where}: `target` must name a registered kernel or path/to/file.py:NAME")
    name = entry.get("name", target)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.:+\-]+", name):
        raise UserError(f"{where}: name {name!r} may hold letters, digits and . _ - + : only")
    reference = entry.get("reference") or None
    shapes = _as_list(entry, "shape", "shapes", where) or [{}]
    configs = _as_list(entry, "config", "configs", where) or [{}]
    dtypes = _as_list(entry, "dtype", "dtypes", where) or [None]
    archs = _as_list(entry, "arch", "archs", where) or ["sm_90a"]
    for s in shapes:
        if not isinstance(s, dict) or any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in s.values()):
            raise UserError(f"{where}: each shape is a table of positive integers, e.g. {{M = 4096, N = 4096}}")
    for c in configs:
        if not isinstance(c, dict):
            raise UserError(f"{where}: each config is a table, e.g. {{threads = 256}}")
    samples = _check_positive_int(entry.get("samples", suite.samples), f"{where}: samples")
    seed = entry.get("seed", suite.seed)
    ncu = bool(entry.get("ncu", suite.ncu))
    cases = []
    for shape in shapes:
        for config in configs:
            for dtype in dtypes:
                for arch in archs:
                    parts = [name]
                    if len(shapes) > 1:
                        parts.append(_shape_text(shape))
                    if len(configs) > 1:
                        parts.append(_config_text(config))
                    if len(dtypes) > 1:
                        parts.append(str(dtype))
                    if len(archs) > 1:
                        parts.append(arch)
                    cases.append(Case(id="/".join(parts), target=target, reference=reference, shape=dict(shape),
                                      config=_tuples(config), dtype=dtype, arch=arch, samples=samples,
                                      ncu=ncu, seed=seed))
    return cases


def load_suite(path: str | os.PathLike) -> Suite:
    """Read and check a suite file; UserError (one line) for anything wrong in it."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such suite file") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML ({e})") from None
    unknown = sorted(set(data) - {"suite", "case", "rule"})
    if unknown:
        raise UserError(f"{path}: unknown table {', '.join(unknown)} (known: suite, case, rule)")
    head = data.get("suite") or {}
    bad = sorted(set(head) - _SUITE_KEYS)
    if bad:
        raise UserError(f"{path}: [suite] has unknown key {', '.join(bad)} (known: {', '.join(sorted(_SUITE_KEYS))})")
    suite = Suite(path=path, name=str(head.get("name", Path(path).stem)),
                  description=str(head.get("description", "")),
                  static_only=bool(head.get("static_only", False)),
                  registry=bool(head.get("registry", False)),
                  samples=_check_positive_int(head.get("samples", 100), f"{path}: [suite] samples"),
                  warmup_ms=float(head.get("warmup_ms", 25.0)),
                  flush_l2=bool(head.get("flush_l2", True)),
                  ncu=bool(head.get("ncu", False)),
                  ncu_sections=head.get("ncu_sections", "quick"),
                  cache_control=str(head.get("cache_control", "all")),
                  seed=int(head.get("seed", 0)))
    for i, entry in enumerate(data.get("case") or []):
        suite.cases += expand_case(entry, suite, f"{path}: case {i + 1}")
    for i, entry in enumerate(data.get("rule") or []):
        suite.rules.append(MetricRule.from_dict(entry, f"{path}: rule {i + 1}"))
    if suite.registry:
        suite.cases += registry_cases(suite, {c.target for c in suite.cases})
    ids = [c.id for c in suite.cases]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise UserError(f"{path}: case ids repeat ({', '.join(dupes)}): give the cases distinct names")
    if not suite.cases:
        raise UserError(f"{path}: the suite lists no cases")
    return suite


def registry_cases(suite: Suite, already: set[str]) -> list[Case]:
    """Every registered target not listed explicitly, once per arch it claims."""
    from kernelscope.kernels import registry

    cases = []
    for target in registry.names():
        if target in already:
            continue
        spec = registry.resolve(target)
        for arch in spec.archs:
            cases.append(Case(id=f"{target}/{arch}", target=target, reference=None, shape={}, config={},
                              dtype=None, arch=arch, samples=suite.samples, ncu=suite.ncu, seed=suite.seed))
    return cases


# ----------------------------------------------------------------------------- environment

def _command_output(cmd: list[str]) -> str | None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def git_state(folder: str | os.PathLike | None = None) -> dict[str, Any]:
    folder = str(folder or Path(__file__).resolve().parent.parent)
    commit = _command_output(["git", "-C", folder, "rev-parse", "HEAD"])
    status = _command_output(["git", "-C", folder, "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _tool_version(name: str) -> str | None:
    from kernelscope.toolchain.tools import find_cuda_tool

    try:
        tool = find_cuda_tool(name)
    except UserError:
        return None
    out = _command_output([tool, "--version"])
    lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
    return lines[-1] if lines else None


def _smi(field: str) -> str | None:
    """One nvidia-smi query field of the first GPU (None when unavailable)."""
    out = _command_output(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"])
    value = out.splitlines()[0].strip() if out else None
    return None if not value or value.startswith("[") or value == "N/A" else value


def _driver_version() -> str | None:
    return _smi("driver_version")


def capture_environment(*, gpu: bool, ncu: Mapping[str, Any] | None = None, flush_l2: bool | None = None,
                        git_folder: str | None = None) -> dict[str, Any]:
    """Facts that decide whether two runs are comparable. Unknown facts are None, never guessed."""
    from kernelscope.profiler.static import ANALYSIS_VERSION
    from kernelscope.toolchain.tools import package_version

    env: dict[str, Any] = {
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node() or None,
        "python": platform.python_version(),
        "kernelscope": _kernelscope_version(),
        "nvidia-cutlass-dsl": package_version("nvidia-cutlass-dsl"),
        "cuobjdump": _tool_version("cuobjdump"),
        "static": {"analysis": ANALYSIS_VERSION},
        "git": git_state(git_folder),
    }
    if gpu:
        import torch

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        env["gpu"] = {"name": props.name, "sm_count": props.multi_processor_count,
                      "compute_capability": f"{props.major}.{props.minor}",
                      "memory_bytes": int(props.total_memory),
                      "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None}
        env["driver"] = _driver_version()
        env["cuda"] = torch.version.cuda
        env["torch"] = torch.__version__
        # Timing never locks clocks: the GPU runs at whatever clocks its driver picks.
        # The settings that bound the clocks and power the driver may choose (not the
        # momentary clocks, which move with every launch).
        env["timing"] = {"clock_control": "none", "flush_l2": flush_l2, "method": "cuda-events",
                         "application_clocks_mhz": _join(_smi("clocks.applications.graphics"),
                                                         _smi("clocks.applications.memory")),
                         "power_limit": _smi("power.limit")}
    if ncu is not None:
        env["ncu"] = dict(ncu)
    return env


def _join(*parts: str | None) -> str | None:
    return None if any(p is None for p in parts) else "/".join(parts)


def _kernelscope_version() -> str:
    from kernelscope import __version__

    return __version__


# ----------------------------------------------------------------------------- running

def _kernel_entry(profile) -> dict[str, Any]:
    return {"index": profile.index, "name": profile.name,
            "metrics": {k: {"value": m.value, "unit": m.unit} for k, m in profile.metrics.items()},
            "instruction_mix": dict(profile.instruction_mix)}


def counter_entry(profile) -> dict[str, Any]:
    """The deterministic counters of one profiled kernel (those the report holds)."""
    metrics = {k: {"value": profile.metrics[k].value, "unit": profile.metrics[k].unit}
               for k in COUNTER_METRICS if k in profile.metrics}
    return {"index": profile.index, "name": profile.name, "metrics": metrics,
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
    from kernelscope.profiler.timing import time_callable

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
    common = dict(warmup_ms=suite.warmup_ms, iters=case.samples, flush_l2=suite.flush_l2)
    timing["target"] = time_callable(target_fn, **common).to_dict()
    if case.reference:
        ref_fn = references.bind(case.reference, spec, inputs)
        timing["reference"] = time_callable(ref_fn, **common).to_dict()
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
    if keep_dir is None:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    return {"version": version_number(ncu_version(ncu)), "clock_control": "none",
            "cache_control": suite.cache_control, "sections": suite.ncu_sections}


def version_number(text: str | None) -> str | None:
    """'Version 2025.3.1.0 (build 36398880)' and '2025.3.1.0 (build ...)' -> '2025.3.1.0'."""
    if not text:
        return None
    m = re.search(r"\d+(?:\.\d+)+", text)
    return m.group(0) if m else text


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
            if gpu:
                _measure_case(case, suite, record)
                if case.ncu:
                    ncu_facts = _profile_case(case, suite, record, keep_reports)
        except UserError as e:
            raise UserError(f"case {case.id}: {e}", e.exit_code) from e
        cases.append(record)
    env = capture_environment(gpu=gpu, ncu=ncu_facts, flush_l2=suite.flush_l2 if gpu else None)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": "static" if not gpu else "gpu",
        "suite": {"path": suite.path, "name": suite.name, "static_only": not gpu,
                  "samples": suite.samples if gpu else None},
        "environment": env,
        "cases": cases,
    }


# ----------------------------------------------------------------------------- reports

def document_from_report(path: str | os.PathLike) -> dict[str, Any]:
    """A baseline-shaped document from an ncu report: one case per kernel launch (or NVTX
    range), named `kernel:<name>` and `kernel:<name>#<n>` for repeats, counters only."""
    from kernelscope.profiler.sources import load_profiles

    profiles = load_profiles(path)
    if not profiles:
        raise UserError(f"{path}: the report holds no kernel")
    seen: dict[str, int] = {}
    cases = []
    for p in profiles:
        n = seen.get(p.name, 0) + 1
        seen[p.name] = n
        cid = f"kernel:{p.name}" + (f"#{n}" if n > 1 else "")
        cases.append({"id": cid, "target": p.name, "reference": None, "shape": {}, "config": {},
                      "dtype": None, "arch": None, "counters": [counter_entry(p)],
                      "nvtx_ranges": list(p.nvtx_ranges)})
    first = profiles[0]
    env = {
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": {"name": first.device.name, "sm_count": first.device.sm_count,
                "compute_capability": first.device.compute_capability},
        "ncu": {"version": version_number(first.session.tool_version), "clock_control": first.session.clock_control,
                "cache_control": first.session.cache_control},
        "report": str(path),
    }
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "kind": "report",
            "suite": {"path": str(path), "name": Path(path).name, "static_only": False, "samples": None},
            "environment": env, "cases": cases}


def align_report_to_baseline(report_doc: dict[str, Any], baseline: Mapping[str, Any]) -> dict[str, Any]:
    """Give report kernels the ids of the baseline cases they belong to.

    A baseline saved from a report already uses `kernel:<name>` ids. A suite baseline's case
    with ncu counters matches when the report holds its kernels (by name, in order).
    """
    by_name: dict[str, list[dict[str, Any]]] = {}
    for case in report_doc["cases"]:
        by_name.setdefault(case["target"], []).append(case)
    base_ids = {c["id"] for c in baseline.get("cases", [])}
    aligned = [c for c in report_doc["cases"] if c["id"] in base_ids]
    for bcase in baseline.get("cases", []):
        if bcase["id"].startswith("kernel:"):
            continue
        names = [k.get("name") for k in (bcase.get("counters") or [])]
        if not names or not all(by_name.get(n) for n in names):
            continue
        counters = [by_name[n][0]["counters"][0] for n in names]
        aligned.append({**{k: bcase.get(k) for k in ("target", "reference", "shape", "config", "dtype", "arch")},
                        "id": bcase["id"], "counters": counters})
    return {**report_doc, "cases": aligned}


# ----------------------------------------------------------------------------- files

def save_baseline(doc: Mapping[str, Any], path: str | os.PathLike, *, force: bool = False) -> Path:
    """Write atomically: a temp file beside the target, then a rename. An existing file is
    replaced only with force; on any failure the old file is left as it was."""
    path = Path(path)
    if path.exists() and not force:
        raise UserError(f"{path} exists: pass --force to replace it")
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False, default=_json_default)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file private; a baseline is as readable as any file the user writes.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise UserError(f"cannot write {path}: {e.strerror or e}") from None
        raise
    return path


def _json_default(obj: Any) -> Any:
    if isinstance(obj, tuple):
        return list(obj)
    if isinstance(obj, float) and obj != obj:
        return None
    return repr(obj)


def load_baseline(path: str | os.PathLike) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such baseline file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not a readable JSON baseline ({e})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UserError(f"{path}: not a kernelscope baseline (expected schema {SCHEMA!r}, "
                        "written by `kernelscope baseline save`)")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise UserError(f"{path}: baseline schema version {data.get('schema_version')} is not supported "
                        f"(this kernelscope reads {SCHEMA_VERSION})")
    cases = data.get("cases")
    if not isinstance(cases, list) or any(not isinstance(c, dict) or "id" not in c for c in cases):
        raise UserError(f"{path}: malformed baseline (cases must be a list of objects with an id)")
    return data
