"""Short kernel names: what tells kernels apart, readable in an 80-column header."""

from pathlib import Path

import pytest

from kernelscope.profiler.names import LONGEST, short_name

FIXTURES = Path(__file__).parent / "fixtures"

# (name as ncu gives it, demangled, short) from the shipped H200 reports.
REAL = [
    ("kernel_cutlass_kernel_kernelscopekernelsgemm_kernel_classlocalsHopperGemm_object_at__CopyAtom_ThrID10_"
     "TVLayoutSrc1819201_TVLayoutDst1819201_Valuetypebf16_tensor", None, "HopperGemm"),
    ("kernel_cutlass_kernel_kernelscopekernelsrmsnorm_build_kernel_classlocalsRMSNormRows_object_at__tensorptrbf16"
     "gmemalign16o409640961_tensorptrbf16gmemalign16o40961", None, "RMSNormRows"),
    ("kernel_cutlass_kernel_flash_attncuteflash_fwd_sm90FlashAttentionForwardSm90_object_at__tensor0000o11101213_",
     None, "flash_attn.cute…FlashAttentionForwardSm90"),
    ("kernel_cutlass_kernel___main__GmmaRounds_object_at__TiledMMA_ThrLayoutVMNK1281111000_PermutationMNK____",
     None, "GmmaRounds"),
    ("kernel_cutlass_add_kernel_tensorptrf32gmemo167772161_tensorptrf32gmemo167772161_0", None, "add_kernel"),
    ("kernel_cutlass_warp_mma_kernel_TiledMMA_ThrLayoutVMNK321111000_PermutationMNK____MMAAtom", None,
     "warp_mma_kernel"),
    ("elementwise_kernel",
     "void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl_nocast<at::native::"
     "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>>(at::TensorIteratorBase &, "
     "const T1 &)::[lambda(int) (instance 1)]>(int, T3)", "at::native::elementwise_kernel"),
    ("vectorized_layer_norm_kernel",
     "void at::native::<unnamed>::vectorized_layer_norm_kernel<c10::BFloat16, float, (bool)1>(int, T2, const T1 *)",
     "at::native::vectorized_layer_norm_kernel"),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
     "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
]


@pytest.mark.parametrize("name,demangled,short", REAL, ids=[r[2] for r in REAL])
def test_short_names_of_real_kernels(name, demangled, short):
    assert short_name(name, demangled) == short


def test_an_unknown_long_name_is_cut_not_wrapped():
    name = "my_kernel_" + "x" * 300
    assert len(short_name(name)) == LONGEST and short_name(name).endswith("…")


def test_tables_show_short_names_and_json_keeps_the_full_one():
    import json

    from click.testing import CliRunner

    from kernelscope.cli.main import _register, cli

    _register()
    report = str(FIXTURES / "h200-gemm-vs-cublas-2048.quick.ncu-rep.xz")
    table = CliRunner().invoke(cli, ["diff", report], env={"COLUMNS": "80"}).stdout
    assert "A HopperGemm" in table and "classlocals" not in table
    full = CliRunner().invoke(cli, ["diff", report, "--full-names"], env={"COLUMNS": "80"}).stdout
    assert "classlocalsHopperGemm" in full
    doc = json.loads(CliRunner().invoke(cli, ["diff", report, "--format", "json"]).stdout)
    assert doc["a"]["name"].startswith("kernel_cutlass_kernel_kernelscopekernelsgemm")
    assert doc["a"]["short_name"] == "HopperGemm"


def test_many_kernels_at_80_columns_show_numbers_not_ellipses():
    from click.testing import CliRunner

    from kernelscope.cli.main import _register, cli

    _register()
    out = CliRunner().invoke(cli, ["show", str(FIXTURES / "h200-torch-242-launches.metrics6.ncu-rep.xz")],
                             env={"COLUMNS": "80"}).stdout
    rows = [line for line in out.splitlines() if "│" in line]
    assert len(rows) >= 242
    assert all(len(line) <= 80 for line in out.splitlines())
    # every number column is whole: no cell squeezed to an ellipsis
    cells = [c.strip() for line in rows for c in line.split("│")[2:]]
    assert cells and not any(c.endswith("…") for c in cells)
    assert "left out at 80 columns" in out
