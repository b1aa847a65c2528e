"""Where one source line's instructions sit in the SASS: the line's sites.

One source line often becomes code at several places: an inlined helper (a ring's wait, a copy) at
each of its calls, a loop body the compiler unrolled, a prologue and a steady state. A line's
totals add those places up. A site is one run of the line's instructions at nearby addresses: at
most SITE_GAP instructions of other lines between two of them, and all inside the same innermost
loop (the loops come from the SASS's backward branches). Each site carries what was measured at
its instructions, that loop, and the lines of the code just before and after it. Line information
from CuTe DSL records no inlining chain, so these neighbours are how a reader tells the copies of
a helper apart (the ring's wait before the producer's copy, or before the consumer's WGMMAs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

from kernelscope.toolchain.sass_loops import SassLoop, loops_of

# Instructions of other lines allowed between two of one site's (ptxas interleaves a line's
# instructions with its neighbours' while scheduling; an unrolled copy lies a whole body away).
SITE_GAP = 16


@dataclass
class LineSite:
    """One place in one function's SASS where a line's instructions sit."""

    function: str
    first: int                                   # offset of the site's first instruction
    last: int                                    # offset of its last
    instructions: int
    executed: float | None = None                # warp-level, summed over the site (None: not collected)
    samples: dict[str, float] = field(default_factory=dict)   # stall reason -> PC samples
    loop: tuple[int, int] | None = None          # innermost loop holding the site (start, end offsets)
    before: str | None = None                    # file:line of the nearest instruction before the site of another line
    after: str | None = None                     # ... and after it

    @property
    def sample_total(self) -> float:
        return sum(self.samples.values())

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"function": self.function, "first": self.first, "last": self.last,
                             "instructions": self.instructions}
        if self.executed is not None:
            d["executed"] = self.executed
        if self.samples:
            d["samples"] = {k: v for k, v in sorted(self.samples.items()) if v}
        d["loop"] = list(self.loop) if self.loop else None
        d["before"], d["after"] = self.before, self.after
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LineSite":
        loop = d.get("loop")
        return cls(function=d.get("function", ""), first=int(d["first"]), last=int(d["last"]),
                   instructions=int(d["instructions"]), executed=d.get("executed"),
                   samples=dict(d.get("samples") or {}), loop=(int(loop[0]), int(loop[1])) if loop else None,
                   before=d.get("before"), after=d.get("after"))


def address_range(first: int, last: int) -> str:
    """Offsets as the SASS listing prints them: `/*0c10*/-/*0c70*/`, or one for a single instruction."""
    return f"/*{first:04x}*/" + (f"-/*{last:04x}*/" if last != first else "")


def _innermost_loop(loops: list[SassLoop], offset: int) -> tuple[int, int] | None:
    """The smallest non-wait loop holding `offset` (wait loops are a try-wait and its branch back)."""
    holding = [lp for lp in loops if not lp.wait_loop and lp.start <= offset <= lp.end]
    if not holding:
        return None
    best = min(holding, key=lambda lp: lp.end - lp.start)
    return best.start, best.end


def find_sites(function: str, listing: Sequence[Any], line_of: Callable[[Any], Hashable | None],
               label_of: Callable[[Hashable], str]) -> dict[Hashable, list[LineSite]]:
    """Sites of every line of one function.

    `listing`: the function's instructions in address order, each with `offset`, `base_opcode`,
    `target` (a branch's target offset or None), `executed` and `samples` (None and {} where not
    measured); `line_of(inst)` is its line's key (None: no line information), `label_of(key)` how
    the key reads as a neighbour."""
    loops = loops_of([(i.offset, i.base_opcode, i.target) for i in listing])
    keys = [line_of(i) for i in listing]
    loop_at = [_innermost_loop(loops, i.offset) for i in listing]
    positions: dict[Hashable, list[int]] = {}
    for n, key in enumerate(keys):
        if key is not None:
            positions.setdefault(key, []).append(n)

    def neighbour(start: int, step: int, key: Hashable) -> str | None:
        n = start + step
        while 0 <= n < len(keys):
            if keys[n] is not None and keys[n] != key:
                return label_of(keys[n])
            n += step
        return None

    out: dict[Hashable, list[LineSite]] = {}
    for key, where in positions.items():
        runs: list[list[int]] = [[where[0]]]
        for n in where[1:]:
            prev = runs[-1][-1]
            if n - prev - 1 > SITE_GAP or loop_at[n] != loop_at[prev]:
                runs.append([n])
            else:
                runs[-1].append(n)
        sites = []
        for run in runs:
            insts = [listing[n] for n in run]
            measured = [i.executed for i in insts if i.executed is not None]
            samples: dict[str, float] = {}
            for i in insts:
                for reason, v in i.samples.items():
                    samples[reason] = samples.get(reason, 0.0) + v
            sites.append(LineSite(function=function, first=insts[0].offset, last=insts[-1].offset,
                                  instructions=len(insts), executed=sum(measured) if measured else None,
                                  samples={k: v for k, v in samples.items() if v}, loop=loop_at[run[0]],
                                  before=neighbour(run[0], -1, key), after=neighbour(run[-1], 1, key)))
        out[key] = sites
    return out
