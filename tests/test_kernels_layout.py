"""The kernels' layout holds: a kernel's package (config, checks, spec) imports without the DSL,
named-barrier ids never collide within a kernel family, the shared device limits are the ones the
kernels size themselves by, and the ring position's jump matches stepping slot by slot."""

import subprocess
import sys

import pytest

from kernelscope.kernels import registry
from kernelscope.kernels.sm90 import device
from kernelscope.kernels.sm90.barriers import AttentionBarrier, GemmBarrier


def test_spec_modules_do_not_import_the_dsl():
    """Resolving every registered target and reading its config must not import cutlass: the
    kernel classes (which do) are imported only when a variant is compiled."""
    code = (
        "import sys\n"
        "from kernelscope.kernels import registry\n"
        "for name in registry.names():\n"
        "    spec = registry.resolve(name)\n"
        "    spec.config_for(spec.default_shapes[0], spec.dtypes[0])\n"
        "print(sorted(m for m in sys.modules if m == 'cutlass' or m.startswith('cutlass.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"importing the specs imported {out.strip()}"


@pytest.mark.parametrize("family", [GemmBarrier, AttentionBarrier])
def test_barrier_ids_are_distinct_and_in_range(family):
    ids = [member.value for member in family]
    assert len(ids) == len(set(ids)), f"{family.__name__} reuses an id"
    assert ids[0] == 0 and all(0 <= i < 16 for i in ids), "a CTA has 16 named barriers, 0 is __syncthreads"


def test_device_limits_are_the_kernels_limits():
    from kernelscope.kernels import flash_attn, gemm, gemm_mma

    assert gemm_mma.SMEM_PER_BLOCK["sm_90a"] == device.SMEM_PER_BLOCK_BYTES == 232448
    assert gemm.resolve_config(gemm.GemmConfig()).smem_bytes <= device.SMEM_PER_BLOCK_BYTES
    assert flash_attn.smem_bytes(flash_attn.FlashAttnConfig(), 128) <= device.SMEM_PER_BLOCK_BYTES


@pytest.mark.parametrize("stages", [2, 3, 4, 7])
def test_ring_jump_matches_stepping_slot_by_slot(stages):
    """RingPosition.advance_by (gemm_rmsnorm's pingpong skips the other warpgroup's k-tiles)
    lands where `steps` single advances would: index wraps at `stages`, phase flips per wrap.
    Plain ints stand in for the DSL integers (the arithmetic is the same)."""
    from kernelscope.kernels.sm90.pipeline import RingPosition

    for index in range(stages):
        for phase in (0, 1):
            for steps in range(0, 3 * stages + 2):
                jumped = RingPosition(stages, 0, index, phase)
                jumped.advance_by(steps)
                i, p = index, phase
                for _ in range(steps):
                    i += 1
                    if i == stages:
                        i, p = 0, p ^ 1
                assert (jumped._index, jumped._phase, jumped._count) == (i, p, steps)


def test_every_registered_kernel_is_a_package_with_a_kernel_module():
    import importlib.util

    for name in registry.names():
        module = registry.REGISTERED[name].split(":")[0]
        assert importlib.util.find_spec(module + ".kernel") is not None, f"{name} has no kernel module"
