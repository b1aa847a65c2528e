"""Fused RMSNorm -> GEMM on the GPU against an fp32 reference. The rows of X have norms spread
over six decades, so a row scale applied to the wrong row, or along columns, or not at all, is
off by orders of magnitude; partial tiles in M, N and K; both A-buffer schedules; the pingpong
schedule (CTAs with one tile, so the second warpgroup has none, and with odd and even tile counts);
clusters; an (N, K) weight; fp16; zero rows; every output element written (the output starts as NaN)."""

import os

import pytest
import torch

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (sm_90)"),
]

from gemm_testing import launch_spec_default  # noqa: E402
from kernelscope.kernels import gemm_rmsnorm as fused  # noqa: E402

FAST = pytest.mark.gpu_fast     # the fast GPU tier (README, "GPU tests")

# Output rounding (relative, bf16 / fp16) plus the rounding of W' = g * W and of the GEMM's
# inputs: compared per row against the row's RMS, which rmsnorm makes O(1) for every row.
_ROW_REL = {"bfloat16": 1e-2, "float16": 2e-3}
_ELEM = {"bfloat16": 2 ** -6, "float16": 2 ** -8}


def check(config, M, N, K, dtype="bfloat16", seed=0, w_major="n", zero_rows=(), decades=3.0):
    inputs = fused.make_inputs({"M": M, "N": N, "K": K}, dtype, seed=seed, row_scale_decades=decades)
    for r in zero_rows:
        inputs["x"][r].zero_()
    if w_major == "k":
        inputs["w"] = inputs["w"].t().contiguous()             # (N, K), as an nn.Linear weight
    cfg = fused.GemmRmsNormConfig.from_mapping(config)
    fused.bind_gemm_rmsnorm(cfg, inputs)()
    torch.cuda.synchronize()
    got = inputs["out"].double()
    ref = fused.reference_fp32(inputs).double()
    assert torch.isfinite(got).all(), f"{(~torch.isfinite(got)).sum().item()} elements never written or not finite"
    row_rms = ref.pow(2).mean(dim=1, keepdim=True).sqrt().clamp_min(1e-30)
    for r in zero_rows:
        assert got[r].abs().max().item() == 0.0, f"row {r} of X is zero but its output is not"
    live = row_rms.squeeze(1) > 1e-20
    err = (got - ref).abs()
    row_err = (err.pow(2).mean(dim=1).sqrt() / row_rms.squeeze(1))[live]
    worst = int(row_err.argmax())
    assert row_err.max().item() < _ROW_REL[dtype], (
        f"worst row {torch.nonzero(live)[worst].item()}: rel rms error {row_err.max().item():.3g}")
    bad = (err > _ELEM[dtype] * (ref.abs() + row_rms))[live]
    assert not bad.any(), f"{bad.sum().item()} elements off, first at {tuple(bad.nonzero()[0].tolist())}"
    rel = ((got - ref).norm() / ref.norm()).item()
    assert rel < _ROW_REL[dtype] / 2, rel
    return rel


@pytest.mark.parametrize("M,N,K", [
    (1, 8, 8),                # one row, K below one k-tile
    (127, 264, 72),           # partial tiles in M, N and K
    (300, 520, 4104),         # long K with a partial last k-tile, odd number of k-tiles
    (1000, 1032, 1000),
    (4096, 4096, 512),        # more tiles than CTAs: several tiles per CTA, fresh sums per tile
])
@pytest.mark.parametrize("schedule", [{"pingpong": False}, {"pingpong": True}], ids=["cooperative", "pingpong"])
def test_shapes(M, N, K, schedule):
    check(schedule, M, N, K, seed=M + N + K)


@pytest.mark.parametrize("config", [
    {"a_buffers": 1},
    {"cluster": (1, 1), "tile_n": 128},
    {"cluster": (1, 2), "raster": "row"},
    pytest.param({"group": 1, "stages": 3}, marks=FAST),
    pytest.param({"pingpong": True, "a_buffers": 1}, marks=FAST),
    pytest.param({"pingpong": True, "cluster": (1, 1), "tile_n": 128}, marks=FAST),
    pytest.param({"pingpong": True, "cluster": (1, 2), "raster": "row"}, marks=FAST),
    {"pingpong": True, "cluster": (4, 1), "epi_stages": 2},
], ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_configs(config):
    check(config, 520, 1096, 840, seed=11)


@pytest.mark.parametrize("schedule", [{"pingpong": False}, {"pingpong": True}], ids=["cooperative", "pingpong"])
def test_weight_given_as_n_by_k_and_fp16(schedule):
    check(schedule, 384, 776, 520, dtype="float16", w_major="k", seed=4)


@pytest.mark.parametrize("schedule", [{"pingpong": False}, {"pingpong": True}], ids=["cooperative", "pingpong"])
def test_zero_rows_and_huge_norm_spread(schedule):
    check(schedule, 256, 512, 1024, zero_rows=(0, 9, 130), decades=4.0, seed=8)


def test_pingpong_many_tiles_per_warpgroup_and_ring_wraps():
    # 64-row tiles: 128 x 12 tiles over at most 132 CTAs (about 12 per CTA, 6 per warpgroup),
    # and 33 k-tiles per tile, which is not a multiple of any ring depth: each warpgroup's skip
    # over the other's k-tiles crosses the ring's wrap at a different stage every tile.
    check({"pingpong": True}, 8192, 3000, 2056, seed=21)


def test_spec_launch_matches_reference():
    spec = fused.GEMM_RMSNORM_SPEC
    inputs, out = launch_spec_default(spec, {"M": 512, "N": 512, "K": 512}, seed=0)
    ref = spec.reference_fp32(inputs)
    assert ((out.float() - ref).norm() / ref.norm()).item() < 5e-3
    torch_out = spec.torch_reference(inputs).float()
    assert ((torch_out - ref).norm() / ref.norm()).item() < 5e-3
