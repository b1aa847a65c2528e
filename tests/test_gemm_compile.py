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
    ({"tile_m": 256, "tile_n": 128, "cluster": (1, 2)}, "bfloat16", True),      # two m64 atoms a warpgroup
    ({"ring_epi_n": 64}, "bfloat16", True),                                    # last tile through the ring
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


@pytest.mark.parametrize("split_from,slices,k_tiles", [
    (0, 2, 64), (0, 3, 13), (0, 4, 2), (0, 5, 5),     # every tile (uniform plan)
    (30, 3, 13), (34, 4, 64), (35, 16, 16),           # the last tiles only (tail plan)
])
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1)])
def test_split_k_schedule_covers_every_tile_and_k_tile_once(split_from, slices, k_tiles, cluster):
    """With split-K every (output tile, k-tile) pair is accumulated by exactly one work item,
    the tiles before split_from are whole, the slices of a split tile are consecutive work
    items and the reducer (last slice) comes last."""
    tiles = (10, 7)
    plain = TileScheduler(SchedulePolicy(cluster, "m", 3), *tiles)
    split_from = min(split_from, plain.num_work)
    sched = TileScheduler(SchedulePolicy(cluster, "m", 3), *tiles, split_from=split_from, slices=slices)
    assert sched.num_work == split_from + (plain.num_work - split_from) * slices
    seen = []
    for w in range(sched.num_work):
        tile_work, split, tile_slices = sched.split_unit(w)
        first, count = sched.k_slice(w, k_tiles)
        if w < split_from:
            assert (tile_work, split, tile_slices, first, count) == (w, 0, 1, 0, k_tiles)
        else:
            assert tile_slices == slices and split == (w - split_from) % slices
            assert count in (k_tiles // slices, -(-k_tiles // slices))
        tile = sched.tile_of_cta(w, 0, 0)
        assert tile == plain.tile_of_cta(tile_work, 0, 0)
        seen += [(tile, k) for k in range(first, first + count)]
    assert len(seen) == len(set(seen)) == plain.num_work * k_tiles


@pytest.mark.parametrize("split", [{"splits": 2}, {"tail_split": True}])
def test_split_k_variant_exchanges_partial_sums_through_global_memory(split):
    """A split-K variant compiles on the CPU with its exchange: release-add on a counter,
    acquire loads, L2-only (.cg) partial stores and loads, and still no local memory; the
    mainloop's descriptors stay on the uniform datapath (few R2UR)."""
    config = {"tile_m": 64, "tile_n": 128, "consumer_wgs": 1}
    ck = gemm.compile_gemm({**config, **split}, {"M": 128, "N": 4096, "K": 4096})
    ops = opcodes(ck.sass)
    assert {"HGMMA", "UTMALDG", "UTMASTG", "REDG", "LDG", "STG"} <= ops
    assert "red.release.gpu.global.add.s32" in ck.ptx
    assert "ld.acquire.gpu" in ck.ptx and "st.global.cg" in ck.ptx and "ld.global.cg" in ck.ptx
    assert not ops & {"LDL", "STL"}
    assert_no_stack_or_local_memory(ck.cubin)
    # Without split-K none of it is there.
    plain = gemm.compile_gemm(config, {"M": 128, "N": 4096, "K": 4096})
    assert not opcodes(plain.sass) & {"REDG", "LDG", "STG"}
    assert ck.sass.count("R2UR ") <= 2 * plain.sass.count("R2UR ")


def test_tail_split_plan_fills_the_last_wave():
    from kernelscope.kernels.split_k_plan import plan
    # 8192x14336 in 128x256 tiles on 2x1 clusters: 1792 cluster tiles on 66 clusters -> 27 full
    # waves and 10 tiles; 4 slices make one wave of 40 items (more would save a little more
    # wave time but move more partial sums than that saves).
    p = plan(1792, 66, 64, 1, True, cluster_ctas=2)
    assert (p.split_from, p.split_tiles, p.slices) == (1782, 10, 4)
    # 8192x4096x4096: a last wave of 50 of 66 clusters; cutting it would move ~100 MB of
    # partials (H100, gemm-h100-tail-split-first-plan.json.xz: 0.904 of cuBLAS cut, 0.990 whole),
    # so nothing is cut.
    assert plan(512, 66, 64, 1, True, cluster_ctas=2).slices == 1
    # A nearly full last wave, no partial wave, or one wave only: nothing is cut.
    assert plan(131, 66, 64, 1, True).slices == 1
    assert plan(132, 66, 64, 1, True).slices == 1
    assert plan(64, 66, 64, 1, True).slices == 1
    # Never more slices than k-tiles; the uniform plan cuts every tile.
    assert plan(1792, 66, 3, 1, True).slices <= 3
    assert plan(64, 66, 64, 4, False) == plan(64, 66, 64, 4, False).__class__(0, 4, 64)


def test_schedule_groups_consecutive_work():
    # Raster along M, group 4: the first 4 work items share M row 0 and walk 4 N columns.
    sched = TileScheduler(SchedulePolicy((1, 1), "m", 4), 8, 8)
    assert [sched.cluster_tile(w) for w in range(6)] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]


