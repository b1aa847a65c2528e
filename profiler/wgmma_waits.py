"""Serialized WGMMA in a SASS listing: which warpgroup MMA groups wait for themselves before
the next group may issue.

A WGMMA group is the HGMMA instructions after a WARPGROUP.ARRIVE, committed by the HGMMA that
carries `gsb0`. The first WARPGROUP.DEPBAR after it says how many groups may stay in flight
(`WARPGROUP.DEPBAR.LE gsb0, 0x1`: one). A group whose first wait is depth 0 and that another
group follows (straight on, or through the loop's backward branch) is serialized: the next
group cannot start until this one has finished, so the tensor pipe drains between them. The
final wait(0) before an epilogue is not counted: no group follows it on that path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelscope.toolchain.sass_lines import listed_instruction

_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
# cuobjdump writes a branch target as an address (`BRA 0x710`), nvdisasm as a label (`(.L_x_4)`).
_BRANCH_TARGET = re.compile(r"^BRA\b(?:.*?`\((\.L_x_\d+)\)|\s+(?:\S+\s+)?(0x[0-9a-fA-F]+))")
_DEPBAR_DEPTH = re.compile(r"^WARPGROUP\.DEPBAR\.LE\s+gsb0,\s*(0x[0-9a-fA-F]+|\d+)")


@dataclass(frozen=True)
class WgmmaWaits:
    groups: int         # committed WGMMA groups in the listing
    serialized: int     # of them, waited for at depth 0 with another group after the wait


def wgmma_waits(sass: str) -> WgmmaWaits:
    instructions: list[str] = []
    labels: dict[str, int] = {}     # label or address (hex) -> instruction index
    for line in sass.splitlines():
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(instructions)
            continue
        listed = listed_instruction(line)
        if listed is not None:
            labels[hex(listed.offset)] = len(instructions)
            instructions.append(listed.instruction)

    groups = serialized = 0
    start = None
    for i, ins in enumerate(instructions):
        if ins == "WARPGROUP.ARRIVE" or (ins.startswith("HGMMA") and start is None):
            start = i if start is None else start
        if ins.startswith("HGMMA") and re.search(r"\bgsb0\b", ins):
            groups += 1
            if _waits_alone(instructions, labels, start if start is not None else i, i):
                serialized += 1
            start = None
    return WgmmaWaits(groups, serialized)


def _waits_alone(instructions: list[str], labels: dict[str, int], group_start: int, commit: int) -> bool:
    """The group's first wait is depth 0, and a group follows: the next WGMMA before any exit,
    or the first branch after the wait jumps back to the group."""
    n = commit + 1
    while n < len(instructions) and not instructions[n].startswith("WARPGROUP.DEPBAR"):
        if instructions[n] == "WARPGROUP.ARRIVE" or instructions[n].startswith("HGMMA"):
            return False    # the next group issues before any wait: in flight together
        n += 1
    depth = _DEPBAR_DEPTH.match(instructions[n]) if n < len(instructions) else None
    if depth is None or int(depth.group(1), 0) != 0:
        return False
    for ins in instructions[n + 1:]:
        if ins == "WARPGROUP.ARRIVE" or ins.startswith("HGMMA"):
            return True
        if ins.startswith("EXIT") or ins.startswith("RET"):
            return False
        target = _BRANCH_TARGET.match(ins)
        if target:
            where = target.group(1) or hex(int(target.group(2), 16))
            return labels.get(where, len(instructions)) <= group_start
    return False
