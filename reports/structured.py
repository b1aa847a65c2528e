"""Machine-readable outputs: versioned JSON (documented in docs/json-format.md) and CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from kernelscope import __version__
from kernelscope.profiler.compare import Comparison, MetricReading, comparability_warnings
from kernelscope.profiler.names import short_name
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.sources import SHOW_SCHEMA, SHOW_SCHEMA_VERSION
from kernelscope.profiler.units import kernel_label

DIFF_SCHEMA = "kernelscope.diff"
DIFF_SCHEMA_VERSION = 1


def identity(p: KernelProfile) -> dict[str, Any]:
    return {
        "source": p.source,
        "index": p.index,
        "kind": p.kind,
        "name": p.name,
        "short_name": p.name if p.kind == "nvtx-range" else short_name(p.name, p.demangled_name),
        "demangled_name": p.demangled_name,
        "launches": p.launches,
        "grid": list(p.grid) if p.grid else None,
        "block": list(p.block) if p.block else None,
        "cluster": list(p.cluster) if p.cluster else None,
        "device": vars(p.device),
        "session": vars(p.session),
    }


def _reading(r: MetricReading) -> dict[str, Any]:
    d = r.definition
    return {"id": d.id, "label": d.label, "value": r.value, "unit": d.unit, "better": d.better, "definition": d.definition}


def show_document(
    source: str,
    entries: list[tuple[KernelProfile, dict[str, list[MetricReading]]]],
    view_titles: dict[str, str],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    kernels = []
    for profile, views in entries:
        kernels.append(
            {
                **identity(profile),
                "views": {v: {"title": view_titles[v], "metrics": [_reading(r) for r in rs]} for v, rs in views.items()},
                "profile": profile.to_dict(),
            }
        )
    doc = {
        "schema": SHOW_SCHEMA,
        "schema_version": SHOW_SCHEMA_VERSION,
        "kernelscope_version": __version__,
        "source": source,
        "kernels": kernels,
    }
    if extra:
        doc.update(extra)
    return doc


def diff_document(comparison: Comparison, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    views = {}
    for view, deltas in comparison.views.items():
        views[view] = {
            "title": comparison.view_titles[view],
            "metrics": [
                {
                    "id": d.definition.id,
                    "label": d.definition.label,
                    "unit": d.definition.unit,
                    "better": d.definition.better,
                    "a": d.a,
                    "b": d.b,
                    "change": d.change,
                    "relative": d.relative,
                    "better_side": d.better,
                }
                for d in deltas
            ],
        }
    doc = {
        "schema": DIFF_SCHEMA,
        "schema_version": DIFF_SCHEMA_VERSION,
        "kernelscope_version": __version__,
        "a": identity(comparison.a),
        "b": identity(comparison.b),
        "comparability": comparability_warnings(comparison.a, comparison.b),
        "views": views,
        "instruction_mix": [
            {
                "opcode": o.opcode,
                "count_a": o.count_a,
                "count_b": o.count_b,
                "share_a": o.share_a,
                "share_b": o.share_b,
                "share_change": o.share_change,
                "relative": o.relative,
            }
            for o in comparison.opcodes
        ],
    }
    if extra:
        doc.update(extra)
    return doc


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False, default=_json_default) + "\n"


def _json_default(o: Any) -> Any:
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def show_csv(entries: list[tuple[KernelProfile, dict[str, list[MetricReading]]]]) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["kernel_index", "kernel", "view", "metric_id", "label", "value", "unit"])
    for profile, views in entries:
        for view, rs in views.items():
            for r in rs:
                w.writerow([profile.index, kernel_label(profile), view, r.definition.id, r.definition.label, "" if r.value is None else r.value, r.definition.unit])
    return out.getvalue()


def diff_csv(comparison: Comparison) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["view", "metric_id", "label", "unit", "a", "b", "change", "relative", "better_side"])
    for view, deltas in comparison.views.items():
        for d in deltas:
            w.writerow([view, d.definition.id, d.definition.label, d.definition.unit,
                        "" if d.a is None else d.a, "" if d.b is None else d.b,
                        "" if d.change is None else d.change, "" if d.relative is None else d.relative, d.better or ""])
    return out.getvalue()
