"""Hopper GEMM correctness on the GPU against an fp32 torch reference: every input and output
dtype, both major orders of A and B, odd and partial-tile shapes, and the config knobs
(tiles, clusters, raster, group, stages, epilogue subtiles)."""

import os

import pytest
import torch

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (sm_90)"),
]

from gemm_testing import assert_matches_float64_product, launch_spec_default  # noqa: E402
from kernelscope.kernels import gemm  # noqa: E402

FAST = pytest.mark.gpu_fast     # the fast GPU tier (README, "GPU tests")

# Elementwise tolerance: output rounding (relative) plus a small absolute floor for entries
# near zero; fp32 output only differs from the reference by summation order.
_RTOL = {"bfloat16": 2 ** -7, "float16": 2 ** -10, "float32": 1e-4}
_ATOL = 1e-2


def _operands(M, N, K, dtype, a_major, b_major, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    tdt = getattr(torch, dtype)
    a = torch.randn((M, K), generator=g).to(tdt)
    b = torch.randn((K, N), generator=g).to(tdt)
    a = a.cuda() if a_major == "k" else a.t().contiguous().cuda().t()
    b = b.cuda() if b_major == "n" else b.t().contiguous().cuda().t()
    return a, b


def _check(config, M, N, K, dtype="bfloat16", out_dtype=None, a_major="k", b_major="n", seed=0):
    out_dtype = out_dtype or dtype
    a, b = _operands(M, N, K, dtype, a_major, b_major, seed)
    assert gemm.major_of_a(a) == a_major and gemm.major_of_b(b) == b_major
    out = torch.full((M, N), float("nan"), dtype=getattr(torch, out_dtype), device="cuda")
    cfg = gemm.GemmConfig.from_mapping(config)
    gemm.bind_gemm(cfg, {"a": a, "b": b, "out": out})()
    torch.cuda.synchronize()
    assert_matches_float64_product(a, b, out, _RTOL[out_dtype], _ATOL)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("a_major", ["k", "m"])
@pytest.mark.parametrize("b_major", ["n", "k"])
def test_dtypes_and_layouts(dtype, out_dtype, a_major, b_major):
    # 3 x 5 tiles of 128x256 with partial tiles in M and N and a partial K tile.
    _check({}, 328, 1096, 840, dtype, out_dtype, a_major, b_major, seed=1)


@pytest.mark.parametrize("out_dtype,a_major,b_major", [("float32", "m", "k"), ("float16", "k", "k")])
def test_two_atom_tile_dtypes_and_layouts(out_dtype, a_major, b_major):
    # 256x128 tiles (two m64 atoms per warpgroup): 2 x 9 tiles, partial in M, N and K.
    _check({"tile_m": 256, "tile_n": 128}, 328, 1096, 840, "float16", out_dtype, a_major, b_major, seed=2)


@pytest.mark.parametrize("M,N,K", [
    (1, 8, 8),            # a single row, K below one k-tile
    (127, 264, 72),       # partial in all three
    (129, 136, 4104),     # long K with a partial last k-tile
    (2053, 2056, 520),    # many tiles, partial edges
    (4096, 4096, 256),    # more tiles than CTAs: persistent loop with several tiles per CTA
])
def test_odd_shapes(M, N, K):
    _check({}, M, N, K, seed=M + N + K)


@pytest.mark.parametrize("config", [
    {"cluster": (1, 1)},
    {"cluster": (1, 2)},
    {"cluster": (2, 2)},
    {"tile_n": 128},
    pytest.param({"tile_n": 192, "cluster": (1, 2)}, marks=FAST),
    pytest.param({"tile_m": 64, "tile_n": 128, "consumer_wgs": 1}, marks=FAST),
    {"tile_m": 64, "tile_n": 256, "consumer_wgs": 1, "cluster": (2, 1)},
    pytest.param({"raster": "row", "group": 3}, marks=FAST),
    {"raster": "column", "group": 1},
    {"stages": 2},
    pytest.param({"stages": 3, "epi_n": 64, "epi_stages": 2}, marks=FAST),
    pytest.param({"epi_n": 64}, marks=FAST),          # the heuristic's pick for big shapes
    {"epi_n": 16},
    {"epi_stages": 1},
    {"epi_stages": 2},
    pytest.param({"tile_n": 64}, marks=FAST),           # the heuristic's pick where 128x128 fills < half a wave
    pytest.param({"a_load_hint": "normal", "b_load_hint": "first"}, marks=FAST),   # L2 hints on the TMA loads
    # Two m64 atoms per warpgroup: the epilogue stores row blocks of the MMA's height.
    pytest.param({"tile_m": 256, "tile_n": 128, "cluster": (1, 2)}, marks=FAST),
    {"tile_m": 256, "tile_n": 128, "epi_n": 64, "epi_stages": 2},
    {"tile_m": 128, "tile_n": 128, "consumer_wgs": 1, "cluster": (1, 1)},
])
def test_configs(config):
    _check(config, 1000, 3000, 1000, seed=7)
    _check(config, 3000, 1000, 200, a_major="m", b_major="k", seed=8)


@pytest.mark.parametrize("config,M,N,K", [
    # One tile per CTA (one wave of 8 x 8 tiles): every tile stored through the ring.
    pytest.param({"ring_epi_n": 64}, 1024, 2048, 1000, marks=FAST),
    # Several tiles per CTA: the earlier ones through the epilogue's buffers, the last through the ring.
    ({"ring_epi_n": 64}, 4096, 4096, 256),
    # Partial tiles on every edge, an N-wise cluster (A multicast into the peer's ring), 32 columns.
    ({"ring_epi_n": 32, "cluster": (1, 2), "tile_n": 128}, 1000, 3000, 1000),
    # Two m64 atoms a warpgroup; one consumer warpgroup.
    ({"ring_epi_n": 64, "tile_m": 256, "tile_n": 128, "cluster": (1, 2)}, 2000, 2200, 1000),
    ({"ring_epi_n": 64, "tile_m": 64, "tile_n": 128, "consumer_wgs": 1}, 520, 4096, 1000),
])
def test_last_tile_stored_through_the_ring(config, M, N, K):
    _check(config, M, N, K, seed=M + N)


@pytest.mark.parametrize("out_dtype,a_major,b_major", [("float32", "m", "k"), ("float16", "k", "n")])
def test_last_tile_through_the_ring_dtypes_and_layouts(out_dtype, a_major, b_major):
    # fp32: the tile's 128 KB span the ring's A stages into its B stages.
    _check({"ring_epi_n": 64}, 1000, 2048, 840, "float16", out_dtype, a_major, b_major, seed=5)


def test_spec_launch_writes_out():
    spec = gemm.GEMM_SPEC
    inputs, out = launch_spec_default(spec, {"M": 520, "N": 264, "K": 136}, seed=3)
    ref = spec.reference_fp32(inputs)
    assert out is inputs["out"]
    assert torch.allclose(out.float(), ref, atol=_ATOL, rtol=_RTOL["bfloat16"])


@pytest.mark.parametrize("config,M,N,K", [
    # Skinny: 2 x 32 tiles of 64x128, two slices of K each, B multicast over the cluster.
    pytest.param({"tile_m": 64, "tile_n": 128, "consumer_wgs": 1, "splits": 2}, 128, 4096, 4096, marks=FAST),
    # Three uneven slices (13 k-tiles), partial tiles on every edge, an edge cluster past M.
    ({"tile_m": 64, "tile_n": 128, "consumer_wgs": 1, "splits": 3, "cluster": (2, 1)}, 130, 1000, 832),
    # Two consumer warpgroups, N-wise cluster, more work items than CTAs (persistent loop).
    ({"splits": 4, "cluster": (1, 2), "tile_n": 128}, 1024, 2048, 1024),
    # More slices than k-tiles: the empty slices add zeros.
    ({"splits": 4, "tile_m": 64, "tile_n": 256, "consumer_wgs": 1}, 64, 512, 136),
    # The last partial wave's tiles only: 70 cluster tiles of 128x256 on 66 clusters (132 SMs).
    pytest.param({"tail_split": True}, 2560, 1792, 2000, marks=FAST),
    # ... with partial tiles on the edges and an N-wise cluster.
    ({"tail_split": True, "tile_n": 128, "cluster": (1, 2)}, 2000, 2200, 1000),
    # Stream-K: the last wave's 4 cluster tiles (of 70) in 66 runs of ~2 k-tiles, so a tile has
    # up to 17 pieces and most runs are a single writer's piece.
    pytest.param({"stream_k": True, "epi_n": 64}, 2560, 1792, 2000, marks=FAST),
    # ... partial tiles on every edge, an N-wise cluster (A multicast), 12 shared of 144.
    ({"stream_k": True, "tile_n": 128, "cluster": (1, 2)}, 2000, 2200, 1000),
    # ... a suite shape: 58 shared tiles of 256, runs of ~56 k-tiles over two tiles each.
    ({"stream_k": True, "epi_n": 64}, 4096, 4096, 4096),
    # The heads layout: 4 heads of 1 k-tile, 62 helpers over the 4 tails of 31 (16-17 writers a tile).
    pytest.param({"stream_k": True, "stream_k_layout": "heads", "epi_n": 64}, 2560, 1792, 2000, marks=FAST),
    # ... partial tiles, a 1x2 cluster; and 4096^3: 58 heads of 56 k-tiles, 8 helpers over the tails.
    ({"stream_k": True, "stream_k_layout": "heads", "tile_n": 128, "cluster": (1, 2)}, 2000, 2200, 1000),
    ({"stream_k": True, "stream_k_layout": "heads", "epi_n": 64}, 4096, 4096, 4096),
    # Two m64 atoms per warpgroup: the exchanges move all of a thread's accumulators.
    ({"stream_k": True, "tile_m": 256, "tile_n": 128, "cluster": (1, 2)}, 2000, 2200, 1000),
    ({"splits": 3, "tile_m": 256, "tile_n": 128}, 600, 1000, 2000),
])
def test_split_k(config, M, N, K):
    """Slices of K reduced in-kernel. Launched twice from one launcher: the second launch
    proves the counters went back to zero (a stale counter would add garbage or hang)."""
    cfg = gemm.GemmConfig.from_mapping(config)
    split = gemm.split_plan(cfg, M, N, K, gemm.max_active_clusters(tuple(cfg.cluster)))
    assert split.split_tiles > 0 and (split.slices > 1 or cfg.stream_k), \
        f"the shape does not exercise split-K here: {split}"
    a, b = _operands(M, N, K, "bfloat16", "k", "n", seed=M + K)
    out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    launch = gemm.bind_gemm(cfg, {"a": a, "b": b, "out": out})
    launch()
    torch.cuda.synchronize()
    assert_matches_float64_product(a, b, out, _RTOL["bfloat16"], _ATOL)
    assert int(launch.split_k_workspace[1].abs().sum()) == 0
    out.fill_(float("nan"))
    launch()
    torch.cuda.synchronize()
    assert_matches_float64_product(a, b, out, _RTOL["bfloat16"], _ATOL)
