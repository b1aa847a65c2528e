"""Compile-only checks of the fused RMSNorm -> GEMM (no GPU needed): the SASS has the
instructions the design relies on (WGMMA with A from registers, TMA loads and stores, ldmatrix,
the quad shuffles of the row reduction) and no local memory; the register layouts the row
scaling relies on hold (refused configs and shapes: test_gemm_refusals.py); the references agree on the CPU."""

import os
import re

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from gemm_testing import assert_no_stack_or_local_memory, opcodes, opcodes_with_modifiers  # noqa: E402
from kernelscope.kernels import gemm_rmsnorm as fused  # noqa: E402
from kernelscope.kernels.sm90.barriers import GemmBarrier  # noqa: E402

_HGMMA = re.compile(r"HGMMA\.\S+\s+(R\d+),\s*(\S+?),")


VARIANTS = [
    ({}, "bfloat16"),                                                           # 128x256, 2x1, two A buffers
    ({"a_buffers": 1, "cluster": (1, 2), "w_major": "k"}, "float16"),
    ({"tile_n": 128, "cluster": (1, 1), "raster": "row"}, "bfloat16"),
    ({"pingpong": True}, "bfloat16"),
    ({"pingpong": True, "a_buffers": 1, "tile_n": 128, "cluster": (1, 2), "w_major": "k"}, "float16"),
]


@pytest.mark.parametrize("config,dtype", VARIANTS)
def test_sass_has_register_a_wgmma_tma_and_no_local_memory(config, dtype):
    ck = fused.compile_gemm_rmsnorm(config, {"M": 1000, "N": 1032, "K": 1000}, dtype)
    assert ck.cubin and ck.sass, "compile produced no cubin / SASS"
    ops = opcodes(ck.sass)
    missing = [op for op in ("HGMMA", "UTMALDG", "UTMASTG", "LDSM", "SHFL", "MUFU") if op not in ops]
    assert not missing, f"SASS lacks {missing}"
    assert not ops & {"LDL", "STL"}, "local memory traffic in SASS"
    # Every WGMMA takes A from registers (a register operand, not a shared-memory descriptor).
    operands = _HGMMA.findall(ck.sass)
    assert operands, "no HGMMA operands parsed"
    assert all(a.startswith("R") for _, a in operands), f"HGMMA A operands: {sorted({a for _, a in operands})}"
    assert_no_stack_or_local_memory(ck.cubin)
    assert set(fused.GEMM_RMSNORM_SPEC.expected_sass) <= ops


def test_row_maps_of_register_a_wgmma():
    """A thread's A registers and accumulators lie in the same two rows (r, r + 8), with the same
    value -> row map in every thread, and the four lanes of a quad share them: the facts the
    shuffle reduction and the epilogue scaling rely on."""
    import cutlass
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.cute.nvgpu import OperandMajorMode, warpgroup

    seen = {}

    @cute.jit
    def trace():
        for n in (128, 256):
            mma = sm90_utils.make_trivial_tiled_mma(
                cutlass.BFloat16, cutlass.BFloat16, OperandMajorMode.K, OperandMajorMode.MN,
                cutlass.Float32, (2, 1, 1), tiler_mn=(64, n), a_source=warpgroup.OperandSource.RMEM)
            seen[n] = fused.row_maps(mma, 256, 128)

    trace()
    for n, (a_half, c_half) in seen.items():
        assert len(a_half) == 8 and sorted(a_half) == [0, 0, 0, 0, 1, 1, 1, 1]
        assert len(c_half) == n // 2 and c_half.count(1) == n // 4


def test_row_maps_of_one_warpgroup_pingpong_mma():
    """The pingpong schedule gives each warpgroup a whole 64-row tile (one-warpgroup MMA): the
    same two-rows-per-thread, one-quad-per-row ownership must hold over those 64 rows."""
    import cutlass
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.cute.nvgpu import OperandMajorMode, warpgroup

    seen = {}

    @cute.jit
    def trace():
        mma = sm90_utils.make_trivial_tiled_mma(
            cutlass.BFloat16, cutlass.BFloat16, OperandMajorMode.K, OperandMajorMode.MN,
            cutlass.Float32, (1, 1, 1), tiler_mn=(64, 256), a_source=warpgroup.OperandSource.RMEM)
        seen["pingpong"] = fused.row_maps(mma, 128, 64)
        # The cooperative MMA over 128 rows seen as one 64-row tile is wrong: rows 64..127
        # fold onto 0..63 and each row then has two quads.
        coop = sm90_utils.make_trivial_tiled_mma(
            cutlass.BFloat16, cutlass.BFloat16, OperandMajorMode.K, OperandMajorMode.MN,
            cutlass.Float32, (2, 1, 1), tiler_mn=(64, 256), a_source=warpgroup.OperandSource.RMEM)
        try:
            fused.check_rows_owned_by_quads(coop.tv_layout_A_tiled, 256, 8, 64)
        except AssertionError as e:
            seen["folded"] = str(e)

    trace()
    a_half, c_half = seen["pingpong"]
    assert sorted(a_half) == [0, 0, 0, 0, 1, 1, 1, 1] and c_half.count(1) == 64
    assert "not by one quad" in seen["folded"]