def test_run_and_profile_launch_the_per_shape_heuristic():
    """GEMM_SPEC.config_for (what run, profile and the gate launch) follows heuristic_config, as
    bench_gemm does: skinny M gets 64x64 tiles with B multicast, big shapes the 128x256 default."""
    skinny = gemm.GEMM_SPEC.config_for({"M": 128, "N": 4096, "K": 4096}, "bfloat16")
    assert (skinny["tile_m"], skinny["tile_n"], tuple(skinny["cluster"])) == (64, 64, (2, 1))
    big = gemm.GEMM_SPEC.config_for({"M": 4096, "N": 4096, "K": 4096}, "bfloat16")
    assert big == {**gemm.GEMM_SPEC.default_config, "epi_n": 64}
    assert gemm.GEMM_SPEC.config_for({"M": 128, "N": 4096, "K": 4096}, "bfloat16", {"tile_m": 128})["tile_m"] == 128


def test_whole_tile_epilogue_only_where_ctas_run_several_tiles():
    """128x256 tiles get 64-column epilogue subtiles (the tile's four subtiles in the four
    buffers, one ring stage fewer) only where a CTA runs more than one tile: measured faster at
    every suite shape with several tiles per CTA, slower at 2048^3's single tile (H100, timed in
    turns; kernels/gemm/NOTES.md, v5)."""
    def resolved(M, N, K, sms=132):
        return gemm.resolve_config(gemm.heuristic_config({"M": M, "N": N, "K": K}, sms))
    one_tile_each = resolved(2048, 2048, 2048)            # 128 tiles of 128x256 on 132 SMs
    assert (one_tile_each.cfg.epi_n, one_tile_each.stages, one_tile_each.epi_stages) == (32, 4, 4)
    for shape in [(4096, 4096, 4096), (8192, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336)]:
        r = resolved(*shape)
        assert (r.cfg.tile_n, r.cfg.epi_n, r.stages, r.epi_stages) == (256, 64, 3, 4), shape
        assert r.cfg.tile_n // r.cfg.epi_n == r.epi_stages      # every subtile has its own buffer
    # The same shape on a part with more SMs than tiles keeps the deeper ring.
    assert resolved(4096, 4096, 4096, sms=600).cfg.epi_n == 32
    # The tail plan where it cuts the last wave (measured wins at 12, 15 and 52 % full last
    # waves); where it keeps every tile whole, not even the split-capable variant (it costs).
    for M, N, K in [(8192, 14336, 4096), (4096, 4352, 4096)]:
        c = gemm.heuristic_config({"M": M, "N": N, "K": K}, 132)
        assert c.tail_split and not c.stream_k and (c.tile_n, c.epi_n) == (256, 64), (M, N, K)
        assert gemm.split_plan(c, M, N, K, 66).slices > 1
    for M, N, K in [(4096, 4096, 4096), (8192, 4096, 4096), (8192, 11008, 4096), (2048, 2048, 2048)]:
        c = gemm.heuristic_config({"M": M, "N": N, "K": K}, 132)
        assert not c.tail_split and not c.stream_k, (M, N, K)
    assert not gemm.heuristic_config({"M": 8192, "N": 14336}, 132).tail_split     # no K: no plan
    # M=512: 128x128 tiles, B multicast over a 2x1 cluster.
    m512 = gemm.heuristic_config({"M": 512, "N": 4096, "K": 4096}, 132)
    assert (m512.tile_m, m512.tile_n, tuple(m512.cluster), m512.splits) == (128, 128, (2, 1), 1)


