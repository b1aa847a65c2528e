"""Integer opcodes that are not index math (toolchain/sass_idioms.py): the classifier on SASS as
nvdisasm, cuobjdump and ncu print it, and what it changes in a real profile."""

from pathlib import Path

import pytest

from kernelscope.profiler.catalog import evaluate, load_catalog
from kernelscope.profiler.sources import load_profiles
from kernelscope.toolchain.sass_idioms import BF16_UNPACK, FLOAT_EXPONENT, IMAD_MOVE, idiom, idiom_counts

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("text,kind", [
    ("IMAD.U32 R4, R5, 0x10000, RZ", BF16_UNPACK),
    ("@P0 IMAD.U32 R4, R5, 0x10000, RZ ;", BF16_UNPACK),       # predicated, with the listing's ';'
    ("IMAD.U32 R4,R5,0x10000,RZ", BF16_UNPACK),                # nvdisasm -json operands
    ("IMAD.SHL.U32 R9, R2, 0x10000, RZ", BF16_UNPACK),
    ("SHF.L.U32 R2, R3, 0x10, RZ", BF16_UNPACK),
    ("IMAD.MOV.U32 R1, RZ, RZ, R7", IMAD_MOVE),
    ("IMAD.MOV.U32 R1, RZ, RZ, 0x3f800000", IMAD_MOVE),         # a constant into a register
    ("IMAD.U32 R4, R5, 0x10000, R6", None),                    # x * 65536 + y: arithmetic
    ("IMAD.SHL.U32 R1, R2, 0x10, RZ", None),                   # x * 16: an index
    ("SHF.L.U32 R2, R3, 0x4, RZ", None),
    ("IMAD R1, R2, R3, R4", None),
    ("IMAD.WIDE.U32 R2, R4, 0x10000, RZ", None),
    ("SHF.L.U32 R5, R8, 0x17, RZ", FLOAT_EXPONENT),            # expf's 2^n, as ptxas emits it
    ("IMAD.SHL.U32 R5, R8, 0x800000, RZ", FLOAT_EXPONENT),
    ("SHF.L.U32 R5, R8, 0x17, R2", None),                      # a funnel shift with another word
    ("SHF.L.U64.HI R0, R4, 0x17, R5", None),
    ("LEA R5, R8, R2, 0x17", None),                            # n << 23 plus an addend: left as arithmetic
])
def test_idiom(text, kind):
    assert idiom(text) == kind


def test_counts_are_weighted_by_executions():
    counts = idiom_counts([("IMAD.U32 R4, R5, 0x10000, RZ", 10.0), ("IMAD.MOV.U32 R1, RZ, RZ, R7", 3.0),
                           ("IMAD R1, R2, R3, R4", 100.0)])
    assert counts == {BF16_UNPACK: 10.0, IMAD_MOVE: 3.0, FLOAT_EXPONENT: 0.0}


def test_a_report_with_source_counters_counts_executed_unpacks():
    # The fused RMSNorm GEMM before the "bits" unpack (H100, 8192x4096x4096): one IMAD.U32 x << 16
    # per squared bf16 value, M x K x (N / 256 tiles) / 32 lanes warp instructions; they leave
    # the index-math share.
    (fused,) = load_profiles(FIXTURES / "h100-gemm_rmsnorm-8192x4096x4096.full.json.xz")
    assert fused.value("kernelscope__sass_bf16_unpack") == 8192 * 4096 * (4096 // 256) / 32
    catalog = load_catalog()
    share = evaluate(catalog.metrics["address_math_share"], fused, catalog)
    mix = fused.instruction_mix
    raw = sum(mix.get(op, 0) for op in ("IMAD", "LEA", "IADD3", "VIADD", "SHF", "IABS", "I2F", "F2I"))
    left = raw - fused.value("kernelscope__sass_bf16_unpack") - fused.value("kernelscope__sass_imad_move")
    assert share == pytest.approx(left / sum(mix.values()) * 100)
    assert share < 10 < raw / sum(mix.values()) * 100


def test_a_report_without_per_instruction_counts_has_no_idiom_metric():
    # Six metrics per launch, no per-instruction counts: nothing is claimed either way, and the
    # index-math share (had the mix been collected) would keep every IMAD.
    kernels = load_profiles(FIXTURES / "h200-torch-242-launches.metrics6.ncu-rep.xz")
    assert kernels and all(k.value("kernelscope__sass_bf16_unpack") is None for k in kernels)


def test_a_report_counts_executed_exponent_shifts_and_leaves_them_out_of_index_math():
    # The corpus's same_expf pair re-profiled with SourceCounters (H100): precise expf builds 2^n with
    # SHF.L.U32 n, 0x17, four per warp (262,144 warps). The report reader counted them from the SASS;
    # the index-math share of the slow kernel falls below the fast one's, and the diff of these two
    # same-time kernels names no index math (it claimed 24-39 % of the noise gap before).
    from kernelscope.rules.diagnosis import diagnose
    kernels = {p.name: p for p in load_profiles(FIXTURES / "h100-same-expf-recheck.json.xz")}
    slow, fast = kernels["same_expf_slow"], kernels["same_expf_fast"]
    assert slow.value("kernelscope__sass_float_exponent") == 4 * 262144
    assert fast.value("kernelscope__sass_float_exponent") == 0
    catalog = load_catalog()
    assert catalog.evaluate(slow, "address_math_share") < catalog.evaluate(fast, "address_math_share")
    assert "address-math-vs-reference" not in {f.rule_id for f in diagnose(slow, fast).findings}