def test_rows_owned_by_quads_rejects_split_or_missing_rows():
    # Row r held by lanes r and r + 4 (two quads share each row).
    with pytest.raises(AssertionError, match="one quad"):
        fused.check_rows_owned_by_quads(lambda tv: tv[0] % 4 + 4 * (2 * (tv[0] // 4) + tv[1]), 8, 2, 4)
    # Only half of a 16-row tile covered.
    with pytest.raises(AssertionError, match="covers 8"):
        fused.check_rows_owned_by_quads(lambda tv: tv[0] // 4 + 4 * tv[1], 8, 4, 16)


def test_pingpong_roles_turns_and_epilogue_barriers_in_sass():
    """pingpong: the producer warpgroup gives registers back and the consumers take them
    (setmaxnreg), each warpgroup waits for its turn on its own named barrier (256 threads: its
    own 128 plus the other's arrival) and arrives at the other's, each stores through its own
    128-thread epilogue barrier, and a k-tile keeps one WGMMA group in flight (not serialised)."""
    ck = fused.compile_gemm_rmsnorm({"pingpong": True}, {"M": 1000, "N": 1032, "K": 1000})
    sass = ck.sass
    assert re.search(r"USETMAXREG\.DEALLOC\S*\s+0x28\b", sass), "producer does not release registers"
    assert re.search(r"USETMAXREG\.TRY_ALLOC\S*\s+\S+\s+0xe8\b", sass), "consumers do not raise to 232"
    waits = set(re.findall(r"BAR\.SYNC\S*\s+(0x[0-9a-f]+),\s*(0x[0-9a-f]+)", sass))
    arrives = set(re.findall(r"BAR\.ARV\s+(0x[0-9a-f]+),\s*(0x[0-9a-f]+)", sass))
    turns = {(hex(b), "0x100") for b in (GemmBarrier.MMA_TURN_WG0, GemmBarrier.MMA_TURN_WG1)}
    assert turns <= waits and turns <= arrives, (waits, arrives)
    epilogue = {(hex(b), "0x80") for b in (GemmBarrier.EPILOGUE_WG0, GemmBarrier.EPILOGUE_WG1)}
    assert epilogue <= waits, waits
    depbars = re.findall(r"WARPGROUP\.DEPBAR\.LE\s+gsb0,\s*(0x[0-9a-f]+)", sass)
    assert "0x1" in depbars, f"every WGMMA group waited to zero: {depbars}"
    assert_no_stack_or_local_memory(ck.cubin)


def test_pingpong_ring_depth_with_an_epilogue_buffer_per_warpgroup():
    # 64-row stages (40 KiB at tile_n 256) with two sets of epilogue buffers.
    assert fused.ring_stages(fused.GemmRmsNormConfig(pingpong=True)) == 4
    assert fused.ring_stages(fused.GemmRmsNormConfig(pingpong=True, epi_stages=2)) == 5
    assert fused.ring_stages(fused.GemmRmsNormConfig()) == 4


def test_row_halves_rejects_a_layout_without_row_pairs():
    # A fake (thread, value) -> index map over a 128-row tile where each thread's values walk
    # down one column: 8 rows per thread, not the pair (r, r + 8).
    with pytest.raises(AssertionError, match="expected r and r"):
        fused.row_halves(lambda tv: tv[0] // 4 * 8 % 128 + tv[1], 8, 8, 128)
    # Rows paired correctly but quads broken (each thread its own row pair).
    with pytest.raises(AssertionError, match="quad"):
        fused.row_halves(lambda tv: (tv[0] % 8) + 16 * (tv[0] // 8) + 8 * (tv[1] % 2), 16, 2, 128)


def test_registered_and_suite_covers_the_asked_shapes():
    from kernelscope.kernels import registry

    spec = registry.resolve("gemm_rmsnorm")
    assert spec is fused.GEMM_RMSNORM_SPEC
    got = {(s["M"], s["K"], s["N"]) for s in spec.default_shapes}
    assert got == {(m, k, n) for m in (4096, 8192, 16384) for k in (4096, 8192) for n in (4096, 8192)}
    assert spec.references[0] == "rmsnorm+matmul"


def test_fold_gain_keeps_layout_and_values():
    import torch

    g = torch.Generator().manual_seed(3)
    gamma = torch.randn(48, generator=g).to(torch.bfloat16)
    w = torch.randn(48, 40, generator=g).to(torch.bfloat16)
    folded = fused.fold_gain(gamma, w)
    assert folded.stride(1) == 1 and folded.dtype == w.dtype
    want = (gamma.float()[:, None] * w.float()).to(torch.bfloat16)
    assert torch.equal(folded, want)
    w_nk = w.t().contiguous()                  # an nn.Linear weight, seen as (K, N) below
    folded_t = fused.fold_gain(gamma, w_nk.t())
    assert folded_t.stride(0) == 1 and torch.equal(folded_t, want)


def test_references_agree_and_ignore_row_scale_on_cpu():
    """The fp32 reference equals F.rms_norm then matmul in fp32, and, as rmsnorm must, gives the
    same rows whatever the norm of the input rows (the property the GPU tests lean on)."""
    import torch
    import torch.nn.functional as F

    inputs = fused.make_inputs({"M": 64, "N": 32, "K": 96}, "bfloat16", seed=5, device="cpu")
    x = inputs["x"].float()
    norms = x.norm(dim=1)
    assert norms.max() / norms.min() > 1e3, "rows of very different norms are the point"
    ref = fused.reference_fp32(inputs)
    direct = F.rms_norm(x, (96,), inputs["gamma"].float(), fused.DEFAULT_EPS) @ inputs["w"].float()
    torch.testing.assert_close(ref, direct, rtol=1e-5, atol=1e-5)
    # eps = 0 so that the smallest rows (mean square near eps) are invariant too; x 8 is exact.
    no_eps = dict(inputs, eps=0.0)
    rescaled = dict(no_eps, x=inputs["x"] * 8)
    torch.testing.assert_close(fused.reference_fp32(rescaled), fused.reference_fp32(no_eps),
                               rtol=1e-5, atol=1e-5)


def test_the_row_error_measure_catches_a_wrong_row_scale():
    """The per-row error the GPU tests use: the unscaled GEMM, or each row scaled with the
    rstd of the row 8 below (a fragment-row mix-up), is off by far more than the tolerance."""
    import torch

    inputs = fused.make_inputs({"M": 256, "N": 256, "K": 256}, "bfloat16", seed=2, device="cpu")
    ref = fused.reference_fp32(inputs)
    x = inputs["x"].float()
    rstd = torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + fused.DEFAULT_EPS)
    plain = x @ (inputs["gamma"].float()[:, None] * inputs["w"].float())
    row_rms = ref.pow(2).mean(dim=1).sqrt()
    right = plain * rstd
    assert ((right - ref).pow(2).mean(dim=1).sqrt() / row_rms).max().item() < 1e-2
    for wrong in (plain, plain * rstd.roll(8, dims=0), plain * rstd.mean()):
        row_err = (wrong - ref).pow(2).mean(dim=1).sqrt() / row_rms
        assert row_err.max().item() > 1.0


def _idioms(sass: str) -> dict[str, int]:
    from kernelscope.toolchain.sass_idioms import idiom_counts
    lines = [line.split("*/", 1)[1] for line in sass.splitlines() if re.match(r"^\s*/\*[0-9a-f]+\*/", line)]
    return {k: int(v) for k, v in idiom_counts((line, 1) for line in lines).items()}


def test_squares_unpack_each_register_once_by_mask_and_shift():
    # bf16 pairs in one 32-bit register: "bits" takes the high value with a LOP3 mask and the low
    # one with one shift; "cvt" (.to(Float32) per value) paid a PRMT and a shift for the high one.
    shape = {"M": 1000, "N": 1032, "K": 1000}
    bits = fused.compile_gemm_rmsnorm({"square_unpack": "bits"}, shape)
    cvt = fused.compile_gemm_rmsnorm({"square_unpack": "cvt"}, shape)
    values = 2 * 32                     # two k-tiles of a 64x64 A slice per 128 threads, unrolled
    assert _idioms(cvt.sass)["bf16_unpack"] == values
    assert _idioms(bits.sass)["bf16_unpack"] == values // 2
    prmt = [sum(op == "PRMT" for op in opcodes_with_modifiers(ck.sass)) for ck in (cvt, bits)]
    assert prmt[0] - prmt[1] == values // 2
