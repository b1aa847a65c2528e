"""Timing checks on a GPU: an honest kernel passes every one; each planted cheat is caught.

The cheats live in tests/timing_cheats.py. Shapes are small and timing budgets short:
these tests prove the checks, they do not measure performance.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernelscope.kernels import rmsnorm
from kernelscope.profiler import measure
from kernelscope.profiler import timing_checks as tc

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
CHEATS = ROOT / "tests" / "timing_cheats.py"
SHAPE = {"M": 8192, "N": 4096}
DTYPE = "bfloat16"


def _cheats():
    import importlib.util

    spec = importlib.util.spec_from_file_location("timing_cheats", CHEATS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(spec, reference=None, fresh=False):
    config = spec.config_for(SHAPE, DTYPE)
    return measure.run_target(spec, reference, SHAPE, DTYPE, config, rep_ms=20, warmup_ms=5, fresh_inputs=fresh)


def _failed(checks, name) -> bool:
    item = checks.get(name)
    return item is not None and item.ran and item.passed is False


def test_honest_kernel_and_reference_pass_every_check():
    result = _run(rmsnorm.SPEC, "torch.rmsnorm", fresh=True)
    for side in (result.target_side, result.reference_side):
        checks = side.timing.checks
        assert not checks.suspect, checks.summary()
        ran = set(checks.to_dict()["ran"])
        assert {tc.FLOOR, tc.TIMER, tc.PERSISTING_L2, tc.OUTPUT_AFTER, tc.LAUNCHES, tc.FRESH_INPUTS} <= ran, ran
    assert result.target_side.timing.launches and len(result.target_side.timing.launches) == 1
    assert result.speedup_vs_reference is not None
    document = result.to_dict()["target_side"]["timing"]["checks"]
    assert document["suspect"] is False and tc.FLOOR in document["ran"]


def test_kernel_that_returns_early_is_caught():
    result = _run(_cheats().rmsnorm_early_return())
    checks = result.target_side.timing.checks
    assert result.target_side.correctness.ok          # correct before timing: only the timed calls cheat
    assert _failed(checks, tc.FLOOR), checks.get(tc.FLOOR)
    assert _failed(checks, tc.OUTPUT_AFTER), checks.get(tc.OUTPUT_AFTER)


def test_work_on_a_side_stream_is_caught_and_named():
    result = _run(_cheats().rmsnorm_side_stream())
    checks = result.target_side.timing.checks
    launches = checks.get(tc.LAUNCHES)
    assert _failed(checks, tc.LAUNCHES), launches
    assert "outside the timed stream" in launches.detail and "kernel" in launches.detail.lower()
    assert _failed(checks, tc.FLOOR)


def test_timer_patched_by_the_target_module_is_caught_and_does_not_fool_the_samples():
    cheats = _cheats()
    honest = _run(rmsnorm.SPEC).target_side.timing
    try:
        patched = _run(cheats.rmsnorm_patched_timer()).target_side.timing
    finally:
        cheats.restore_timer()
    timer = patched.checks.get(tc.TIMER)
    assert _failed(patched.checks, tc.TIMER), timer
    assert "elapsed_time" in timer.detail and "timing_cheats" in timer.detail
    # The samples were read through torch's C methods: no 50x "speed-up".
    assert patched.median_ms > honest.median_ms / 3


def test_result_cached_from_the_previous_call_is_caught_with_fresh_inputs():
    result = _run(_cheats().rmsnorm_cached(), fresh=True)
    checks = result.target_side.timing.checks
    assert _failed(checks, tc.OUTPUT_AFTER), checks.get(tc.OUTPUT_AFTER)
    assert "fresh inputs" in checks.get(tc.OUTPUT_AFTER).detail


def _ncu_or_skip():
    from kernelscope.errors import UserError
    from kernelscope.profiler.ncu import find_ncu

    try:
        return find_ncu()
    except UserError as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("target,honest", [("rmsnorm", True), (f"{CHEATS}:rmsnorm_side_stream", False)])
def test_ncu_clock_agrees_with_honest_events_and_not_with_a_side_stream(target, honest):
    _ncu_or_skip()
    from kernelscope.cli.cross_check import cross_check
    from kernelscope.kernels import registry

    spec = registry.resolve(target)
    config = spec.config_for(SHAPE, DTYPE)
    result = _run(spec)
    timing = result.target_side.timing
    cross_check(spec, target, SHAPE, DTYPE, config, 0, "sm_90a", timing, result.peaks)
    agreement = timing.checks.get(tc.NCU_AGREEMENT)
    assert agreement is not None and agreement.ran, agreement
    assert agreement.passed is honest, agreement.detail
    if honest:
        assert timing.checks.get(tc.COUNTER_FLOOR).passed, timing.checks.get(tc.COUNTER_FLOOR)
    record = os.environ.get("KS_TIMING_DATA")
    if record:
        with open(record, "a") as f:
            f.write(json.dumps({"target": target, "shape": SHAPE, "median_ms": timing.median_ms,
                                "agreement": agreement.detail}) + "\n")
