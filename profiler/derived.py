"""Values computed from several catalog entries of one kernel, and the device facts.

Catalog entries with `computed = "NAME"` are evaluated here (a formula cannot pick the
largest of the stall reasons or name the occupancy limiter), so `show`, `diff` and the
rules read them like any other catalog id. Device facts are the GPU's limits, read from
the report's device__attribute_* metrics; a compile-only profile, which has none, falls
back to the documented value for its compute capability.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

from kernelscope.profiler.record import KernelProfile

# Stall entries that are not waiting: the issuing cycle and "eligible but not picked".
STALL_EXCLUDED = ("stall_selected", "stall_not_selected")
# The stall entries the computed stall values read: catalog ids `stall_<reason>` with a metric.
STALL_PREFIX = "stall_"
COMPUTED_STALLS = ("stall_max", "stall_sum", "stall_all", "stall_top")

OCCUPANCY_LIMITS = (
    ("occupancy_limit_registers", "registers"),
    ("occupancy_limit_shared_mem", "shared memory"),
    ("occupancy_limit_warps", "warp slots"),
    ("occupancy_limit_blocks", "block slots"),
    ("occupancy_limit_barriers", "named barriers"),
)

# name: (ncu device attribute, unit, description)
DEVICE_FACTS: dict[str, tuple[str, str, str]] = {
    "max_registers_per_thread": ("device__attribute_max_registers_per_thread", "reg", "registers a thread may have"),
    "registers_per_sm": ("device__attribute_max_registers_per_multiprocessor", "reg", "register file of one SM"),
    "registers_per_block": ("device__attribute_max_registers_per_block", "reg", "registers one block may have"),
    "shared_mem_per_sm": ("device__attribute_max_shared_memory_per_multiprocessor", "byte", "shared memory of one SM"),
    "shared_mem_per_block_optin": ("device__attribute_max_shared_memory_per_block_optin", "byte",
                                   "shared memory one block may opt in to"),
    "reserved_shared_mem_per_block": ("device__attribute_reserved_shared_memory_per_block", "byte",
                                      "shared memory the driver reserves per block"),
    "max_warps_per_sm": ("device__attribute_max_warps_per_multiprocessor", "warp", "warp slots of one SM"),
    "max_blocks_per_sm": ("device__attribute_max_blocks_per_multiprocessor", "block", "block slots of one SM"),
    "sm_count": ("device__attribute_multiprocessor_count", "count", "SMs of the GPU"),
    "cc_major": ("device__attribute_compute_capability_major", "number", "compute capability, major"),
    "cc_minor": ("device__attribute_compute_capability_minor", "number", "compute capability, minor"),
}
# Documented fallbacks by compute capability (CUDA programming guide, "Technical Specifications").
# The SM count is deliberately absent: it differs between boards of one architecture.
DEVICE_FALLBACKS: dict[str, dict[str, int]] = {
    "9.0": {"max_registers_per_thread": 255, "registers_per_sm": 65536, "registers_per_block": 65536,
            "shared_mem_per_sm": 233472, "shared_mem_per_block_optin": 232448, "reserved_shared_mem_per_block": 1024,
            "max_warps_per_sm": 64, "max_blocks_per_sm": 32, "cc_major": 9, "cc_minor": 0},
    "12.0": {"max_registers_per_thread": 255, "registers_per_sm": 65536, "registers_per_block": 65536,
             "shared_mem_per_sm": 102400, "shared_mem_per_block_optin": 101376, "reserved_shared_mem_per_block": 1024,
             "max_warps_per_sm": 48, "max_blocks_per_sm": 32, "cc_major": 12, "cc_minor": 0},
}


def plain(value: Any) -> Any:
    """NaN carries no measurement: None."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def device_fact(profile: KernelProfile, fact: str) -> tuple[Any, str | None]:
    """(value, note): the note says when a documented default stood in for a missing attribute."""
    attribute, _, _ = DEVICE_FACTS[fact]
    value = plain(profile.value(attribute))
    if value is not None:
        return value, None
    if fact == "sm_count" and profile.device.sm_count:
        return profile.device.sm_count, None
    cc = profile.device.compute_capability
    if fact in ("cc_major", "cc_minor") and cc:
        major, _, minor = cc.partition(".")
        return (int(major) if fact == "cc_major" else int(minor or 0)), None
    fallback = DEVICE_FALLBACKS.get(cc or "", {}).get(fact)
    if fallback is None:
        return None, None
    return fallback, (f"device.{fact} = {fallback} (documented value for compute capability {cc}; "
                      f"the profile has no device attributes)")


# ---------------------------------------------------------------------------------
# Computed catalog entries. Each takes `value(id)` (a catalog id's value for the same
# profile, None when not collected) and the catalog's ids.

Lookup = Callable[[str], Any]


def _stall(ident: str) -> Callable[[Lookup, Iterable[str], Callable[[str], str]], Any]:
    def compute(value: Lookup, ids: Iterable[str], label: Callable[[str], str]) -> Any:
        reasons = [m for m in ids if m.startswith(STALL_PREFIX) and m not in COMPUTED_STALLS]
        readings = {m: value(m) for m in reasons}
        readings = {m: float(v) for m, v in readings.items() if is_number(v)}
        if ident == "stall_all":
            return sum(readings.values()) if readings else None
        stalls = {m: v for m, v in readings.items() if m not in STALL_EXCLUDED}
        if not stalls:
            return None
        if ident == "stall_sum":
            return sum(stalls.values())
        top = max(stalls, key=lambda m: stalls[m])
        return stalls[top] if ident == "stall_max" else label(top)
    return compute


def _limits(value: Lookup) -> dict[str, float]:
    limits = {word: value(m) for m, word in OCCUPANCY_LIMITS}
    return {w: float(v) for w, v in limits.items() if is_number(v)}


def _blocks_per_sm(value: Lookup, ids, label) -> Any:
    limits = _limits(value)
    return min(limits.values()) if limits else None


def _occupancy_limiter(value: Lookup, ids, label) -> Any:
    limits = _limits(value)
    if not limits:
        return None
    least = min(limits.values())
    return " and ".join(w for w, v in limits.items() if v == least)


def _warps_per_block(value: Lookup, ids, label) -> Any:
    size = value("block_size")
    return math.ceil(float(size) / 32) if is_number(size) else None


def _smem_per_block(value: Lookup, ids, label) -> Any:
    static, dynamic = value("shared_mem_static"), value("shared_mem_dynamic")
    if not is_number(static) and not is_number(dynamic):
        return None
    return (float(static) if is_number(static) else 0.0) + (float(dynamic) if is_number(dynamic) else 0.0)


COMPUTED: dict[str, Callable[[Lookup, Iterable[str], Callable[[str], str]], Any]] = {
    **{name: _stall(name) for name in COMPUTED_STALLS},
    "blocks_per_sm": _blocks_per_sm,
    "occupancy_limiter": _occupancy_limiter,
    "warps_per_block": _warps_per_block,
    "smem_per_block": _smem_per_block,
}
