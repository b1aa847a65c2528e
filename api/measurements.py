"""Typed results of measuring and gating: runs, profiles under ncu, sweeps, baselines, gate verdicts.

Conversions as in `kernelscope.api.results`: `to_dict()` is the CLI's document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernelscope.api.results import Diff, Profiles, Result

if TYPE_CHECKING:
    from kernelscope.profiler.record import KernelProfile


# ----------------------------------------------------------------------------- measuring

class Run(Result):
    """Correctness and timing of a target and its reference at one shape (`kernelscope run`).

    `to_dict()` is one entry of `run --json`; `to_dataframe()` has one row per side (name,
    median_ms, iqr_ms, n, tflops, gbps, pct_of_peak, correct, max_abs_error).
    """

    def __init__(self, result):
        self.result = result

    @property
    def correct(self) -> bool | None:
        c = self.result.target_side.correctness
        return None if c is None else bool(c.ok)

    @property
    def speedup_vs_reference(self) -> float | None:
        return self.result.speedup_vs_reference

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str) + "\n"

    def _rows(self) -> list[dict[str, Any]]:
        rows = []
        for side in (self.result.target_side, self.result.reference_side):
            if side is None:
                continue
            t, c = side.timing, side.correctness
            rows.append({"name": side.name, "median_ms": t.median_ms if t else None, "iqr_ms": t.iqr_ms if t else None,
                         "n": t.n if t else None, "tflops": side.tflops, "gbps": side.gbps,
                         "pct_of_peak": side.pct_of_peak, "correct": None if c is None else c.ok,
                         "max_abs_error": None if c is None else c.max_abs_error})
        return rows


@dataclass
class ProfileResult(Result):
    """One launch of a target and one of its reference under Nsight Compute (`kernelscope profile`).

    `diff` is the comparison with findings (None without a reference); `to_dict()` is that
    diff document (or the show document of the target alone) plus `report`: path, sidecar,
    replay passes and wall time.
    """

    report_path: str
    sidecar_path: str
    passes: list
    wall_s: float
    target: KernelProfile
    reference: KernelProfile | None
    diff: Diff | None = None
    worker_status: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        base = self.diff.to_dict() if self.diff is not None else Profiles([self.target], self.report_path).to_dict()
        base["report"] = {"path": self.report_path, "sidecar": self.sidecar_path, "wall_s": self.wall_s,
                          "replay_passes": [[str(k), p] for k, p in self.passes]}
        return base

    def _rows(self) -> list[dict[str, Any]]:
        return self.diff._rows() if self.diff is not None else Profiles([self.target], self.report_path)._rows()

    def _page(self):
        return self.diff._page() if self.diff is not None else Profiles([self.target], self.report_path)._page()


class Sweep(Result):
    """Every config of a target timed against its reference (`kernelscope sweep`).

    `to_dict()` is the `kernelscope.sweep` document (`sweep --json`), rows fastest first;
    `to_dataframe()` has one row per config: its keys, status, median_ms, iqr_ms,
    speed_vs_reference_pct, message.
    """

    def __init__(self, document: dict[str, Any], result=None):
        self.document = document
        self.result = result

    def __repr__(self) -> str:
        ok = sum(1 for r in self.document.get("rows") or [] if r.get("status") == "ok")
        return f"Sweep({self.document.get('target')}: {len(self.document.get('rows') or [])} configs, {ok} ok)"

    def to_dict(self) -> dict[str, Any]:
        return self.document

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.document, indent=indent, default=str) + "\n"

    def _rows(self) -> list[dict[str, Any]]:
        rows = []
        for r in self.document.get("rows") or []:
            t = r.get("timing") or {}
            rows.append({**(r.get("config") or {}), "status": r.get("status"), "median_ms": t.get("median_ms"),
                         "iqr_ms": t.get("iqr_ms"), "speed_vs_reference_pct": r.get("speed_vs_reference_pct"),
                         "message": r.get("message") or ""})
        return rows

    def _page(self):
        from kernelscope.reports import html_pages

        return html_pages.sweep_page(self.document)


# ----------------------------------------------------------------------------- gate

class Baseline(Result):
    """A baseline document (`kernelscope.baseline`): per case timings, counters, static facts."""

    def __init__(self, document: dict[str, Any]):
        self.document = document

    def __repr__(self) -> str:
        return f"Baseline({self.document.get('kind')}, {len(self.document.get('cases') or [])} cases)"

    def to_dict(self) -> dict[str, Any]:
        return self.document

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.document, indent=indent, default=repr) + "\n"

    def save(self, path: str, *, force: bool = False) -> str:
        """Write atomically; an existing file is replaced only with force."""
        from kernelscope.gate.baseline import save_baseline

        return str(save_baseline(self.document, path, force=force))


class Gate(Result):
    """Verdicts of a run (or a report) against a baseline (`kernelscope gate`).

    `verdict` is PASS, REGRESSION, IMPROVEMENT or INCONCLUSIVE and `exit_code` what the CLI
    exits with; `to_dict()` is the `kernelscope.gate` document (`gate --json`);
    `to_dataframe()` has one row per case and metric.
    """

    def __init__(self, result, *, baseline_path: str | None, source: str | None, mode: str = "suite",
                 current: Baseline | None = None):
        self.result = result
        self.baseline_path = baseline_path
        self.source = source
        self.mode = mode
        self.current = current

    @property
    def verdict(self) -> str:
        return self.result.verdict

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    def __repr__(self) -> str:
        return f"Gate({self.verdict}, {len(self.result.cases)} cases)"

    def to_dict(self) -> dict[str, Any]:
        from kernelscope.reports.gate_output import gate_document

        return gate_document(self.result, baseline_path=self.baseline_path, source=self.source)

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str) + "\n"

    def _rows(self) -> list[dict[str, Any]]:
        return [m.to_dict() for m in self.result.metrics]

    def _page(self):
        from kernelscope.reports import html_pages

        return html_pages.gate_page(self.to_dict())
