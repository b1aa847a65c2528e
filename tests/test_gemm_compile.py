"""Compile-only checks of the Hopper GEMM (no GPU needed): the SASS has the instructions the
design relies on and no local memory (refused configs: test_gemm_refusals.py); the tile schedule covers
every output tile exactly once."""

import os

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from gemm_testing import assert_no_stack_or_local_memory, opcodes  # noqa: E402
from kernelscope.kernels import gemm  # noqa: E402
from kernelscope.kernels.sm90.tile_scheduler import SchedulePolicy, TileScheduler  # noqa: E402

VARIANTS = [
    ({}, "bfloat16", True),                                                    # default 128x256, 2x1
    ({"a_major": "m", "b_major": "k", "out_dtype": "float32", "cluster": (1, 2)}, "float16", False),
    ({"tile_m": 64, "tile_n": 128, "consumer_wgs": 1, "cluster": (1, 1), "raster": "row"}, "float16", True),
]


@pytest.mark.parametrize("config,dtype,stmatrix", VARIANTS)
def test_sass_has_design_instructions_and_no_local_memory(config, dtype, stmatrix):
    ck = gemm.compile_gemm(config, {"M": 1000, "N": 1024, "K": 1000}, dtype)
    assert ck.launch is None or ck.bind is not None
    assert ck.cubin and ck.sass, "compile produced no cubin / SASS"
    ops = opcodes(ck.sass)
    expected = ["HGMMA", "UTMALDG", "UTMASTG"] + (["STSM"] if stmatrix else [])
    missing = [op for op in expected if op not in ops]
    assert not missing, f"SASS lacks {missing}"
    assert not ops & {"LDL", "STL"}, "local memory traffic in SASS"
    assert_no_stack_or_local_memory(ck.cubin)


def test_spec_expected_sass_matches_default_build():
    ck = gemm.GEMM_SPEC.compile(gemm.GEMM_SPEC.default_config, gemm.GEMM_SPEC.default_shapes[0], "bfloat16", "sm_90a")
    ops = opcodes(ck.sass)
    assert set(gemm.GEMM_SPEC.expected_sass) <= ops


def test_earlier_config_names_stay_accepted():
    """raster "m" / "n" and the group size as `swizzle` were gemm's names before the kernels
    shared gemm_mma's (row, column, group): saved suites and command lines keep working."""
    assert gemm.GemmConfig.from_mapping({"raster": "m", "swizzle": 4}) == gemm.GemmConfig(raster="column", group=4)
    assert gemm.GemmConfig.from_mapping({"raster": "n"}).raster == "row"
    assert gemm.GemmConfig.from_mapping({"raster": "row"}).to_dict()["raster"] == "row"
    # Merged over the default config (KernelSpec.config_for), the earlier name wins.
    assert gemm.GemmConfig.from_mapping({**gemm.GEMM_SPEC.default_config, "swizzle": 2}).group == 2


def test_stages_are_derived_from_shared_memory():
    r = gemm.resolve_config(gemm.GemmConfig())
    assert r.stages == 4 and r.smem_bytes <= gemm.SMEM_PER_BLOCK_BYTES
    r = gemm.resolve_config(gemm.GemmConfig(tile_m=64, tile_n=128, consumer_wgs=1))
    assert r.stages == 8
    r32 = gemm.resolve_config(gemm.GemmConfig(), "float32")
    assert r32.smem_bytes <= gemm.SMEM_PER_BLOCK_BYTES and r32.epi_stages == 2


@pytest.mark.parametrize("tiles", [(1, 1), (7, 5), (16, 16), (33, 3), (3, 40)])
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2), (2, 2)])
@pytest.mark.parametrize("raster", ["m", "n"])
@pytest.mark.parametrize("group", [1, 3, 8])
def test_schedule_covers_every_tile_once(tiles, cluster, raster, group):
    # The scheduler's arithmetic also runs on plain Python integers.
    sched = TileScheduler(SchedulePolicy(cluster, raster, group), *tiles)
    seen = []
    for w in range(sched.num_work):
        for x in range(cluster[0]):
            for y in range(cluster[1]):
                seen.append(sched.tile_of_cta(w, x, y))
    covered = {t for t in seen if t[0] < tiles[0] and t[1] < tiles[1]}
    assert len(seen) == len(set(seen))
    assert covered == {(m, n) for m in range(tiles[0]) for n in range(tiles[1])}


def test_schedule_groups_consecutive_work():
    # Raster along M, group 4: the first 4 work items share M row 0 and walk 4 N columns.
    sched = TileScheduler(SchedulePolicy((1, 1), "m", 4), 8, 8)
    assert [sched.cluster_tile(w) for w in range(6)] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]


def test_run_and_profile_launch_the_per_shape_heuristic():
    """GEMM_SPEC.config_for (what run, profile and the gate launch) follows heuristic_config, as
    bench_gemm does: skinny M gets 64x128 tiles with B multicast, big shapes the 128x256 default."""
    skinny = gemm.GEMM_SPEC.config_for({"M": 128, "N": 4096, "K": 4096}, "bfloat16")
    assert (skinny["tile_m"], skinny["tile_n"], tuple(skinny["cluster"])) == (64, 128, (2, 1))
    big = gemm.GEMM_SPEC.config_for({"M": 4096, "N": 4096, "K": 4096}, "bfloat16")
    assert big == gemm.GEMM_SPEC.default_config
    assert gemm.GEMM_SPEC.config_for({"M": 128, "N": 4096, "K": 4096}, "bfloat16", {"tile_m": 128})["tile_m"] == 128
