"""The loops of a function's SASS, from its backward branches (`inspect --loops`).

A loop is the address range from a branch target back up to a branch that jumps to it: every
backward `BRA` to the same target closes one loop (the last of them is its end). Loops nest by
range. What a kernel author reads from it is the instruction budget of one iteration: how many
instructions a key block or a k-tile costs, and of which kinds, without running anything. The
mbarrier wait loops that ptxas places out of line (a try-wait and the branch back to it) are
loops too; they are marked, not hidden.

Reads cuobjdump's or nvdisasm's listing of one function (branch targets as hex offsets or as
labels); depends on nothing else in kernelscope.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kernelscope.toolchain.sass_lines import branch_target, listed_label, listed_opcode
# Warp-uniform datapath opcodes (U*), not the uniform-predicate-only ones.
_NOT_UNIFORM = {"UTMALDG", "UTMASTG", "UTMACCTL", "UTMACMDFLUSH", "UTMAPF", "UBLKCP", "UBLKRED", "UBLKPF"}


@dataclass(frozen=True)
class SassLoop:
    start: int                      # offset of the loop's first instruction (the branch target)
    end: int                        # offset of its last backward branch
    depth: int                      # 1: not inside another loop
    opcodes: dict[str, int] = field(default_factory=dict)   # base opcode -> instructions in the range
    inner: int = 0                  # loops directly or indirectly inside this one (wait loops included)

    @property
    def instructions(self) -> int:
        return sum(self.opcodes.values())

    @property
    def wait_loop(self) -> bool:
        """An mbarrier wait's retry loop: a few instructions around a SYNCS try-wait."""
        return self.instructions <= 6 and any(op == "SYNCS" for op in self.opcodes)

    @property
    def uniform_share(self) -> float:
        n = self.instructions
        uniform = sum(c for op, c in self.opcodes.items() if op.startswith("U") and op not in _NOT_UNIFORM)
        return uniform / n if n else 0.0

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "depth": self.depth,
                "instructions": self.instructions, "inner_loops": self.inner,
                "wait_loop": self.wait_loop, "uniform_share": round(self.uniform_share, 4),
                "opcodes": dict(sorted(self.opcodes.items(), key=lambda kv: (-kv[1], kv[0])))}


def find_loops(listing: str) -> list[SassLoop]:
    """The loops of one function's SASS listing, in address order (outer before inner)."""
    parsed: list[tuple[int, str, int | str | None]] = []
    labels: dict[str, int] = {}
    pending: list[str] = []                  # labels waiting for the next instruction's offset
    for raw in listing.splitlines():
        label = listed_label(raw)
        if label:
            pending.append(label)
            continue
        found = listed_opcode(raw)
        if found is None:
            continue
        listed, opcode = found
        for name in pending:
            labels[name] = listed.offset
        pending = []
        parsed.append((listed.offset, opcode.split(".", 1)[0], branch_target(listed.instruction)))
    return loops_of([(offset, base, labels.get(t) if isinstance(t, str) else t) for offset, base, t in parsed])


def loops_of(instructions: list[tuple[int, str, int | None]]) -> list[SassLoop]:
    """The loops of one function given as (offset, base opcode, branch target offset or None) in
    address order, outer before inner."""
    backward = [(offset, target) for offset, op, target in instructions
                # A branch to itself is the trap after EXIT, not a loop.
                if op == "BRA" and target is not None and target < offset]
    # ptxas places slow paths (an mbarrier wait's retries) after the function's last EXIT; the
    # branch that returns from one into the body is backward without closing a loop.
    last_exit = max((offset for offset, op, _ in instructions if op == "EXIT"), default=None)
    ends: dict[int, int] = {}           # loop start -> offset of the last branch back to it
    for offset, target in backward:
        if last_exit is not None and offset > last_exit >= target:
            continue
        ends[target] = max(ends.get(target, 0), offset)
    ranges = sorted(ends.items(), key=lambda se: (se[0], -se[1]))
    loops = []
    for start, end in ranges:
        depth = 1 + sum(1 for s, e in ranges if (s, e) != (start, end) and s <= start and end <= e)
        inner = sum(1 for s, e in ranges if (s, e) != (start, end) and start <= s and e <= end)
        opcodes = Counter(op for offset, op, _ in instructions if start <= offset <= end)
        loops.append(SassLoop(start, end, depth, dict(opcodes), inner))
    return loops


def innermost(loops: list[SassLoop]) -> list[SassLoop]:
    """Loops with no loop inside but wait loops, wait loops left out: the iterations that repeat most."""
    out = []
    for loop in loops:
        if loop.wait_loop:
            continue
        nested = [o for o in loops if o is not loop and loop.start <= o.start and o.end <= loop.end]
        if all(o.wait_loop for o in nested):
            out.append(loop)
    return out
