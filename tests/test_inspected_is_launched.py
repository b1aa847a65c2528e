"""The variant `inspect`, the SASS digests and the per-line view read (compiled from fake
operands) against the code a GPU run launches (each kernel's own `_compiled(..., True)`, from
real tensors with dynamic layouts). Checked without a GPU: host tensors stand in for the device
ones and a fake stream for the current one, since a compile reads only types and layouts.

gemm, gemm_rmsnorm and gemm_mma (both B majors) launch exactly what is inspected; flash_attn
differs only in where its kernel parameters sit in the constant bank. gemm_mma did not until its
launched operands declared what its shape check guarantees (K a multiple of 8, N of 8 or 2):
from undeclared extents the compiler stored the output one bf16 at a time behind bounds branches
where the inspected variant stores pairs.
"""

import os
import re

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
torch = pytest.importorskip("torch")
pytest.importorskip("cutlass")

_CONSTANT_OFFSET = re.compile(r"c\[0x0\]\[0x[0-9a-f]+\]")


def _instructions(compiled, mask_parameters: bool) -> list[str]:
    from kernelscope.toolchain.sass import disassemble_cubin

    sass = disassemble_cubin(compiled.__cubin__)
    if sass is None:
        pytest.skip("nvdisasm is not installed")
    out = [re.sub(r"/\*[0-9a-f]+\*/", "", ln).strip() for ln in sass.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", ln)]
    return [_CONSTANT_OFFSET.sub("c[0x0][param]", ln) for ln in out] if mask_parameters else out


@pytest.fixture
def host_tensors_for_the_launched_variant(monkeypatch):
    """The kernels' launched-variant compile, run on the host: tensors made where torch.empty is
    asked for CUDA ones, a fake stream, and no launch cache (an entry compiled this way must
    never be served to a GPU run)."""
    from kernelscope.kernels import cute_build
    import kernelscope.kernels.flash_attn as flash_attn
    import kernelscope.kernels.gemm as gemm
    import kernelscope.kernels.gemm_mma as gemm_mma
    import kernelscope.kernels.gemm_rmsnorm as gemm_rmsnorm

    empty = torch.empty

    def host_empty(*args, **kwargs):
        kwargs.pop("device", None)
        return empty(*args, **kwargs)

    monkeypatch.setenv("KERNELSCOPE_NO_LAUNCH_CACHE", "1")
    monkeypatch.setattr(torch, "empty", host_empty)
    modules = (cute_build, gemm, gemm_mma, gemm_rmsnorm, flash_attn)
    for module in modules:
        if hasattr(module, "current_stream"):
            monkeypatch.setattr(module, "current_stream", cute_build.fake_stream)
    for module in modules[1:]:
        module._compiled.cache_clear()
    yield
    for module in modules[1:]:
        module._compiled.cache_clear()          # never keep a host-made variant for a later GPU launch


def _pair(kernel: str):
    import kernelscope.kernels.flash_attn as flash_attn
    import kernelscope.kernels.gemm as gemm
    import kernelscope.kernels.gemm_mma as gemm_mma
    import kernelscope.kernels.gemm_rmsnorm as gemm_rmsnorm

    if kernel == "gemm":
        cfg = gemm.GemmConfig.from_mapping({})
        return [gemm._compiled(cfg, "bfloat16", "bfloat16", "k", "n", on)[0] for on in (False, True)]
    if kernel.startswith("gemm_mma"):
        cfg = gemm_mma.MmaGemmConfig.from_mapping({})
        b_major = kernel.rpartition("-")[2]
        return [gemm_mma._compiled(cfg, "bfloat16", b_major, "sm_90a", on)[0] for on in (False, True)]
    if kernel == "gemm_rmsnorm":
        cfg = gemm_rmsnorm.GemmRmsNormConfig.from_mapping({})
        return [gemm_rmsnorm._compiled(cfg, "bfloat16", "n", on) for on in (False, True)]
    cfg = flash_attn.FlashAttnConfig.from_mapping({})
    return [flash_attn._compiled(cfg, "bfloat16", 128, False, on) for on in (False, True)]


@pytest.mark.parametrize("kernel, mask_parameters", [
    ("gemm", False), ("gemm_rmsnorm", False), ("flash_attn", True), ("gemm_mma-n", False), ("gemm_mma-k", False),
])
def test_the_launched_variant_is_the_inspected_one(host_tensors_for_the_launched_variant, kernel, mask_parameters):
    inspected, launched = (_instructions(c, mask_parameters) for c in _pair(kernel))
    assert len(inspected) > 500
    assert launched == inspected
