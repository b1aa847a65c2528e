"""The static and the dynamic view joined: executed instructions laid over the SASS histogram.

The compile-only inspection counts each opcode's instances in the binary; a profile counts
how many times each opcode was executed (ncu's sass__inst_executed_per_opcode, warp-level).
Side by side, executions per static instance say which instructions are hot: 40 HGMMA
instances run 10^6 times each in a GEMM's main loop while 900 IMADs of its prologue run
a few times each. An executed opcode with no static instance means the profile is not of
this binary (another config, another kernel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass
class OpcodeHeat:
    opcode: str
    static_count: int               # instances in the SASS listing
    executed: float | None          # warp-level executions in the profiled launch (None: not in the profile)
    per_instance: float | None      # executed / static_count
    share: float | None             # executed / all executed

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class HeatMap:
    rows: list[OpcodeHeat]
    executed_total: float
    unmatched: list[str]            # executed opcodes the binary does not contain

    @property
    def same_binary(self) -> bool:
        return not self.unmatched


def join(static_mix: Mapping[str, float], executed_mix: Mapping[str, float]) -> HeatMap:
    """Rows hottest first (most executions), then opcodes never executed, by static count."""
    total = float(sum(executed_mix.values()))
    rows = []
    for op in set(static_mix) | set(executed_mix):
        count = int(static_mix.get(op, 0))
        ran = executed_mix.get(op)
        ran = float(ran) if ran is not None else None
        rows.append(OpcodeHeat(op, count, ran, ran / count if ran is not None and count else None,
                               ran / total if ran is not None and total else None))
    rows.sort(key=lambda r: (-(r.executed or 0.0), -r.static_count, r.opcode))
    unmatched = sorted(r.opcode for r in rows if r.static_count == 0 and (r.executed or 0) > 0)
    return HeatMap(rows=rows, executed_total=total, unmatched=unmatched)
