"""The attention references return their output in the layout of the inputs (bshd or bhsd), so
`run` can check them against the fp32 reference element for element (CPU: sdpa's math backend)."""

import pytest
import torch

from kernelscope.kernels import flash_attn as fa
from kernelscope.kernels import references
from kernelscope.profiler.measure import check_output


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_output_in_input_layout(layout, causal):
    shape = {"B": 2, "H": 3, "S": 70, "D": 64, "causal": int(causal)}
    inputs = fa.make_inputs(shape, "bfloat16", seed=5, device="cpu")
    for name in ("q", "k", "v"):
        inputs[name] = inputs[name].float()
    ref = fa.reference_fp32(inputs)                     # (B, S, H, D)
    if layout == "bhsd":
        for name in ("q", "k", "v"):
            inputs[name] = inputs[name].transpose(1, 2).contiguous()
        ref = ref.transpose(1, 2)
    inputs["layout"] = layout
    out = references.bind("sdpa", fa.FLASH_ATTN_SPEC, inputs)()
    assert tuple(out.shape) == tuple(ref.shape)
    assert torch.allclose(out, ref, atol=1e-4, rtol=1e-4)


def test_run_checks_sdpa_against_the_reference_in_bshd():
    shape = {"B": 1, "H": 2, "S": 40, "D": 64, "causal": 1}
    inputs = fa.make_inputs(shape, "bfloat16", seed=1, device="cpu")
    out = references.bind("sdpa", fa.FLASH_ATTN_SPEC, inputs)()
    report = check_output(fa.FLASH_ATTN_SPEC, out, inputs, "bfloat16")
    assert report.ok, report.where()
