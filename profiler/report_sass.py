"""What a kernel's own SASS says, read from any Nsight Compute report.

Every report holds the code of each profiled function, whatever sections were collected:
`launch__function_pcs` is the function's first instruction and `sass_by_pc` disassembles one
instruction at a time (16 bytes each on sm_70 and later). So a report of ncu's basic set, which
counts no instructions, still shows whether the code uses local memory, memory fences or shared
atomics, and how large it is. These are the facts `kernelscope inspect` reads from a cubin,
under the same `static__` names where both have them.

Reading costs ~0.1 s per function (ncu_report disassembles it), so it is done only for the
launches a command looks at (profiler.report.load_report's `static_sass`).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from kernelscope.profiler.record import Metric
from kernelscope.toolchain.sass import access_bytes, hmma_products, instruction_opcode, local_memory_bytes

FUNCTION_PCS = "launch__function_pcs"
INSTRUCTION_BYTES = 16
# Past the last instruction (EXIT, its branch-to-self, then NOP padding) the report returns empty
# text. Each instruction costs ~0.4 ms to read, so a read stops at MAX_INSTRUCTIONS (256 KB of
# code, twice the SM's 128 KB instruction cache: past that the size no longer changes what it
# says); static__sass_read_complete is 0 then, and the counts are of the part read.
MAX_INSTRUCTIONS = 16_384
END_AFTER_EMPTY = 2


# Reports that count instructions (the InstructionStats section) leave the rules nothing to learn from
# the code itself, so commands read it only for reports that count none.
INSTRUCTIONS_EXECUTED = "smsp__inst_executed.sum"


def counts_no_instructions(profile) -> bool:
    """Whether a profile's report lacks instruction counts (ncu's basic set, for one)."""
    return INSTRUCTIONS_EXECUTED not in profile.metrics


def function_start(action: Any) -> int | None:
    """The address of the function's first instruction, or None where the report lacks it."""
    pcs = action.metric_by_name(FUNCTION_PCS)
    if pcs is None or pcs.num_instances() == 0:
        return None
    return pcs.as_uint64(0)


def function_sass(action: Any, start: int | None = None) -> list[str] | None:
    """The function's SASS, one instruction per entry ('@P0 STL.64 [R1], R2'), at most
    MAX_INSTRUCTIONS of it; None when the report does not say where the function starts."""
    pc = function_start(action) if start is None else start
    if pc is None:
        return None
    code: list[str] = []
    empty = 0
    while empty < END_AFTER_EMPTY and len(code) < MAX_INSTRUCTIONS:
        text = action.sass_by_pc(pc).strip()
        if text:
            code.append(text)
            empty = 0
        else:
            empty += 1
        pc += INSTRUCTION_BYTES
    return code or None


# Counted opcodes (the part before the first dot) and the metric each count goes to.
COUNTED = {
    "MEMBAR": "static__membar_instructions",
    "ATOMS": "static__shared_atomic_instructions",
    "BAR": "static__bar_instructions",
    # What arithmetic the code does (`inspect` reads it from the binary's instruction mix instead).
    # The range check of an IEEE-rounded float division (x / y without fast math), which branches to
    # a slow path for operands it cannot handle with MUFU.RCP and its Newton steps.
    "FCHK": "static__fchk_instructions",
    "HMMA": "static__hmma_instructions",
}
# Integer multiply-high (IMAD.HI): how the compiler divides and takes the remainder by a constant or a
# run-time divisor (its reciprocal computed once), and little else in ordinary code.
MUL_HIGH = "IMAD.HI"
# The special-function unit's instructions (exp2, lg2, rcp, rsqrt, sqrt, sin, cos), less the reciprocal of
# each integer division by a run-time value: the divisor converted rounding up (I2F.U32.RP, I2F.U64.RP)
# feeds one MUFU.RCP, which is index math, not special math.
SPECIAL_FUNCTION = "MUFU"


def sass_facts(code: list[str]) -> dict[str, Metric]:
    """The static__ metrics of one function's SASS (as read: see MAX_INSTRUCTIONS)."""
    return {**opcode_facts([instruction_opcode(i) for i in code]), **async_copy_facts(code)}


# Global memory by opcode base: loads, stores, and the atomics and reductions that L2 applies (RED and
# ATOM on generic addresses land there too in practice; ATOMS, shared memory's, is counted above).
GLOBAL_LOADS = ("LDG",)
GLOBAL_STORES = ("STG",)
GLOBAL_ATOMICS = ("RED", "REDG", "ATOM", "ATOMG")


