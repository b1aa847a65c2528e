"""The fresh-inputs rotation of checked timing, on the CPU: a second rotation over the same bound
tensors (a reference timed after its target, the next config of a sweep) must not find its first
set already there."""

import pytest

torch = pytest.importorskip("torch")

from kernelscope.profiler import timing_checks as tc  # noqa: E402
from kernelscope.profiler.checked_timing import fresh_inputs  # noqa: E402


class SeededSpec:
    output = "out"

    @staticmethod
    def make_inputs(shape, dtype, seed, device):
        g = torch.Generator().manual_seed(seed)
        return {"x": torch.randn(4, 8, generator=g), "out": torch.zeros(4, 8)}


class SeedlessSpec(SeededSpec):
    @staticmethod
    def make_inputs(shape, dtype, seed, device):
        return {"x": torch.ones(4, 8), "out": torch.zeros(4, 8)}


def test_a_rotation_after_another_on_the_same_tensors_still_finds_fresh_sets():
    spec = SeededSpec()
    inputs = spec.make_inputs({}, "float32", 0, "cpu")
    for rotation in range(6):
        refresh, check = fresh_inputs(spec, {}, "float32", 0, inputs)
        assert check.passed, (rotation, check.detail)
        # The timed launches end on set `rotation % 3` of this rotation, left in the bound tensors.
        for i in range(rotation % 3 + 1):
            refresh(i)


def test_inputs_that_ignore_the_seed_are_still_caught():
    spec = SeedlessSpec()
    _, check = fresh_inputs(spec, {}, "float32", 0, spec.make_inputs({}, "float32", 0, "cpu"))
    assert check.passed is False and check.name == tc.FRESH_INPUTS and "not fresh" in check.detail
