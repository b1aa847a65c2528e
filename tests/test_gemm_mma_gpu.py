"""gemm_mma correctness on the GPU against a float64 reference: both input dtypes, both major
orders of B, the config knobs (tiles, warps, wk_iters, stages, raster orders, stream-K) and odd
shapes (partial tiles in M, N and K, one k-tile, more tiles than blocks)."""

import os

import pytest
import torch

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (sm_90 or sm_120)"),
]

from gemm_testing import assert_matches_float64_product, launch_spec_default  # noqa: E402
from kernelscope.kernels import gemm_mma  # noqa: E402

_RTOL = {"bfloat16": 2 ** -7, "float16": 2 ** -10}
_ATOL = 1e-2


def _operands(M, N, K, dtype, b_major, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    tdt = getattr(torch, dtype)
    a = torch.randn((M, K), generator=g).to(tdt).cuda()
    b = torch.randn((K, N), generator=g).to(tdt)
    b = b.cuda() if b_major == "n" else b.t().contiguous().cuda().t()
    out = torch.full((M, N), float("nan"), dtype=tdt, device="cuda")
    return a, b, out


def _check(config, M, N, K, dtype="bfloat16", b_major="n", seed=0):
    a, b, out = _operands(M, N, K, dtype, b_major, seed)
    cfg = gemm_mma.MmaGemmConfig.from_mapping(config)
    gemm_mma.bind_gemm_mma(cfg, {"a": a, "b": b, "out": out})()
    torch.cuda.synchronize()
    assert_matches_float64_product(a, b, out, _RTOL[dtype], _ATOL)


@pytest.mark.parametrize("M,N,K", [
    (1, 8, 8),            # one row, K below one k-tile
    (127, 264, 72),       # partial in all three
    (200, 1000, 64),      # exactly one k-tile: the loads run one work tile ahead
    (129, 136, 4104),     # long K with a partial last k-tile
    (2053, 2056, 520),    # many tiles, partial edges
    (4096, 4096, 256),    # more tiles than blocks: several tiles per block
])
def test_default_config_odd_shapes(M, N, K):
    _check({}, M, N, K, seed=M + N + K)


@pytest.mark.parametrize("dtype,b_major", [("float16", "n"), ("bfloat16", "k"), ("float16", "k")])
def test_dtypes_and_b_major(dtype, b_major):
    _check({}, 328, 1096, 840, dtype, b_major, seed=1)


def test_k_major_b_with_n_not_a_multiple_of_8():
    """A K-major B promises only an even N: the launched variant is compiled for that, and its
    paired stores must stop at the right column (N = 8k + 2 leaves a lone pair in the last group)."""
    _check({}, 328, 1090, 840, "bfloat16", "k", seed=2)


_CONFIGS = {
    "wk2-morton": {"wk_iters": 2, "raster": "morton"},
    "tile128-wk4": {"tile_n": 128, "wk_iters": 4},          # every k-block of a stage in registers
    "tile256x128": {"tile_m": 256, "tile_n": 128, "warps_m": 4, "warps_n": 2},
    "stages2": {"stages": 2},
    "stages2-wk2-refill2": {"stages": 2, "wk_iters": 2, "refill_at": 2},   # refill right at the wait
    "row4": {"raster": "row", "group": 4},
    "column1": {"raster": "column", "group": 1},
    "morton2": {"raster": "morton", "group": 2},
}


# The fast GPU tier (README, "GPU tests"): together they move every knob of the config space.
_FAST = {"tile128-wk4", "tile256x128", "stages2-wk2-refill2", "morton2"}


@pytest.mark.parametrize("config", [pytest.param(c, id=name, marks=[pytest.mark.gpu_fast] if name in _FAST else [])
                                    for name, c in _CONFIGS.items()])
def test_configs(config):
    _check(config, 1000, 3000, 1000, seed=7)


@pytest.mark.parametrize("fields", gemm_mma.SHAPE_CANDIDATES, ids=lambda f: f"{f.get('tile_m', 128)}x{f.get('tile_n', 256)}")
def test_per_shape_candidates_on_a_skinny_shape_with_partial_tiles(fields):
    _check(fields, 130, 4104, 520, seed=11)


def test_grid_is_one_block_per_sm():
    cfg = gemm_mma.MmaGemmConfig()
    blocks, res = gemm_mma.persistent_grid(cfg, "bfloat16", "n")
    assert res["resident_blocks_per_sm"] == 1
    assert blocks == torch.cuda.get_device_properties(0).multi_processor_count


def test_spec_launch_writes_out():
    spec = gemm_mma.GEMM_MMA_SPEC
    inputs, out = launch_spec_default(spec, {"M": 520, "N": 264, "K": 136}, seed=3)
    assert out is inputs["out"]
    assert torch.allclose(out.float(), spec.reference_fp32(inputs), atol=_ATOL, rtol=_RTOL["bfloat16"])


@pytest.mark.parametrize("config,M,N,K,dtype,b_major", [
    # 140 tiles of 128x256 on 132 blocks: the last 8 tiles' 32 k-tiles in 132 runs of ~2, so a
    # tile has up to 17 pieces and most runs are one writer's piece.
    pytest.param({"stream_k": True}, 2560, 1792, 2000, "bfloat16", "n", marks=[pytest.mark.gpu_fast]),
    # ... with pieces of one k-tile through a two-stage ring, fragments two k-blocks ahead.
    ({"stream_k": True, "stages": 2, "wk_iters": 2, "refill_at": 2}, 2560, 1792, 2000, "bfloat16", "n"),
    # Runs of ~7.6 k-tiles over 125-k-tile tiles: loads run on into the next piece where it
    # holds at least three k-tiles, and a short piece at a tile's edge fills the ring itself.
    ({"stream_k": True}, 2560, 1792, 8000, "bfloat16", "n"),
    # Partial tiles on every edge, 12 shared of 144, fp16 with a K-major B.
    ({"stream_k": True}, 2000, 2200, 1000, "float16", "k"),
    # Fewer tiles than blocks: all 96 tiles are shared out and no block runs a whole tile.
    ({"stream_k": True, "raster": "morton"}, 1000, 3000, 1000, "bfloat16", "n"),
    # A suite shape: 116 shared tiles of 512, runs of ~56 k-tiles over one or two tiles; the
    # last whole tile's loads run on into the first piece.
    ({"stream_k": True}, 4096, 4096, 4096, "bfloat16", "n"),
])
def test_stream_k(config, M, N, K, dtype, b_major):
    """The last wave's tiles shared out as runs of k-tiles. Launched twice from one launcher: the
    second launch proves the counters went back to zero (a stale counter would add garbage or
    hang)."""
    cfg = gemm_mma.MmaGemmConfig.from_mapping(config)
    blocks, _ = gemm_mma.persistent_grid(cfg, dtype, b_major)
    share_out = gemm_mma.stream_k_share_out_of(cfg, M, N, K, blocks)
    assert share_out.split_tiles > 0, f"the shape does not exercise stream-K here: {share_out}"
    a, b, out = _operands(M, N, K, dtype, b_major, seed=M + K)
    launch = gemm_mma.bind_gemm_mma(cfg, {"a": a, "b": b, "out": out})
    launch()
    torch.cuda.synchronize()
    assert_matches_float64_product(a, b, out, _RTOL[dtype], _ATOL)
    assert int(launch.stream_k_workspace[1].abs().sum()) == 0
    out.fill_(float("nan"))
    launch()
    torch.cuda.synchronize()
    assert_matches_float64_product(a, b, out, _RTOL[dtype], _ATOL)


@pytest.mark.parametrize("config,M,N,K,dtype,b_major", [
    # 2x1: the blocks of a cluster column share B; 1000 rows are 8 M tiles, 3000 columns 12 N
    # tiles of 256 (the last partial): 48 cluster tiles, several per cluster on a small grid.
    pytest.param({"cluster": [2, 1]}, 1000, 3000, 1000, "bfloat16", "n", marks=[pytest.mark.gpu_fast]),
    # An odd number of M tiles: the second block of the last cluster row has no rows to store.
    ({"cluster": [2, 1]}, 1100, 1000, 520, "bfloat16", "n"),
    # 1x2: the blocks of a cluster row share A; an odd number of N tiles, fp16 with a K-major B.
    ({"cluster": [1, 2]}, 1000, 2800, 1000, "float16", "k"),
    # Two stages and fragments two k-blocks ahead: every refill waits for both blocks' releases.
    ({"cluster": [2, 1], "stages": 2, "wk_iters": 2, "refill_at": 2}, 2048, 2048, 2048, "bfloat16", "n"),
    # A suite shape, 8192^3's tile over 256 cluster tiles on 66 clusters.
    ({"cluster": [2, 1]}, 4096, 4096, 4096, "bfloat16", "n"),
])
def test_cluster_multicast(config, M, N, K, dtype, b_major):
    """Clusters of two blocks loading their share of each shared k-tile and multicasting it;
    launched twice (the ring's barriers start over in every launch)."""
    cfg = gemm_mma.MmaGemmConfig.from_mapping(config)
    blocks, _ = gemm_mma.persistent_grid(cfg, dtype, b_major)
    assert blocks % 2 == 0 and blocks <= torch.cuda.get_device_properties(0).multi_processor_count
    a, b, out = _operands(M, N, K, dtype, b_major, seed=M + N)
    launch = gemm_mma.bind_gemm_mma(cfg, {"a": a, "b": b, "out": out})
    for _ in range(2):
        out.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        assert_matches_float64_product(a, b, out, _RTOL[dtype], _ATOL)
