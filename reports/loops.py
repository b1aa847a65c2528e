"""Terminal table of a kernel's SASS loops (`inspect --loops`). Render only."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from kernelscope.reports.terminal import report_table
from kernelscope.toolchain.sass_loops import SassLoop, innermost

TOP_OPCODES = 6


def print_loops(console: Console, title: str, loops: list[SassLoop]) -> None:
    """One row per loop (wait loops summed up in a line below), nested ones indented; the
    innermost loops, the iterations that repeat most, are marked."""
    shown = [loop for loop in loops if not loop.wait_loop]
    waits = len(loops) - len(shown)
    if not shown:
        console.print(Text(f"{title}: no loop in the SASS"
                           + (f" ({waits} mbarrier wait loops)" if waits else ""), style="dim"))
        return
    inner = {id(loop) for loop in innermost(loops)}
    table = report_table(f"{title}: loops of the SASS (static: instructions per iteration)", "Loop",
                         "Instructions", "HGMMA+HMMA", "BAR", "Uniform", "Most frequent opcodes")
    for loop in shown:
        name = "  " * (loop.depth - 1) + f"{loop.start:#06x}-{loop.end:#06x}"
        if id(loop) in inner:
            name += " (innermost)"
        top = sorted(loop.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_OPCODES]
        table.add_row(name, f"{loop.instructions:,}",
                      str(loop.opcodes.get("HGMMA", 0) + loop.opcodes.get("HMMA", 0)),
                      str(loop.opcodes.get("BAR", 0)), f"{100 * loop.uniform_share:.0f}%",
                      " ".join(f"{op} {n}" for op, n in top))
    console.print(table)
    if waits:
        console.print(Text(f"  and {waits} mbarrier wait loops (a try-wait and its retry branch, "
                           "placed after the function's last EXIT)", style="dim"))
