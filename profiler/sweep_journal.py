"""The sweep journal: an append-only JSON Lines file that every finished point is written to.

Line 1 is the header (what is swept: target, reference, shape, dtype, arch, seed, timing
budget); every further line is one attempt at one point. A point is finished when it has a
final line whose status is not "failed"; `--resume` skips those and tries the rest again.
Lines are flushed and fsynced one by one, so a crash, a lost node or Ctrl-C loses at most the
points still running. A torn last line (the process died while writing it) is ignored.

The merged document is the `kernelscope.sweep` JSON that `report` and `gate` read.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from typing import Any, Iterable

from kernelscope.errors import UserError

HEADER_KIND = "kernelscope.sweep-journal"
POINT_KIND = "point"
FINISHED_STATUSES = ("ok", "invalid", "wrong", "suspect")


def point_key(config: dict[str, Any]) -> str:
    """A config's identity, independent of key order and of tuple/list spelling."""
    return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}, sort_keys=True)


class Journal:
    def __init__(self, path: str, header: dict[str, Any], records: list[dict[str, Any]]):
        self._header_written = True
        self.path = path
        self.header = header
        self.records = records

    @classmethod
    def start(cls, path: str, header: dict[str, Any], *, resume: bool) -> "Journal":
        """A new journal, or (resume) the existing one after checking it sweeps the same thing."""
        header = dict(header, kind=HEADER_KIND)
        if resume:
            if not os.path.isfile(path):
                raise UserError(f"--resume {path}: no such journal")
            old_header, records = read(path)
            differs = [k for k in header if k != "kind" and old_header.get(k) != header[k]]
            if differs:
                k = differs[0]
                raise UserError(f"--resume {path}: the journal sweeps {k}={old_header.get(k)!r}, "
                                f"this command {k}={header[k]!r}")
            return cls(path, old_header, records)
        if os.path.exists(path):
            raise UserError(f"{path} exists: pass --resume {path} to continue that sweep, or remove it")
        journal = cls(path, header, [])
        journal._header_written = False      # written with the first point: a sweep that never ran leaves no file
        return journal

    def finished(self) -> dict[str, dict[str, Any]]:
        """point key -> its final record, for points that need no further attempt."""
        done = {}
        for rec in self.records:
            if rec.get("final") and rec.get("status") in FINISHED_STATUSES:
                done[rec["key"]] = rec
        return done

    def add(self, record: dict[str, Any]) -> None:
        record = dict(record, kind=POINT_KIND)
        # A Ctrl-C between writing the line and keeping the record would leave a point in the file
        # that the merged document lacks: the signal waits until both are done.
        with _ctrl_c_deferred():
            if not self._header_written:
                if os.path.exists(self.path):
                    raise UserError(f"{self.path} appeared while the sweep ran: not appending to another sweep's journal")
                self._append(self.header)
                self._header_written = True
            self._append(record)
            self.records.append(record)

    def _append(self, obj: dict[str, Any]) -> None:
        try:
            folder = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(folder, exist_ok=True)
            with open(self.path, "a") as f:
                f.write(json.dumps(obj, default=_plain, sort_keys=True) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise UserError(f"cannot append to the sweep journal {self.path}: {e.strerror or e}") from None


@contextlib.contextmanager
def _ctrl_c_deferred():
    """A Ctrl-C during the block is held and handed to the previous handler after it.

    A handler swap, not a signal mask: the kernel delivers a process-directed SIGINT to any
    thread that does not block it (Dask's client has several), and Python runs the handler on
    the main thread at once. Handlers can only be set from the main thread; elsewhere the block
    runs as it is (the sweep writes its journal from the main thread)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield                      # None: a handler set outside Python, which could not be put back
        return
    held = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held and callable(previous):
        previous(signal.SIGINT, held[-1])


def _plain(obj: Any) -> Any:
    if isinstance(obj, tuple):
        return list(obj)
    return str(obj)


def read(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, point records) of a journal; a torn last line is skipped."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UserError(f"cannot read the sweep journal {path}: {e.strerror or e}") from None
    parsed = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            parsed.append(json.loads(line))
        except ValueError:
            if n == len(lines):
                break           # written while the process died: that attempt did not finish
            raise UserError(f"{path}:{n}: not a JSON line; the journal is damaged") from None
    if not parsed or parsed[0].get("kind") != HEADER_KIND:
        raise UserError(f"{path}: not a kernelscope sweep journal (no header line)")
    return parsed[0], [r for r in parsed[1:] if r.get("kind") == POINT_KIND]


def merge(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The `kernelscope.sweep` document of a journal: per point its last final attempt (or, for
    a point still unfinished, its last attempt), earlier failed attempts listed under `retries`.

    Rows keep the project's order: timed rows fastest first, then the rest by point index.
    Each row's speed is against the reference timed in the same process on the same device; the
    document's `reference_timing` is given only when every row comes from one device model.
    """
    from kernelscope.profiler.measure import SWEEP_SCHEMA, SWEEP_SCHEMA_VERSION

    by_key: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        by_key.setdefault(rec["key"], []).append(rec)
    rows = []
    for attempts in by_key.values():
        finals = [a for a in attempts if a.get("final")]
        last = (finals or attempts)[-1]
        row = {k: last.get(k) for k in ("index", "shape", "config", "status", "message", "timing", "correctness",
                                        "metrics", "reference_timing", "device")}
        row["metrics"] = row["metrics"] or {}
        row["retries"] = [a.get("message") for a in attempts if a is not last and a.get("status") == "failed"]
        row["speed_vs_reference_pct"] = _speed(row)
        rows.append(row)
    # Only rows whose timing passed every check are ranked; a suspect row keeps its timing, unranked.
    ranked = sorted((r for r in rows if _ranked(r)), key=lambda r: (r["timing"]["median_ms"], r["index"]))
    rows = ranked + sorted((r for r in rows if not _ranked(r)), key=lambda r: r["index"])
    devices = device_summary(rows)
    models = {d["name"] for d in devices}
    ref_timing = None
    if len(models) <= 1:
        ref_timing = next((r["reference_timing"] for r in sorted(rows, key=lambda r: r["index"])
                           if r.get("reference_timing")), None)
    return {"schema": SWEEP_SCHEMA, "schema_version": SWEEP_SCHEMA_VERSION,
            "target": header.get("target"), "reference": header.get("reference") or "",
            "shape": header.get("shape"), "shapes": header.get("shapes"), "dtype": header.get("dtype"),
            "arch": header.get("arch"),
            "reference_timing": ref_timing, "devices": devices,
            "mixed_device_models": len(models) > 1, "rows": rows}


def _ranked(row: dict[str, Any]) -> bool:
    return row.get("status") == "ok" and bool(row.get("timing"))


def _speed(row: dict[str, Any]) -> float | None:
    t, r = row.get("timing"), row.get("reference_timing")
    if not _ranked(row) or not t or not r or t.get("median_ms", 0) <= 0:
        return None
    return 100.0 * r["median_ms"] / t["median_ms"]


def device_summary(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per device (by UUID) that produced rows: its facts and how many rows."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        d = r.get("device") or None
        if not d:
            continue
        ident = d.get("uuid") or f"{d.get('host')}:{d.get('name')}"
        entry = out.setdefault(ident, {"uuid": d.get("uuid"), "name": d.get("name"), "host": d.get("host"),
                                       "driver": d.get("driver"), "rows": 0})
        entry["rows"] += 1
    return sorted(out.values(), key=lambda e: (str(e["host"]), str(e["uuid"])))
