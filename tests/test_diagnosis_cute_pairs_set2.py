"""The second set of CuTe DSL pairs of the diagnosis benchmark (benchmarks/diagnosis/cute_pairs_set2.py)
compiles for sm_90a, and each pair's SASS shows what was planted: the same opcodes for the two thread
layouts of the elementwise kernel (only the thread-to-element map differs), one 16-byte load in flight
in the rolled row sum against eight in the unrolled one, a convergence region only where the lanes of a
warp take both branches, and the same code for the same-time pair. No GPU (what they measure on one:
benchmarks/diagnosis/README.md)."""

from __future__ import annotations

import pytest

from cute_pairs_compile import compiled_opcodes

PAIRS = ("thread_layout_order", "row_sum_in_flight", "halves_by_lane", "same_layout_rows")


@pytest.fixture(scope="module")
def opcodes(tmp_path_factory) -> dict[str, dict[str, int]]:
    return compiled_opcodes("cute_pairs_set2.py", tmp_path_factory.mktemp("cute_pairs_set2_cwd"))


def test_every_pair_compiles(opcodes):
    assert set(opcodes) == {f"{p}_{side}" for p in PAIRS for side in ("slow", "fast")}


def test_thread_layouts_change_the_map_not_the_code(opcodes):
    # uncoalesced-access and the same-time pair: 16 scalar loads, FFMAs and stores a thread in all four.
    for name in ("thread_layout_order", "same_layout_rows"):
        slow, fast = opcodes[f"{name}_slow"], opcodes[f"{name}_fast"]
        assert slow == fast
        assert slow["LDG.E"] == slow["FFMA"] == slow["STG.E"] == 16


def test_rolled_row_sum_keeps_one_load_in_flight(opcodes):
    slow, fast = opcodes["row_sum_in_flight_slow"], opcodes["row_sum_in_flight_fast"]
    assert slow["LDG.E.128"] == 1 and fast["LDG.E.128"] == 8
    # the rest is the same: the shuffle butterfly and the one store a row
    assert slow["SHFL.BFLY"] == fast["SHFL.BFLY"] == 5 and slow["STG.E"] == fast["STG.E"] == 1


def test_interleaved_halves_diverge_within_a_warp(opcodes):
    slow, fast = opcodes["halves_by_lane_slow"], opcodes["halves_by_lane_fast"]
    # Both run the two loops as real branches (not both computed and one selected) with the same
    # arithmetic; only where a warp's lanes can split does the compiler open a convergence region.
    assert slow["BRA"] == fast["BRA"] > 1 and slow["FFMA"] == fast["FFMA"]
    assert slow.get("BSSY", 0) == 1 and fast.get("BSSY", 0) == 0
    assert slow["LDG.E"] == fast["LDG.E"] == 1 and slow["STG.E"] == fast["STG.E"] == 1