def _mean_width(opcodes: list[str], bases: tuple[str, ...]) -> float | None:
    widths = [access_bytes(op) for op in opcodes if op.split(".")[0] in bases]
    return sum(widths) / len(widths) if widths else None


def global_access_facts(opcodes: list[str]) -> dict[str, Metric]:
    """How wide the code's global loads and stores are, and how many global atomics it holds. Two
    kernels whose memory instructions are as many (a counter) and as wide (these) request the same
    bytes: more sectors for them are sectors fetched and not used."""
    bases = Counter(op.split(".")[0] for op in opcodes)
    facts = {"static__global_atomic_instructions": Metric(sum(bases.get(b, 0) for b in GLOBAL_ATOMICS), "inst")}
    for name, kind in (("load", GLOBAL_LOADS), ("store", GLOBAL_STORES)):
        facts[f"static__global_{name}_instructions"] = Metric(sum(bases.get(b, 0) for b in kind), "inst")
        width = _mean_width(opcodes, kind)
        if width is not None:
            facts[f"static__global_{name}_bytes_per_instruction"] = Metric(width, "byte")
    return facts


# cp.async (LDGSTS) groups are committed by LDGDEPBAR and waited for by `DEPBAR.LE SB0, n`: at most n
# groups still in flight after the wait (cp.async.wait_group n).
ASYNC_COPY = "LDGSTS"
_ASYNC_COPY_WAIT = re.compile(r"^(?:@!?U?P[T0-9]+\s+)?DEPBAR\.LE\s+SB0\s*,\s*(0x[0-9a-fA-F]+|\d+)")


def async_copy_facts(code: list[str]) -> dict[str, Metric]:
    """For code with cp.async copies: the most copy groups any of its waits leaves in flight. 0 is a
    pipeline that waits for every copy it asked for before it computes (no copy overlaps the work)."""
    if not any(instruction_opcode(i).split(".")[0] == ASYNC_COPY for i in code):
        return {}
    left = [int(m.group(1), 0) for m in map(_ASYNC_COPY_WAIT.match, (i.strip() for i in code)) if m]
    if not left:
        return {}
    return {"static__async_copy_groups_in_flight": Metric(max(left), "count")}


def opcode_facts(opcodes: list[str]) -> dict[str, Metric]:
    """The static__ metrics of a function's opcodes with their modifiers, in code order."""
    bases = Counter(op.split(".")[0] for op in opcodes)
    facts = {
        "static__sass_instructions": Metric(len(opcodes), "inst"),
        "static__sass_read_complete": Metric(int(len(opcodes) < MAX_INSTRUCTIONS), ""),
        "static__spill_store_bytes": Metric(local_memory_bytes(opcodes, "STL"), "byte"),
        "static__spill_load_bytes": Metric(local_memory_bytes(opcodes, "LDL"), "byte"),
    }
    for base, name in COUNTED.items():
        facts[name] = Metric(bases.get(base, 0), "inst")
    divisor_reciprocals = sum(1 for op in opcodes if op.startswith("I2F.") and op.split(".")[-1] == "RP")
    facts["static__special_function_instructions"] = Metric(
        max(0, bases.get(SPECIAL_FUNCTION, 0) - divisor_reciprocals), "inst")
    facts["static__mul_high_instructions"] = Metric(
        sum(1 for op in opcodes if op == MUL_HIGH or op.startswith(MUL_HIGH + ".")), "inst")
    facts.update(global_access_facts(opcodes))
    products = [p for p in map(hmma_products, opcodes) if p is not None]
    if products:
        facts["static__hmma_products_per_instruction"] = Metric(sum(products) / len(products), "count")
    return facts


def read_sass_facts(action: Any, seen: dict[int, dict[str, Metric] | None]) -> dict[str, Metric]:
    """The static__ metrics of the action's function. Launches of one function share its code, so
    each is read once per report: `seen` maps a function's first address to its facts (by
    address, not name: two modules may hold different code under one name, as CuTe DSL kernels
    compiled from one Python function do)."""
    start = function_start(action)
    if start is None:
        return {}
    if start not in seen:
        code = function_sass(action, start)
        seen[start] = sass_facts(code) if code else None
    return dict(seen[start] or {})
