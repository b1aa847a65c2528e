"""The CuTe DSL RMSNorm without a GPU: it compiles for sm_90a with 16-byte accesses and no
local memory, rejects configs it cannot run, and its fp32 reference is RMSNorm."""

import os
import re

import pytest
import torch

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from kernelscope.kernels import rmsnorm  # noqa: E402
from kernelscope.kernels.spec import ConfigRejected  # noqa: E402

_OPCODE = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", re.M)


@pytest.fixture(scope="module")
def compiled():
    return rmsnorm.SPEC.compile({"threads": 256, "vec": 8}, {"M": 128, "N": 4096}, "bfloat16", "sm_90a")


def test_compiles_without_gpu(compiled):
    if not torch.cuda.is_available():
        assert compiled.launch is None
    assert compiled.cubin and compiled.cubin[:4] == b"\x7fELF"
    assert compiled.kernel_names and "RMSNormRows" in compiled.kernel_names[0]


def test_sass_has_the_intended_instructions(compiled):
    if compiled.sass is None:
        pytest.skip("nvdisasm not installed")
    ops = _OPCODE.findall(compiled.sass)
    # N=4096, 256 threads, 8 elements each: 2 loads of x and 2 of w per thread, 2 stores.
    assert ops.count("LDG.E.128") == 4 and ops.count("STG.E.128") == 2
    assert "MUFU.RSQ" in ops and any(o.startswith("SHFL.BFLY") for o in ops)
    assert not any(o.startswith(("LDL", "STL")) for o in ops)       # nothing in local memory
    for op in rmsnorm.SPEC.expected_sass:
        assert any(o.split(".")[0] == op for o in ops), op


@pytest.mark.parametrize("config,shape,fragment", [
    ({"threads": 256, "vec": 8}, {"M": 4, "N": 1000}, "not a multiple"),
    ({"threads": 64, "vec": 8}, {"M": 4, "N": 8192}, "values per thread"),
    ({"threads": 100, "vec": 8}, {"M": 4, "N": 4096}, "multiple of 32"),
    ({"threads": 256, "vec": 3}, {"M": 4, "N": 4096}, "vec=3"),
    ({"threads": 256, "vec": 8, "stages": 2}, {"M": 4, "N": 4096}, "unknown config"),
])
def test_rejected_configs(config, shape, fragment):
    with pytest.raises(ConfigRejected, match=fragment):
        rmsnorm.check_config(config, shape, "bfloat16")


def test_float32_is_rejected():
    with pytest.raises(ConfigRejected, match="float32"):
        rmsnorm.check_config({"threads": 256, "vec": 8}, {"M": 4, "N": 4096}, "float32")


def test_reference_and_inputs():
    inputs = rmsnorm.make_inputs({"M": 16, "N": 256}, "bfloat16", 3, "cpu")
    assert torch.isnan(inputs["out"]).all()             # poisoned until the kernel writes it
    ref = rmsnorm.reference_fp32(inputs)
    torch_ref = torch.nn.functional.rms_norm(inputs["x"].float(), (256,), inputs["w"].float(), rmsnorm.EPS)
    torch.testing.assert_close(ref, torch_ref)
    again = rmsnorm.make_inputs({"M": 16, "N": 256}, "bfloat16", 3, "cpu")
    assert torch.equal(again["x"], inputs["x"])          # the seed fixes the inputs
    assert rmsnorm.bytes_moved({"M": 16, "N": 256}, "bfloat16") == 2 * (2 * 16 * 256 + 256)
