"""Compile-only checks of tests/rule_kernels/gmma_bound.py (no GPU needed): the SASS of each variant
still waits where its committed report says it does (h200-rule-gmma.ncu-rep.xz)."""

import os
import re
import sys
from pathlib import Path

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
sys.path.insert(0, str(Path(__file__).parent / "rule_kernels"))

import gmma_bound  # noqa: E402
from kernelscope.toolchain.sass import disassemble_cubin  # noqa: E402


def _instructions(variant):
    sass = disassemble_cubin(gmma_bound.compile_fake(variant).__cubin__)
    return [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(.*?)\s*;", sass)]


@pytest.mark.parametrize("variant", gmma_bound.VARIANTS, ids=[v.name for v in gmma_bound.VARIANTS])
def test_each_round_is_one_warpgroup_fence_four_hgmma_and_one_wait(variant):
    ins = _instructions(variant)
    assert sum(i.startswith("HGMMA.64x256x16.F32.BF16") for i in ins) == 4
    assert sum(i == "WARPGROUP.ARRIVE" for i in ins) == 1
    depth = [i for i in ins if i.startswith("WARPGROUP.DEPBAR")]
    # In the loop: wait_group(in_flight); after it: wait_group(0) before the accumulators are stored.
    assert depth == [f"WARPGROUP.DEPBAR.LE gsb0, {hex(variant.in_flight)}", "WARPGROUP.DEPBAR.LE gsb0, 0x0"]
    assert any(i.startswith("STG") for i in ins)


def test_only_the_late_warp_runs_its_chain_and_before_the_fence():
    variant = next(v for v in gmma_bound.VARIANTS if v.lag_ffmas)
    ins = _instructions(variant)
    arrive = ins.index("WARPGROUP.ARRIVE")
    ffma = [n for n, i in enumerate(ins) if i.startswith("FFMA")]
    assert len(ffma) == gmma_bound.LAG_UNROLL and max(ffma) < arrive
    # A branch over the chain (taken by the other warps), not a chain speculated into every warp.
    assert any(re.match(r"@!?P\d BRA", i) for i in ins[:min(ffma)])


def test_the_static_rule_finds_the_chains_serialized_and_the_others_not():
    from kernelscope.profiler.static import inspect_cubin
    from kernelscope.rules.engine import evaluate_all

    for variant in gmma_bound.VARIANTS:
        (inspection,) = inspect_cubin(gmma_bound.compile_fake(variant).__cubin__, source=variant.name, arch="sm_90a")
        fired = {f.rule_id for f in evaluate_all(inspection.profile).findings}
        serialized = inspection.profile.value("static__wgmma_groups_serialized")
        # wait_group(0) after every round: gmma_chain and gmma_chain_wg2; the others keep rounds in flight.
        expected = variant.in_flight == 0
        assert (serialized == 1) == expected and ("serialized-wgmma-in-binary" in fired) == expected, variant.name
