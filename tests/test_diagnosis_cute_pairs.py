"""The CuTe DSL pairs of the diagnosis benchmark (benchmarks/diagnosis/cute_pairs.py) compile for
sm_90a, and each carries its defect in the SASS and nothing else: 2-byte against 16-byte global
accesses, the same shared-memory instructions for the transpose (the layouts differ, not the code),
local memory only in the slow fragment kernel, and the same 16-byte accesses for the rolled and the
unrolled loop. No GPU (what they measure on one: benchmarks/diagnosis/README.md)."""

from __future__ import annotations

import pytest

from cute_pairs_compile import compiled_opcodes



@pytest.fixture(scope="module")
def opcodes(tmp_path_factory) -> dict[str, dict[str, int]]:
    return compiled_opcodes("cute_pairs.py", tmp_path_factory.mktemp("cute_pairs_cwd"))


def test_every_pair_compiles_and_carries_only_its_defect(opcodes):
    assert set(opcodes) == {f"{p}_{side}" for p in ("bf16_scalar", "smem_transpose", "local_fragment",
                                                      "same_stride_unroll") for side in ("slow", "fast")}
    assert opcodes["bf16_scalar_slow"]["LDG.E.U16"] == 1 and opcodes["bf16_scalar_slow"]["STG.E.U16"] == 1
    assert opcodes["bf16_scalar_fast"]["LDG.E.128"] == 1 and opcodes["bf16_scalar_fast"]["STG.E.128"] == 1
    assert opcodes["smem_transpose_slow"] == opcodes["smem_transpose_fast"]
    assert opcodes["smem_transpose_slow"]["LDS"] == opcodes["smem_transpose_slow"]["STS"] == 4
    slow, fast = opcodes["local_fragment_slow"], opcodes["local_fragment_fast"]
    assert slow.get("LDL", 0) > 0 and not any(op.startswith(("LDS", "STS")) for op in slow)
    assert not any(op.startswith(("LDL", "STL")) for op in fast) and fast["LDS"] == slow["LDL"]
    assert opcodes["same_stride_unroll_slow"]["LDG.E.128"] == 1 and opcodes["same_stride_unroll_fast"]["LDG.E.128"] == 4
