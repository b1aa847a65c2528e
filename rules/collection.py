"""What a profile collects by name: the metrics the catalog, the rules and the roofline read.

The ncu driver (profiler.ncu) collects what its request names; this is where the names are
chosen, one layer above everything that reads them, so the driver never needs to know the
views and the quick set cannot drift from them.
"""

from __future__ import annotations

from kernelscope.profiler.catalog import load_catalog
from kernelscope.profiler.roofline import required_metrics
from kernelscope.rules.engine import load_rules

# Section outputs the quick set names itself, since it collects no sections: the stall
# breakdown (WarpStateStats) and the executed-instruction mix (InstructionStats).
STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)
QUICK_EXTRA_METRICS = (
    "sass__inst_executed_per_opcode",
    *(f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio" for reason in STALL_REASONS),
)


# Raw names the catalog and the rules read that no --metrics request can name: section outputs
# (derived metrics, the source counters' totals) and values kernelscope computes while reading a report.
SECTION_OUTPUT_PREFIXES = ("derived__", "memory_l2_theoretical_sectors_", "kernelscope__")
SOURCE_COUNTER_TOTALS = ("thread_inst_executed",)
# What the catalog reads that needs no request either: launch and device attributes (always
# collected), static values (from the binary) and the stall ratios (QUICK_EXTRA_METRICS names them).
CATALOG_UNNAMED_PREFIXES = ("launch__", "device__", "static__", "smsp__average_warps_issue_stalled_")


def _section_output(name: str) -> bool:
    return name.startswith(SECTION_OUTPUT_PREFIXES) or name in SOURCE_COUNTER_TOTALS


def catalog_metrics() -> list[str]:
    """Every raw metric the catalog's entries read.

    The sections carry most of them; naming them all keeps the catalog and the collected
    set from drifting apart. Launch and device attributes are always collected; derived
    metrics and the stall ratios exist only as section outputs (WarpStateStats), so they
    are not named, nor are the source counters' totals (the fallbacks of reports without
    the memory tables) or kernelscope's own estimates (warp states from PC samples).
    """
    names: list[str] = []
    for definition in load_catalog().metrics.values():
        for name in definition.raw_metrics():
            if name.startswith(CATALOG_UNNAMED_PREFIXES) or _section_output(name):
                continue
            if name not in names:
                names.append(name)
    return names


def quick_metrics() -> list[str]:
    """The quick set: what the catalog, the rules and the roofline read, the stall breakdown and the mix."""
    rules = [m for m in load_rules().raw_metrics() if not _section_output(m)]
    return list(dict.fromkeys([*catalog_metrics(), *QUICK_EXTRA_METRICS, *required_metrics(), *rules]))


def metrics_for_set(section_set: str | list[str]) -> list[str]:
    """Metrics to name in a profile of `section_set`: the quick set's for "quick", the
    catalog's for "sections", none for "full" or a list of sections (they bring their own)."""
    if section_set == "quick":
        return quick_metrics()
    if section_set == "sections":
        return catalog_metrics()
    return []
