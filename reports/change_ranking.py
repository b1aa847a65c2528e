"""Which metric changes of a comparison the page plots: ranked by what they can matter for the
time, so large ratios of tiny counts do not crowd out the changes that count."""

from __future__ import annotations

import math
from typing import Any

from kernelscope.reports import plots
from kernelscope.reports.html import is_number

TOP_CHANGES = 15          # bars in the "largest metric changes" plot
SAME_WITHIN = 0.005       # relative changes below this are not "changes"


def largest_changes(views: dict[str, Any]) -> tuple[list[plots.ChangeRow], list[str]]:
    seen: set[str] = set()
    rows: list[tuple[float, plots.ChangeRow]] = []
    one_sided: list[str] = []
    for view in views.values():
        size = _sizes(view.get("metrics", []))
        for m in view.get("metrics", []):
            if m["id"] in seen:
                continue
            seen.add(m["id"])
            va, vb = m.get("a"), m.get("b")
            if not is_number(va) or not is_number(vb):
                continue
            va, vb = float(va), float(vb)
            if va < 0 or vb < 0 or va == vb:
                continue
            if va == 0 or vb == 0:
                one_sided.append(m["label"])
                continue
            ratio = va / vb
            if abs(ratio - 1.0) < SAME_WITHIN:
                continue
            # Ranked by what the change can matter for the time: a 10x change of an opcode that is
            # 0.01% of the instructions weighs 1/10000 of the same change of the largest one.
            rows.append((abs(math.log(ratio)) * size(m, max(va, vb)),
                         plots.ChangeRow(m["label"], ratio, m.get("better_side"))))
    rows.sort(key=lambda t: (-t[0], t[1].label))
    return [r for _, r in rows[:TOP_CHANGES]], one_sided


def _sizes(metrics: list[dict[str, Any]]):
    """size(metric, value) in 0..1: a percentage as itself, anything else against the largest
    value of its unit in the same view (instructions against instructions, stalls against stalls)."""
    largest: dict[str, float] = {}
    for m in metrics:
        for v in (m.get("a"), m.get("b")):
            if is_number(v):
                largest[m.get("unit")] = max(largest.get(m.get("unit"), 0.0), abs(float(v)))

    def size(m: dict[str, Any], value: float) -> float:
        if m.get("unit") == "%":
            return min(value / 100.0, 1.0)
        top = largest.get(m.get("unit")) or 0.0
        return value / top if top else 0.0
    return size
