"""The variant `inspect`, the SASS digests and the per-line view read (compiled from fake
operands) is the code a GPU run launches (compiled from real tensors with dynamic layouts):
the same SASS. Checked without a GPU: host tensors stand in for the device ones, since a
compile reads only their dtypes and layouts."""

import os
import re

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
torch = pytest.importorskip("torch")
pytest.importorskip("cutlass")


def _instructions(compiled) -> list[str]:
    from kernelscope.toolchain.sass import disassemble_cubin

    sass = disassemble_cubin(compiled.__cubin__)
    if sass is None:
        pytest.skip("nvdisasm is not installed")
    return [re.sub(r"/\*[0-9a-f]+\*/", "", ln).strip() for ln in sass.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", ln)]


def test_the_gemm_launched_from_tensors_is_the_gemm_inspected():
    import cutlass.cute as cute

    from kernelscope.kernels import gemm
    from kernelscope.kernels.cute_build import artifact_options, fake_gemm_operands, fake_stream, to_cute
    from kernelscope.kernels.gemm.kernel import HopperGemm

    resolved = gemm.resolve_config(gemm.GemmConfig.from_mapping({}), "bfloat16")
    inspected = cute.compile(HopperGemm(resolved, "bfloat16", "bfloat16"),
                             *fake_gemm_operands("bfloat16", "bfloat16", "k", "n"), 1, fake_stream(),
                             options=artifact_options("kernelscope-test-"))
    a = torch.empty((256, 256), dtype=torch.bfloat16)
    b_nk = torch.empty((256, 256), dtype=torch.bfloat16).t()     # B (K, N) row-major, seen as (N, K)
    c = torch.empty((256, 256), dtype=torch.bfloat16)
    launched = cute.compile(HopperGemm(resolved, "bfloat16", "bfloat16"), to_cute(a), to_cute(b_nk), to_cute(c), 1,
                            fake_stream(), options=artifact_options("kernelscope-test-"))
    inspected_sass, launched_sass = _instructions(inspected), _instructions(launched)
    assert len(inspected_sass) > 500
    assert launched_sass == inspected_sass
