"""What code a case ran: digests of its SASS and cubin resources, and the work one call launches.

A baseline records, per case, a SHA-256 of each kernel's SASS listing and of its cubin
resources (registers, shared memory, barriers, stack, launch shape), and the GPU work one
call of the timed callable launched (from the launch probe: kernels, copies, memsets in
order). Two runs ran the same code when all of these are equal; a timing that moved
between them moved because the environment did (clocks, temperature, neighbours), never
because of the code. When they differ, `compare` names what changed: opcode counts,
registers, shared memory, launched work.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

# Cubin resources of a kernel that shape its execution (static metrics of the inspection).
RESOURCE_METRICS = (
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__barrier_count",
    "launch__block_size",
    "launch__grid_size",
    "launch__cluster_size",
    "static__stack_frame_bytes",
    "static__local_memory_bytes",
)
_SHORT = {"launch__registers_per_thread": "registers", "launch__shared_mem_per_block_static": "static shared memory",
          "launch__shared_mem_per_block_dynamic": "dynamic shared memory", "launch__barrier_count": "barriers",
          "launch__block_size": "block size", "launch__grid_size": "grid size", "launch__cluster_size": "cluster size",
          "static__stack_frame_bytes": "stack bytes", "static__local_memory_bytes": "local memory bytes"}


def sha256(obj: Any) -> str:
    data = obj if isinstance(obj, bytes) else json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()


def kernel_identity(name: str, sass: str, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Digests of one kernel: its SASS text byte for byte, and its resources."""
    resources = {}
    for key in RESOURCE_METRICS:
        m = metrics.get(key)
        value = getattr(m, "value", m)
        if value is not None:
            resources[key] = value
    return {"name": name, "sass_sha256": sha256(sass.encode()), "resources": resources,
            "resources_sha256": sha256(resources)}


def case_identity(inspection) -> dict[str, Any]:
    """`code` of a baseline case from a static inspection (launches are added after timing)."""
    kernels = [kernel_identity(k.profile.name, k.sass, k.profile.metrics) for k in inspection.kernels]
    return {"kernels": kernels, "cubin_sha256": sha256(bytes(inspection.cubin)), "launches": None}


@dataclass
class CodeComparison:
    same: bool | None                   # None: not enough recorded to tell
    changes: list[str] = field(default_factory=list)
    note: str = ""

    def summary(self) -> str:
        if self.same is None:
            return self.note
        if self.same:
            return "same code: SASS, cubin resources and launched work identical"
        return "code changed: " + "; ".join(self.changes)


def _static_mix(case: Mapping[str, Any], index: int) -> dict[str, float]:
    entries = case.get("static") or []
    return dict((entries[index].get("instruction_mix") or {})) if index < len(entries) else {}


def _opcode_changes(base_mix: Mapping[str, float], cur_mix: Mapping[str, float], top: int = 6) -> str:
    deltas = [(op, base_mix.get(op, 0), cur_mix.get(op, 0)) for op in set(base_mix) | set(cur_mix)]
    deltas = [d for d in deltas if d[1] != d[2]]
    deltas.sort(key=lambda d: (-abs(d[2] - d[1]), d[0]))
    shown = ", ".join(f"{op} {b:g}->{c:g}" for op, b, c in deltas[:top])
    more = f", +{len(deltas) - top} more opcodes" if len(deltas) > top else ""
    return f"opcodes {shown}{more}" if deltas else "same opcode counts, different instructions or order"


def compare(base_case: Mapping[str, Any], cur_case: Mapping[str, Any]) -> CodeComparison:
    """Same code or not, and what changed (names opcode counts, registers, shared memory)."""
    b, c = base_case.get("code"), cur_case.get("code")
    if not b or not c:
        return CodeComparison(None, note="code identity not recorded on both sides (baseline saved before it was)")
    changes: list[str] = []
    for key in ("shape", "config", "dtype", "arch"):
        if base_case.get(key) != cur_case.get(key):
            changes.append(f"{key} {base_case.get(key)!r} -> {cur_case.get(key)!r}")
    bk, ck = b.get("kernels") or [], c.get("kernels") or []
    if [k["name"] for k in bk] != [k["name"] for k in ck]:
        changes.append(f"kernels {[k['name'] for k in bk]} -> {[k['name'] for k in ck]}")
    for i, (kb, kc) in enumerate(zip(bk, ck)):
        label = kc["name"] if len(ck) == 1 else f"kernel {i} ({kc['name']})"
        if kb["sass_sha256"] != kc["sass_sha256"]:
            changes.append(f"{label}: SASS differs ({_opcode_changes(_static_mix(base_case, i), _static_mix(cur_case, i))})")
        rb, rc = kb.get("resources") or {}, kc.get("resources") or {}
        for key in RESOURCE_METRICS:
            if rb.get(key) != rc.get(key):
                changes.append(f"{label}: {_SHORT[key]} {rb.get(key)} -> {rc.get(key)}")
    lb, lc = b.get("launches"), c.get("launches")
    if lb is not None and lc is not None and lb != lc:
        extra = [n for n in lc if n not in lb]
        gone = [n for n in lb if n not in lc]
        what = "; ".join(p for p in (f"now also {', '.join(extra)}" if extra else "",
                                     f"no longer {', '.join(gone)}" if gone else "") if p) or "order or count"
        changes.append(f"launched work per call differs ({len(lb)} -> {len(lc)} items: {what})")
    if changes:
        return CodeComparison(False, changes)
    if lb is None or lc is None:
        return CodeComparison(None, note="SASS and resources identical; launched work not recorded on both sides, "
                                         "so host-side changes cannot be ruled out")
    return CodeComparison(True)


def apply_to_timings(base_case: Mapping[str, Any], cur_case: Mapping[str, Any], verdicts: list) -> str | None:
    """Fold the code comparison into the case's timing verdicts (objects with family, metric,
    verdict, reason); returns the comparison's summary (None when nothing is recorded).

    Same code: a timing that moved is the environment's doing, never a REGRESSION (nor an
    IMPROVEMENT): it becomes a PASS that says so. Different code: what changed is named
    next to the timing verdict.
    """
    if not base_case.get("code") and not cur_case.get("code"):
        return None
    comparison = compare(base_case, cur_case)
    for v in verdicts:
        if v.family != "timing":
            continue
        if comparison.same and v.verdict in ("REGRESSION", "IMPROVEMENT"):
            v.reason = f"same code, the environment moved (would be {v.verdict}: {v.reason})"
            v.verdict = "PASS"
        elif comparison.same:
            v.reason = f"{v.reason}; same code"
        elif comparison.same is False and v.metric == "target":
            v.reason = f"{v.reason}; {comparison.summary()}"
    return comparison.summary()
