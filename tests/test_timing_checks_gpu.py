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
        assert {tc.FLOOR, tc.TIMER, tc.PERSISTING_L2, tc.OUTPUT_AFTER, tc.LAUNCHES, tc.FRESH_INPUTS, tc.HOST_WAIT} <= ran, ran
    assert result.target_side.timing.launches and len(result.target_side.timing.launches) == 1
    assert result.speedup_vs_reference is not None
    document = result.to_dict()["target_side"]["timing"]["checks"]
    assert document["suspect"] is False and tc.FLOOR in document["ran"]


def test_kernel_that_returns_early_is_caught():
    result = _run(_cheats().rmsnorm_early_return())
    checks = result.target_side.timing.checks
    assert result.target_side.correctness.ok          # correct before timing: only the timed calls cheat
    # A one-row kernel is shorter than its launch: when the host falls behind (seen once in a
    # batch of GPU tests on the H100), the samples time the host and clear the floor, and the
    # host-wait check is the one that marks them.
    assert _failed(checks, tc.FLOOR) or _failed(checks, tc.HOST_WAIT), (checks.get(tc.FLOOR), checks.get(tc.HOST_WAIT))
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


def test_launches_the_gpu_waits_for_are_flagged():
    """A launch that costs the host more than the kernel takes (here 200 us of host work before
    a ~2 us kernel, no flush to hide it): the samples time the host, and the check says so. The
    same kernel launched at once passes."""
    import time

    import torch

    from kernelscope.profiler.timing import time_callable

    x = torch.zeros(1 << 16, device="cuda")

    def slow_launch():
        until = time.perf_counter() + 200e-6
        while time.perf_counter() < until:
            pass
        x.add_(1.0)

    slow = time_callable(slow_launch, rep_ms=10, warmup_ms=2, flush_l2=False)
    item = slow.checks.items[tc.HOST_WAIT]
    assert item.ran and item.passed is False and slow.checks.suspect, item.detail
    big = torch.zeros(1 << 27, device="cuda")            # 512 MB: ~0.2 ms a fill on Hopper
    fast = time_callable(lambda: big.fill_(1.0), rep_ms=20, warmup_ms=5)
    assert fast.checks.items[tc.HOST_WAIT].passed, fast.checks.items[tc.HOST_WAIT].detail
