"""Checks shared by the GEMM kernels' tests (gemm, gemm_mma, gemm_rmsnorm): SASS opcodes,
cuobjdump's resource report of a cubin, and the float64 check of a launched product on the GPU."""

import re
import subprocess
import tempfile

import pytest

# An instruction line of nvdisasm's listing, past an optional predicate: the opcode without its
# modifiers ("LDSM"), or with them ("LDSM.16.MT88.4").
_OPCODE = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", re.M)
_OPCODE_WITH_MODIFIERS = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", re.M)


def opcodes(sass: str) -> set[str]:
    """The distinct opcodes of a SASS listing, modifiers dropped."""
    return set(_OPCODE.findall(sass))


def opcodes_with_modifiers(sass: str) -> list[str]:
    """Every instruction's opcode with its modifiers, in listing order."""
    return _OPCODE_WITH_MODIFIERS.findall(sass)


def resource_usage(cubin: bytes) -> str:
    """cuobjdump --dump-resource-usage of a cubin; skips the test where cuobjdump is missing."""
    from kernelscope.toolchain.tools import which_cuda_tool

    tool = which_cuda_tool("cuobjdump")
    if tool is None:
        pytest.skip("cuobjdump is not installed")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True,
                              text=True, check=True).stdout


def assert_no_stack_or_local_memory(cubin: bytes) -> None:
    usage = resource_usage(cubin)
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", usage)
    assert m, usage
    assert int(m.group(2)) == 0 and int(m.group(4)) == 0, usage


def assert_matches_float64_product(a, b, out, rtol: float, atol: float) -> None:
    """`out` holds A @ B: every element written, each within atol + rtol |ref| of the float64
    product, and the relative Frobenius error below 4 rtol."""
    import torch

    ref = a.double() @ b.double()
    got = out.double()
    assert torch.isfinite(got).all(), f"{(~torch.isfinite(got)).sum().item()} elements never written"
    err = (got - ref).abs()
    tol = atol + rtol * ref.abs()
    bad = err > tol
    rel = ((got - ref).norm() / ref.norm()).item()
    assert not bad.any(), (
        f"{bad.sum().item()} elements off, first at {tuple(bad.nonzero()[0].tolist())}, "
        f"max abs err {err.max().item():.3g}, rel norm err {rel:.3g}")
    assert rel < 4 * rtol


def launch_spec_default(spec, shape, seed: int):
    """Inputs for `shape`, the spec's default config compiled for sm_90a and launched once:
    (inputs, the tensor launch returned)."""
    import torch

    inputs = spec.make_inputs(shape, "bfloat16", seed, "cuda")
    ck = spec.compile(spec.default_config, shape, "bfloat16", "sm_90a")
    out = ck.launch(inputs)
    torch.cuda.synchronize()
    return inputs, out
