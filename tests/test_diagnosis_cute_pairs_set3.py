"""The third set of CuTe DSL pairs of the diagnosis benchmark (benchmarks/diagnosis/cute_pairs_set3.py)
compiles for sm_90a, and each pair's SASS shows what was planted: FFMA chains walked element by element
against the whole fragment at once, one barrier a step against two in all, and the same code where
the planted difference is the launch (the CTA tile, the shared memory reserved, the rows a persistent
CTA takes). No GPU (what they measure on one: benchmarks/diagnosis/README.md)."""

from __future__ import annotations

import pytest

from cute_pairs_compile import compiled_opcodes

PAIRS = ("fragment_chain", "cta_tile_count", "smem_reserve", "barrier_per_step", "persistent_split",
         "same_tile_waves")


@pytest.fixture(scope="module")
def opcodes(tmp_path_factory) -> dict[str, dict[str, int]]:
    return compiled_opcodes("cute_pairs_set3.py", tmp_path_factory.mktemp("cute_pairs_set3_cwd"))


def test_every_pair_compiles(opcodes):
    assert set(opcodes) == {f"{p}_{side}" for p in PAIRS for side in ("slow", "fast")}


def test_the_fragment_walked_element_by_element_keeps_its_loads_and_stores(opcodes):
    slow, fast = opcodes["fragment_chain_slow"], opcodes["fragment_chain_fast"]
    # eight rolled single-chain loops (8 FFMA each as listed) against one loop over the fragment
    assert slow["FFMA"] == 4 * fast["FFMA"] == 64 and slow["BRA"] > fast["BRA"]
    assert slow["LDG.E.128"] == fast["LDG.E.128"] == 2 and slow["STG.E.128"] == fast["STG.E.128"] == 2


def test_a_barrier_each_step_only_in_the_slow_kernel(opcodes):
    slow, fast = opcodes["barrier_per_step_slow"], opcodes["barrier_per_step_fast"]
    assert slow["BAR.SYNC.DEFER_BLOCKING"] == 10 and fast["BAR.SYNC.DEFER_BLOCKING"] == 2
    assert slow["FFMA"] == fast["FFMA"] == 32


@pytest.mark.parametrize("pair", ["smem_reserve", "persistent_split"])
def test_launch_side_pairs_run_the_same_code(opcodes, pair):
    assert opcodes[f"{pair}_slow"] == opcodes[f"{pair}_fast"]


@pytest.mark.parametrize("pair", ["cta_tile_count", "same_tile_waves"])
def test_tile_size_pairs_differ_by_a_loop_branch_at_most(opcodes, pair):
    slow, fast = dict(opcodes[f"{pair}_slow"]), dict(opcodes[f"{pair}_fast"])
    assert abs(slow.pop("BRA") - fast.pop("BRA")) <= 1
    assert slow == fast and slow["FFMA"] == 16
