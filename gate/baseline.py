"""Baseline documents: what the gate compares against, read, written and made from reports.

Running a suite (kernelscope.gate.suite, kernelscope.gate.runner) gives a baseline
document (JSON, schema `kernelscope.baseline`) that holds per case:

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
import tempfile
from pathlib import Path
from typing import Any, Mapping

from kernelscope.errors import UserError
from kernelscope.gate.environment import version_number
from kernelscope.profiler.documents import read_json

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


def counter_entry(profile) -> dict[str, Any]:
    """The deterministic counters of one profiled kernel (those the report holds)."""
    metrics = {k: {"value": profile.metrics[k].value, "unit": profile.metrics[k].unit}
               for k in COUNTER_METRICS if k in profile.metrics}
    return {"index": profile.index, "name": profile.name, "metrics": metrics,
            "instruction_mix": dict(profile.instruction_mix)}


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
        raise UserError(f"{path} exists: pass -f/--force to replace it")
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
        if force:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)      # fails if another command wrote the file meanwhile
            os.unlink(tmp)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, FileExistsError):
            raise UserError(f"{path} exists: pass -f/--force to replace it") from None
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
    data = read_json(path, "baseline file", "a readable JSON baseline")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UserError(f"{path}: not a kernelscope baseline (expected schema {SCHEMA!r}, "
                        "written by `kernelscope baseline save`)")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise UserError(f"{path}: baseline schema_version {data.get('schema_version')!r} is not supported "
                        f"(this kernelscope reads the number {SCHEMA_VERSION})")
    cases = data.get("cases")
    if not isinstance(cases, list) or any(not isinstance(c, dict) or "id" not in c for c in cases):
        raise UserError(f"{path}: malformed baseline (cases must be a list of objects with an id)")
    return data
