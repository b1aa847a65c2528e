"""Nsight Compute's own rule results, read from a report's launch (ncu_report's action)."""

from __future__ import annotations

import math
from typing import Any

from kernelscope.profiler.record import NcuRuleResult

# ncu_report's MsgType and SpeedupType values (ncu_report.MsgType_*, SpeedupType_*).
_MESSAGE_KINDS = {0: "none", 1: "ok", 2: "optimization", 3: "warning", 4: "error"}
_SPEEDUP_KINDS = {1: "local", 2: "global"}


def ncu_rule_results(action: Any) -> list[NcuRuleResult]:
    """Nsight Compute's own rule results stored with the launch, in report order.

    Messages that only say a rule could not run (an optional metric missing) are kept
    with kind "warning" like ncu shows them; readers filter on `advice` and `speedup`.
    """
    getter = getattr(action, "rule_results_as_dicts", None)
    if getter is None:
        return []
    try:
        raw = getter()
    except Exception:  # an older report format without rule results: nothing to read
        return []
    results = []
    for entry in raw or []:
        message = entry.get("rule_message") or {}
        estimate = entry.get("speedup_estimation") or {}
        speedup = estimate.get("speedup")
        results.append(
            NcuRuleResult(
                rule=str(entry.get("rule_identifier") or ""),
                section=str(entry.get("section_identifier") or ""),
                name=str(entry.get("name") or ""),
                title=str(message.get("title") or ""),
                message=str(message.get("message") or ""),
                kind=_MESSAGE_KINDS.get(int(message.get("type", 0) or 0), "none"),
                speedup=float(speedup) if isinstance(speedup, (int, float)) and math.isfinite(speedup) else None,
                speedup_kind=_SPEEDUP_KINDS.get(int(estimate.get("type", 0) or 0)),
                focus_metrics=[
                    {"name": str(f.get("name", "")), "value": f.get("value"), "info": str(f.get("info", ""))}
                    for f in entry.get("focus_metrics") or []
                    if isinstance(f.get("value"), (int, float)) and math.isfinite(f.get("value"))
                ],
            )
        )
    return results
