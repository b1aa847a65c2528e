"""The terminal table of a merged sweep (`kernelscope.sweep`): fastest first, with the shape
when the sweep covers several, the device each row came from when there were several, and a
warning when rows come from different GPU models."""

from __future__ import annotations

import json

from kernelscope.profiler.assignments import format_config
from kernelscope.reports.profile_view import KEY_METRICS


def _fmt(v, spec: str = ".3f", unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{spec}}{unit}"


def row_labels(rows: list[dict]) -> list[dict]:
    """What tells rows apart: the config, and the shape too when the rows have several."""
    several = len({json.dumps(r.get("shape"), sort_keys=True) for r in rows}) > 1
    return [{**(r.get("shape") or {}), **(r.get("config") or {})} if several else dict(r.get("config") or {})
            for r in rows]


def device_index(row: dict, devices: list[dict]) -> str:
    """`N: name` of the device a row came from, N its place in the document's `devices`."""
    device = row.get("device") or {}
    for n, d in enumerate(devices):
        if d.get("uuid") == device.get("uuid"):
            return f"{n}: {d.get('name')}"
    return str(device.get("name") or "")


def device_notes(doc: dict) -> list[str]:
    """Which devices the rows came from (when several) and, across GPU models, the warning."""
    devices = doc.get("devices") or []
    notes = []
    if len(devices) > 1:
        notes.append("Rows come from " + "; ".join(
            f"device {n}: {d.get('name')} {d.get('uuid')} on {d.get('host')} (driver {d.get('driver')}), "
            f"{d.get('rows')} rows" for n, d in enumerate(devices)) + ".")
    if doc.get("mixed_device_models"):
        notes.append("The rows come from different GPU models: each percentage is against the reference timed on "
                     "the same GPU; times of different models are not comparable with each other.")
    return notes


def print_sweep(console, doc: dict, keys: list[str], with_profile: bool) -> None:
    from rich.table import Table

    ref = doc.get("reference") or None
    devices = doc.get("devices") or []
    several_shapes = len({json.dumps(r.get("shape"), sort_keys=True) for r in doc["rows"]}) > 1
    table = Table(title=f"{doc['target']} sweep (fastest first; speed vs {ref or 'n/a'}: reference time / config "
                        "time on the same device)", title_justify="left", show_edge=False)
    if several_shapes:
        table.add_column("shape")
    for k in keys:
        table.add_column(k)
    for col in ("status", "median ms", "IQR ms", "speed vs ref"):
        table.add_column(col, justify="right")
    if len(devices) > 1:
        table.add_column("device")
    if with_profile:
        for _, label in KEY_METRICS:
            table.add_column(label, justify="right")
    table.add_column("note")
    for row in doc["rows"]:
        t = row.get("timing") or {}
        cells = [",".join(f"{k}={v}" for k, v in row["shape"].items())] if several_shapes else []
        cells += [format_config({k: row["config"].get(k)}).split("=", 1)[1] for k in keys]
        cells += [row["status"], _fmt(t.get("median_ms"), ".4f"), _fmt(t.get("iqr_ms"), ".4f"),
                  _fmt(row.get("speed_vs_reference_pct"), ".1f", "%")]
        if len(devices) > 1:
            cells.append(device_index(row, devices))
        metrics = row.get("metrics") or {}
        if with_profile:
            cells += [("n/a" if metrics.get(key) is None else f"{metrics[key]:.4g}"
                       if isinstance(metrics.get(key), (int, float)) else str(metrics.get(key)))
                      for key, _ in KEY_METRICS]
        note = row.get("message") or str(metrics.get("error", ""))
        if row.get("retries") and row["status"] != "failed":
            note = (note + "; " if note else "") + f"retried after: {row['retries'][0]}"
        cells.append(note)
        table.add_row(*cells)
    console.print(table)
    for note in device_notes(doc):
        console.print(f"  {note}", style="yellow" if "different GPU models" in note else "dim")
    if not doc.get("mixed_device_models") and doc.get("reference_timing"):
        console.print(f"  reference {ref}: median {doc['reference_timing']['median_ms']:.4f} ms", style="dim")