def test_a_lone_tile_is_stored_through_the_ring():
    """Where no CTA runs more than one tile (one wave: 2048^3, M=512) the tile is stored through
    the ring's shared memory in 32-column subtiles, a buffer each (measured faster at M=512 on the
    H200, kernels/gemm/NOTES.md); where CTAs run several, the last one stores as the others."""
    def cfg(M, N, K, sms=132):
        return gemm.heuristic_config({"M": M, "N": N, "K": K}, sms)
    for shape in [(2048, 2048, 2048), (512, 4096, 4096)]:
        c = cfg(*shape)
        r = gemm.resolve_config(c)
        assert c.ring_epi_n == 32 and r.ring_subtiles == (c.tile_n // 32) * (c.tile_m // r.epi_m), shape
    assert cfg(2048, 2048, 2048).epi_n == 32 and gemm.resolve_config(cfg(2048, 2048, 2048)).stages == 4
    for shape in [(4096, 4096, 4096), (8192, 4096, 4096), (8192, 8192, 8192), (1024, 8192, 4096)]:
        assert cfg(*shape).ring_epi_n == 0, shape
    # The same M=512 shape on a part with 32 SMs runs several tiles a CTA of either size.
    assert cfg(512, 4096, 4096, sms=32).ring_epi_n == 0


def test_few_tiles_over_a_long_k_get_split_k():
    """The heuristic cuts K where both GPUs measured a win: few 64x128 tiles and >= 32 k-tiles
    per slice (gemm-{h100,h200}-split-k-skinny.json.xz): 64x4096x4096 in 2 slices, not 4.
    (128x4096x4096 now takes 64x64 tiles with the deepest ring instead: below.)"""
    def chosen(M, N, K):
        c = gemm.heuristic_config({"M": M, "N": N, "K": K}, 132)
        return (c.tile_m, c.tile_n, c.splits)
    assert chosen(128, 1024, 16384) == (64, 128, 4)
    assert chosen(256, 2048, 8192) == (64, 128, 2)
    assert chosen(64, 4096, 4096) == (64, 128, 2)
    assert chosen(64, 4096, 2048) == (64, 128, 1)          # 16 k-tiles a slice would be too few
    assert chosen(512, 4096, 4096)[2] == 1 and chosen(4096, 4096, 4096) == (128, 256, 1)
    # Run and profile launch what the heuristic picks.
    assert gemm.GEMM_SPEC.config_for({"M": 128, "N": 1024, "K": 16384}, "bfloat16")["splits"] == 4


def test_skinny_problems_with_enough_64x64_tiles_get_the_deepest_ring():
    """64 < M <= 128 with 64x64 tiles for >= 3/4 of the SMs: 64x64 tiles, 2x1 cluster, no split,
    and 13 stages (the most that fit; the default cap of 8 held them back: 0.908 of cuBLAS with
    8, 1.036 with 13 at 128x4096x4096 on the H100, timed in turns)."""
    c = gemm.heuristic_config({"M": 128, "N": 4096, "K": 4096}, 132)
    assert (c.tile_m, c.tile_n, c.consumer_wgs, tuple(c.cluster), c.splits, c.stages) == (64, 64, 1, (2, 1), 1, None)
    assert gemm.resolve_config(c).stages == 13
    assert gemm.heuristic_config({"M": 96, "N": 4096, "K": 4096}, 132).tile_n == 64
    # Too few 64x64 tiles (64 < 99 = 3/4 of 132 SMs): the split-K path as before.
    assert gemm.heuristic_config({"M": 128, "N": 2048, "K": 16384}, 132).tile_n == 128
    # Every other tile keeps its ring: the larger cap changes no stage count of a 64x128 or
    # larger tile.
    for cfg in (gemm.GemmConfig(tile_m=64, tile_n=128, consumer_wgs=1), gemm.GemmConfig(),
                gemm.GemmConfig(tile_m=128, tile_n=128)):
        assert gemm.resolve_config(cfg).stages <= 8


def test_narrow_tiles_where_128x128_tiles_fill_less_than_half_a_wave():
    """128x64 tiles where 128x128 would leave more than half the SMs idle and the narrow tiles fit
    one wave (256x4096x4096 on the H100, timed in turns: 1.037 of cuBLAS against 0.932); where
    they would take two waves (256x8192x4096: 0.914 against 1.024) the 128x128 tiles stay."""
    def tile(M, N, K=4096, sms=132):
        c = gemm.heuristic_config({"M": M, "N": N, "K": K}, sms)
        return (c.tile_m, c.tile_n, tuple(c.cluster))
    assert tile(256, 4096) == (128, 64, (2, 1))
    assert tile(256, 8192) == (128, 128, (2, 1))
    assert tile(512, 4096) == (128, 128, (2, 1))           # 128 tiles of 128x128: a full wave already
    assert tile(256, 4096, sms=100) == (128, 128, (2, 1))  # 128 narrow tiles would not fit 100 SMs
    assert gemm.resolve_config(gemm.GemmConfig(tile_n=64)).stages == 8


def test_l2_load_hints_are_checked_and_off_by_default():
    assert (gemm.GemmConfig().a_load_hint, gemm.GemmConfig().b_load_hint) == ("none", "none")
    gemm.resolve_config(gemm.GemmConfig(a_load_hint="normal", b_load_hint="first"))
    with pytest.raises(gemm.ConfigRejected, match="b_load_hint must be one of"):
        gemm.resolve_config(gemm.GemmConfig(b_load_hint="evict_first"))


def test_an_l2_hint_reaches_only_the_loads_it_names():
    """b_load_hint: B's (multicast) loads carry a policy operand (desc[UR..]); A's stay without
    one (desc[URZ]), as do all loads of the default build."""
    import re

    def loads(config):
        sass = gemm.compile_gemm(config, {"M": 1000, "N": 1024, "K": 1000}, "bfloat16").sass
        return re.findall(r"UTMALDG\.2D(\.MULTICAST)?[^;]*desc\[(\w+)\]", sass)
    plain = loads({})
    hinted = loads({"b_load_hint": "first"})
    assert plain and all(policy == "URZ" for _, policy in plain)
    assert {(bool(mc), policy != "URZ") for mc, policy in hinted} == {(False, False), (True, True)}


def _stream_k_walk(sched, clusters, k_tiles):
    """The pieces each cluster's run walks, as the kernel does: [(work, first k-tile, count)]."""
    runs = []
    for c in range(clusters):
        pos, end = sched.shared_run(c, clusters, k_tiles)
        pieces = []
        while pos < end:
            piece = sched.shared_segment(c, clusters, pos, end, k_tiles)
            pieces.append(piece)
            pos += piece[2]
        runs.append(pieces)
    return runs


@pytest.mark.parametrize("layout", ["runs", "heads"])
@pytest.mark.parametrize("cluster_tiles,clusters,k_tiles", [
    (512, 66, 64),      # 8192x4096x4096 in 128x256 tiles on 2x1 clusters: 50 shared tiles
    (512, 66, 224),     # 8192x4096x14336
    (256, 66, 64),      # 4096^3: 58 shared tiles, 8 helpers for their tails
    (64, 66, 32),       # fewer tiles than clusters: every tile shared
    (70, 66, 17),       # 4 shared tiles: runs of 4-5 k-tiles, up to 5 pieces per tile
    (200, 7, 5),
    (2, 66, 33),        # just enough k-tiles: runs of one k-tile each
])
def test_stream_k_runs_cover_every_k_tile_once(cluster_tiles, clusters, k_tiles, layout):
    """Every shared tile's k-tiles lie in exactly one piece; the piece with a tile's first k-tile
    reduces it, as the last piece of its run; every other piece is a writer whose slot is its
    own, among its tile's slots, and names that reducer; the reducer counts exactly those
    writers; the plan sizes the slots as the scheduler numbers them."""
    from kernelscope.kernels.split_k_plan import stream_k_share_out
    plan = stream_k_share_out(cluster_tiles, clusters, k_tiles, layout)
    assert plan.split_tiles == (cluster_tiles % clusters if cluster_tiles > clusters else cluster_tiles)
    dp = plan.split_from
    sched = TileScheduler(SchedulePolicy((1, 1), "m", 8), cluster_tiles, 1, dp, 1, stream_k=layout)
    assert sched.num_work == dp and sched.shared_tiles == cluster_tiles - dp
    assert sched.max_writers(clusters, k_tiles) == plan.max_writers()
    slots_per_tile = plan.max_writers()
    runs = _stream_k_walk(sched, clusters, k_tiles)
    covered, reducer_of, written = {}, {}, {}
    for c, pieces in enumerate(runs):
        for i, (work, first, count) in enumerate(pieces):
            assert count >= 1 and 0 <= first and first + count <= k_tiles
            for k in range(first, first + count):
                assert (work, k) not in covered
                covered[(work, k)] = c
            if first > 0:
                reducer, slot = sched.piece_writer(c, clusters, work, k_tiles)
                tile = work - dp
                assert slot not in written and tile * slots_per_tile <= slot < (tile + 1) * slots_per_tile
                written[slot] = (work, reducer)
            elif count < k_tiles:
                assert i == len(pieces) - 1, "a reducer's piece is the last of its run"
                reducer_of[work] = c
    assert set(covered) == {(w, k) for w in range(dp, cluster_tiles) for k in range(k_tiles)}
    for work in range(dp, cluster_tiles):
        first_slot, writers = sched.tile_writers(work, clusters, k_tiles)
        mine = {s for s, (w, _) in written.items() if w == work}
        assert mine == set(range(first_slot, first_slot + writers)), work
        assert all(written[s][1] == reducer_of[work] for s in mine)
    assert plan.workspace_sizes(1, 128, 256, 8)[0] == plan.split_tiles * slots_per_tile * 128 * 256


def test_stream_k_plan_shares_out_a_short_last_wave():
    from kernelscope.kernels.split_k_plan import stream_k_plan
    # 8192x4096x14336: 512 cluster tiles on 66 clusters, a last wave of 50: shared out.
    p = stream_k_plan(512, 66, 224)
    assert (p.split_from, p.split_tiles, p.clusters) == (462, 50, 66)
    # 2048^3: 64 tiles on 66 clusters save 3 % of a 32-k-tile mainloop, less than the exchange.
    assert stream_k_plan(64, 66, 32).split_tiles == 0
    # Full last wave, or a single k-tile: nothing to share.
    assert stream_k_plan(132, 66, 64).split_tiles == 0
    assert stream_k_plan(70, 66, 1).split_tiles == 0
    # Fewer shared k-tiles than clusters would leave runs empty (a reducer would wait for them).
    from kernelscope.kernels.split_k_plan import stream_k_share_out
    assert stream_k_share_out(70, 66, 3).split_tiles == 0
    assert stream_k_share_out(70, 66, 3, "heads").split_tiles == 0
    # Just enough: 2 tiles x 33 k-tiles for 66 runs: heads of 1 k-tile, 64 helpers for 64 tail k-tiles.
    assert stream_k_share_out(2, 66, 33, "heads").split_tiles == 2
    assert stream_k_plan(70, 66, 17).split_tiles == 4


def test_stream_k_excludes_the_other_splits_and_compiles():
    with pytest.raises(gemm.ConfigRejected):
        gemm.resolve_config(gemm.GemmConfig(stream_k=True, tail_split=True))
    with pytest.raises(gemm.ConfigRejected):
        gemm.resolve_config(gemm.GemmConfig(stream_k=True, splits=2))
    with pytest.raises(gemm.ConfigRejected, match="stream_k_layout"):
        gemm.resolve_config(gemm.GemmConfig(stream_k=True, stream_k_layout="tiles"))
    heads = gemm.compile_gemm({"stream_k": True, "stream_k_layout": "heads", "epi_n": 64})
    assert {"STG", "LDG"} <= opcodes(heads.sass)
    ck = gemm.compile_gemm({"stream_k": True, "epi_n": 64}, {"M": 8192, "N": 4096, "K": 4096})
    ops = opcodes(ck.sass)
    # The partial sums go through global memory (stores and loads of the exchange) and the
    # counters are raised with a reduction; the plain variant has none of these.
    assert {"STG", "LDG", "RED"} <= ops or {"STG", "LDG", "REDG"} <= ops


def test_stream_k_where_the_last_wave_was_measured_to_gain():
    """Stream-K where the H200 measured it ahead of the whole last wave and of the tail plan
    (kernels/gemm/NOTES.md, stream-K): a last wave about half full, or three quarters full over a
    long K; not where the last wave is nearly full (4096^3 0.97, 4096x4096x8192 0.94 of the whole
    wave's time) or three quarters full over 64 k-tiles (no gain)."""
    def picked(M, N, K):
        c = gemm.heuristic_config({"M": M, "N": N, "K": K}, 132)
        return c.stream_k, c.tail_split
    def layout(M, N, K):
        return gemm.heuristic_config({"M": M, "N": N, "K": K}, 132).stream_k_layout
    for shape in [(8192, 8192, 8192), (8192, 8192, 4096), (8192, 4096, 11008), (8192, 4096, 14336),
                  (4096, 8192, 16384), (8192, 4096, 8192)]:
        assert picked(*shape) == (True, False), shape
    # The heads layout only over >= 200 k-tiles (measured ahead at 224 and 256, level at 172,
    # behind at 128 and below).
    assert [layout(8192, 4096, 14336), layout(4096, 8192, 16384)] == ["heads", "heads"]
    assert [layout(8192, 4096, 11008), layout(8192, 4096, 8192), layout(8192, 8192, 8192)] == ["runs"] * 3
    for shape in [(8192, 8192, 8192), (8192, 8192, 4096), (8192, 4096, 11008), (8192, 4096, 14336),
                  (4096, 8192, 16384)]:
        c = gemm.heuristic_config(dict(zip("MNK", shape)), 132)
        assert gemm.split_plan(c, *shape, 66).split_tiles > 0
    for shape in [(4096, 4096, 4096), (4096, 4096, 8192), (6144, 4096, 8192), (8192, 11008, 4096),
                  (8192, 4096, 4096), (2048, 2048, 2048), (512, 4096, 4096)]:
        assert not picked(*shape)[0], shape
    assert not gemm.heuristic_config({"M": 8192, "N": 8192}, 132).stream_k     # no K: no plan
