"""The decisions behind timing checks and the code-aware gate, on recorded samples (CPU).

Recorded inputs: an H200 `run` of rmsnorm 16384x4096 (tests/fixtures/h200-driver-run-
2026-11-21.json: CUDA-event medians and the measured copy peak), an H200 ncu profile of
the same kernel and shape (h200-rmsnorm-vs-torch.quick.ncu-rep: gpu__time_duration, DRAM
bytes, executed opcodes), the per-launch samples of an H200 sweep (h200-sweep-rmsnorm
.json.xz) and the committed static baseline (baselines/static-sm90a.json).
"""

from __future__ import annotations

import copy
import json
import lzma
from pathlib import Path

import pytest

from kernelscope.profiler import code_identity as ci
from kernelscope.gate import verdicts as g
from kernelscope.profiler import launch_probe as lp
from kernelscope.profiler import timing_checks as tc
from kernelscope.profiler.hot_instructions import join

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
L2_BYTES = 50 * 1024 * 1024                      # Hopper's L2 as the driver reports it (52428800)


@pytest.fixture(scope="module")
def h200_run():
    return json.loads(lzma.open(FIXTURES / "h200-driver-run-2026-11-21.json.xz").read())["runs"][0]


@pytest.fixture(scope="module")
def h200_profile(fixture_file):
    from kernelscope.profiler.report import load_report

    profiles = {p.name: p for p in load_report(fixture_file("h200-rmsnorm-vs-torch.quick.ncu-rep"),
                                               group_nvtx_prefix="ks:")}
    return profiles["ks:target"], profiles["ks:reference"]


@pytest.fixture(scope="module")
def sweep_rows():
    doc = json.loads(lzma.open(FIXTURES / "h200-sweep-rmsnorm.json.xz").read())
    return {(r["config"]["threads"], r["config"]["vec"]): r for r in doc["rows"] if r["timing"]}


def _rmsnorm_bytes(m=16384, n=4096):
    return 2.0 * (2 * m * n + n), 2.0 * m * n       # bytes moved, output bytes


# ----------------------------------------------------------------------------- floors

def test_recorded_honest_medians_clear_the_floor_and_an_early_return_does_not(h200_run):
    nbytes, out_bytes = _rmsnorm_bytes()
    dram, basis = tc.dram_bytes_floor(nbytes, out_bytes, L2_BYTES, l2_flushed=True)
    assert dram == nbytes - L2_BYTES and "may stay in L2" in basis
    peak = h200_run["copy_peak_gbps"]
    for side in ("target_timing", "reference_timing"):
        check = tc.floor_check(h200_run[side]["median_ms"], 4.0 * 16384 * 4096, dram, peak_tflops=None, peak_gbps=peak)
        assert check.ran and check.passed, check.detail
    # One row of 16384 processed, as a kernel that returns early would: ~3 us of launch.
    cheat = tc.floor_check(0.003, 4.0 * 16384 * 4096, dram, peak_tflops=None, peak_gbps=peak)
    assert cheat.passed is False and "below the physical floor" in cheat.detail and "x faster" in cheat.detail


def test_no_flush_discounts_an_l2_of_inputs_and_no_peak_means_not_run():
    nbytes, out_bytes = _rmsnorm_bytes(1024, 4096)
    flushed, _ = tc.dram_bytes_floor(nbytes, out_bytes, L2_BYTES, l2_flushed=True)
    warm, basis = tc.dram_bytes_floor(nbytes, out_bytes, L2_BYTES, l2_flushed=False)
    assert warm == 0.0 < flushed and "L2-resident" in basis
    check = tc.floor_check(0.01, 0.0, 1e9, peak_tflops=None, peak_gbps=None)
    assert (check.ran, check.passed) == (False, None)


def test_compute_floor_uses_the_matmul_peak():
    flops = 2.0 * 8192 ** 3
    floor, basis = tc.floor_ms(flops, 3 * 2 * 8192 ** 2, peak_tflops=700.0, peak_gbps=3000.0)
    assert basis.endswith("TFLOP/s") and floor == pytest.approx(flops / (1.5 * 700e12) * 1e3)


def test_counter_floor_from_the_profiled_launch(h200_run, h200_profile):
    target, _ = h200_profile
    dram = target.value("dram__bytes_read.sum") + target.value("dram__bytes_write.sum")
    peak = h200_run["copy_peak_gbps"]
    assert tc.counter_floor_check(h200_run["target_timing"]["median_ms"], dram, peak).passed
    low = tc.counter_floor_check(0.004, dram, peak)
    assert low.passed is False and "DRAM traffic in the profiled launch" in low.detail
    assert not tc.counter_floor_check(0.004, None, peak).ran


# ----------------------------------------------------------------------------- ncu agreement

def test_recorded_events_agree_with_ncu_and_a_side_stream_does_not(h200_run, h200_profile):
    target, reference = h200_profile
    for timing, profile in ((h200_run["target_timing"], target), (h200_run["reference_timing"], reference)):
        ncu_ms = profile.value("gpu__time_duration.sum") * 1e-6
        check = tc.ncu_agreement(timing["median_ms"], ncu_ms)
        assert check.passed, check.detail
    # Events that saw only the launch of work left on another stream.
    ncu_ms = target.value("gpu__time_duration.sum") * 1e-6
    lie = tc.ncu_agreement(0.004, ncu_ms)
    assert lie.passed is False and "less work than ncu" in lie.detail
    slow = tc.ncu_agreement(0.25, ncu_ms)
    assert slow.passed is False and "more time" in slow.detail
    assert not tc.ncu_agreement(0.07, None).ran


def test_recorded_h100_pairs_decide_as_measured():
    """Honest launches and the side-stream cheat, measured on an H100 (events vs ncu)."""
    doc = json.loads(lzma.open(ROOT / "benchmarks" / "results" / "timing-checks-h100.json.xz").read())
    pairs = doc["ncu_vs_events"]
    assert any(p["honest"] for p in pairs) and any(not p["honest"] for p in pairs)
    for p in pairs:
        check = tc.ncu_agreement(p["events_median_ms"], p["ncu_ms"])
        assert check.passed is p["honest"], (p["what"], check.detail)


def test_a_baseline_timing_gains_the_checks_of_its_profile(h200_run, h200_profile):
    from kernelscope.profiler.checked_timing import add_profile_checks_from

    target, _ = h200_profile
    timing = {"median_ms": h200_run["target_timing"]["median_ms"]}
    add_profile_checks_from(timing, [target], h200_run["copy_peak_gbps"])
    assert timing["checks"]["ran"] == [tc.COUNTER_FLOOR, tc.NCU_AGREEMENT] and not timing["checks"]["suspect"]
    side_stream = {"median_ms": 0.003, "checks": timing["checks"]}
    add_profile_checks_from(side_stream, [target], h200_run["copy_peak_gbps"])
    assert side_stream["checks"]["failed"] == [tc.COUNTER_FLOOR, tc.NCU_AGREEMENT]


def test_a_suspect_sweep_row_is_never_ranked():
    from kernelscope.profiler.measure import SweepResult, SweepRow
    from kernelscope.profiler.timing import summarize

    honest, cheat = summarize([0.07, 0.071]), summarize([0.003, 0.003])
    cheat.checks.add(tc.failed(tc.FLOOR, "below the floor"))
    rows = [SweepRow({"vec": 8}, "ok", timing=honest), SweepRow({"vec": 4}, "suspect", cheat.checks.summary(), timing=cheat)]
    result = SweepResult("rmsnorm", "torch.rmsnorm", {}, "bfloat16", rows, summarize([0.08]))
    assert [r.config["vec"] for r in result.sorted_rows()] == [8, 4]
    assert result.speed_vs_reference(rows[1]) is None and result.speed_vs_reference(rows[0]) > 100
    doc = result.to_dict()["rows"][1]
    assert doc["status"] == "suspect" and doc["timing"]["checks"]["failed"] == [tc.FLOOR]


def test_the_allowance_is_one_sided():
    # Events 7 us over a 20 us kernel: the flush's write-back, allowed; 7 us under: not.
    assert tc.ncu_agreement(0.027, 0.020).passed
    assert tc.ncu_agreement(0.013, 0.020).passed is False
    assert tc.ncu_agreement(0.0185, 0.020).passed          # within 15% + 2 us below


# ----------------------------------------------------------------------------- launches

def _trace(*items):
    """Chrome-trace events: (category, name, stream, start_us, duration_us)."""
    return {"traceEvents": [{"ph": "X", "cat": c, "name": n, "ts": t, "dur": d, "args": {"stream": s, "device": 0}}
                            for c, n, s, t, d in items] + [{"ph": "X", "cat": "cpu_op", "name": "aten::fill_", "ts": 0}]}


SPIN = "at::cuda::(anonymous namespace)::spin_kernel(long)"


def test_launch_probe_classifies_honest_side_stream_and_out_of_range_work():
    honest = _trace(("kernel", SPIN, 7, 0, 1), ("kernel", "rmsnorm_kernel", 7, 2, 60), ("kernel", SPIN, 7, 63, 1),
                    ("kernel", SPIN, 7, 70, 1), ("kernel", "rmsnorm_kernel", 7, 72, 60), ("kernel", SPIN, 7, 133, 1))
    result = lp.classify(lp.work_from_trace(honest), calls=2)
    assert result.timed_stream == 7 and result.per_call == [["rmsnorm_kernel"], ["rmsnorm_kernel"]]
    assert result.check().passed

    side = _trace(("kernel", SPIN, 7, 0, 1), ("kernel", SPIN, 7, 2, 1), ("kernel", "rmsnorm_kernel", 13, 2, 60),
                  ("kernel", SPIN, 7, 5, 1), ("kernel", SPIN, 7, 7, 1), ("kernel", "rmsnorm_kernel", 13, 63, 60))
    check = lp.classify(lp.work_from_trace(side), calls=2).check()
    assert check.passed is False and "outside the timed stream 7" in check.detail and "rmsnorm_kernel (stream 13)" in check.detail

    late = _trace(("kernel", SPIN, 7, 0, 1), ("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 7, 2, 5),
                  ("kernel", SPIN, 7, 8, 1), ("kernel", "deferred_kernel", 7, 10, 30))
    check = lp.classify(lp.work_from_trace(late), calls=1).check()
    assert check.passed is False and "outside the timed range: deferred_kernel" in check.detail

    nothing = lp.classify(lp.work_from_trace(_trace(("kernel", SPIN, 7, 0, 1), ("kernel", SPIN, 7, 2, 1))), calls=1)
    assert nothing.check().passed is False and "no GPU work" in nothing.check().detail
    blind = lp.classify([], calls=1).check()
    assert (blind.ran, blind.passed) == (False, None)


@pytest.mark.parametrize("name,honest", [("honest", True), ("side-stream", False)])
def test_recorded_h100_probes_classify_as_measured(name, honest):
    trace = json.loads(lzma.open(FIXTURES / f"h100-probe-{name}.json.xz").read())
    result = lp.classify(lp.work_from_trace(trace), calls=2)
    check = result.check()
    assert check.passed is honest, check.detail
    if honest:
        assert [len(c) for c in result.per_call] == [1, 1] and "kernel_cutlass" in result.per_call[0][0]
    else:
        assert result.per_call == [[], []] and len(result.off_stream) == 2
        assert "(stream 13)" in check.detail and "outside the timed stream 7" in check.detail


# ----------------------------------------------------------------------------- guards

def test_timer_guard_names_a_replaced_elapsed_time():
    torch = pytest.importorskip("torch")
    from kernelscope.profiler.timing_guard import TimerGuard

    assert TimerGuard(torch).check().passed
    real = torch.cuda.Event.elapsed_time

    def quicker(self, end):
        return real(self, end) / 50

    guard = TimerGuard(torch)
    torch.cuda.Event.elapsed_time = quicker
    try:
        check = guard.check()
    finally:
        torch.cuda.Event.elapsed_time = real
    assert check.passed is False and "torch.cuda.Event.elapsed_time is" in check.detail
    assert "test_timing_checks" in check.detail and "quicker" in check.detail


def test_persisting_l2_guard_without_a_driver_did_not_run():
    from kernelscope.profiler.timing_guard import PersistingL2

    guard = PersistingL2()
    if guard.lib is not None:
        pytest.skip("a CUDA driver is installed here")
    guard.begin()
    guard.reset()
    guard.end()
    check = guard.check()
    assert (check.ran, check.passed) == (False, None) and "libcuda" in check.detail


def test_checks_round_trip_and_summary():
    checks = tc.Checks()
    checks.add(tc.passed(tc.TIMER, "own"))
    checks.add(tc.skipped(tc.NCU_AGREEMENT, "not profiled"))
    checks.add(tc.failed(tc.FLOOR, "too fast"))
    doc = checks.to_dict()
    assert doc["suspect"] and doc["failed"] == [tc.FLOOR] and doc["ran"] == [tc.FLOOR, tc.TIMER]
    again = tc.Checks.from_dict(doc)
    assert again.summary() == checks.summary() == f"SUSPECT: {tc.FLOOR}: too fast"
    assert tc.failures_of({"checks": doc}) == [f"{tc.FLOOR}: too fast"] and tc.failures_of({}) == []


# ----------------------------------------------------------------------------- the gate knows the code

def _static_case(case_id: str) -> dict:
    doc = json.loads((ROOT / "baselines" / "static-sm90a.json").read_text())
    return next(c for c in doc["cases"] if c["id"] == case_id)


def _case(static_id: str, sass: str, samples: list[float], ref_samples: list[float], launches=("rmsnorm_kernel",)):
    static = _static_case(static_id)
    kernels = [ci.kernel_identity(k["name"], sass, k["metrics"]) for k in static["static"]]
    return {"id": "rms", "target": "rmsnorm", "shape": static["shape"], "config": {}, "dtype": static["dtype"],
            "arch": "sm_90a", "static": static["static"],
            "code": {"kernels": kernels, "cubin_sha256": "-", "launches": list(launches) if launches else None},
            "timing": {"target": {"samples_ms": samples}, "reference": {"samples_ms": ref_samples}}}


def _docs(base_case, cur_case):
    env = {"gpu": {"name": "NVIDIA H200"}}
    return ({"environment": env, "cases": [base_case]}, {"environment": env, "cases": [cur_case]})


def _target(result):
    return next(m for m in result.metrics if m.family == "timing" and m.metric == "target")


def test_same_code_slower_is_the_environment_never_a_regression(sweep_rows):
    samples = sweep_rows[(256, 8)]["timing"]["samples_ms"]
    reference = sweep_rows[(128, 8)]["timing"]["samples_ms"]
    base = _case("rmsnorm/default", "SASS of vec=8", samples, reference)
    slower = _case("rmsnorm/default", "SASS of vec=8", [x * 1.10 for x in samples], reference)
    result = g.gate(*_docs(base, slower))
    target = _target(result)
    assert target.verdict == g.PASS and target.reason.startswith("same code, the environment moved (would be REGRESSION")
    assert result.exit_code == 0
    code = next(m for m in result.metrics if m.family == "code")
    assert code.reason.startswith("same code")


def test_different_sass_names_what_changed_next_to_the_regression(sweep_rows):
    samples = sweep_rows[(256, 8)]["timing"]["samples_ms"]
    reference = sweep_rows[(128, 8)]["timing"]["samples_ms"]
    base = _case("rmsnorm/default", "SASS of vec=8", samples, reference)
    vec2 = _case("rmsnorm/vec=2", "SASS of vec=2", [x * 1.10 for x in samples], reference)
    vec2["config"] = {"vec": 2}
    target = _target(g.gate(*_docs(base, vec2)))
    assert target.verdict == g.REGRESSION
    assert "code changed" in target.reason and "SASS differs (opcodes" in target.reason
    base_regs = base["code"]["kernels"][0]["resources"]["launch__registers_per_thread"]
    cur_regs = vec2["code"]["kernels"][0]["resources"]["launch__registers_per_thread"]
    if base_regs != cur_regs:
        assert f"registers {base_regs} -> {cur_regs}" in target.reason


def test_more_launched_work_with_the_same_sass_is_a_code_change(sweep_rows):
    samples = sweep_rows[(256, 8)]["timing"]["samples_ms"]
    reference = sweep_rows[(128, 8)]["timing"]["samples_ms"]
    base = _case("rmsnorm/default", "S", samples, reference)
    extra = _case("rmsnorm/default", "S", [x * 1.2 for x in samples], reference,
                  launches=("rmsnorm_kernel", "Memcpy DtoD (Device -> Device)"))
    target = _target(g.gate(*_docs(base, extra)))
    assert target.verdict == g.REGRESSION and "now also Memcpy DtoD" in target.reason
    unknown = _case("rmsnorm/default", "S", [x * 1.2 for x in samples], reference, launches=None)
    comparison = ci.compare(base, unknown)
    assert comparison.same is None and "cannot be ruled out" in comparison.summary()
    assert _target(g.gate(*_docs(base, unknown))).verdict == g.REGRESSION


def test_a_suspect_timing_is_inconclusive_never_an_improvement(sweep_rows):
    samples = sweep_rows[(256, 8)]["timing"]["samples_ms"]
    reference = sweep_rows[(128, 8)]["timing"]["samples_ms"]
    base = _case("rmsnorm/default", "A", samples, reference)
    cheat = _case("rmsnorm/default", "B", [x / 20 for x in samples], reference)
    checks = tc.Checks()
    checks.add(tc.failed(tc.FLOOR, "median below the physical floor"))
    cheat["timing"]["target"]["checks"] = checks.to_dict()
    target = _target(g.gate(*_docs(base, copy.deepcopy(cheat))))
    assert target.verdict == g.INCONCLUSIVE and "failed its checks" in target.reason and "physical floor" in target.reason


# ----------------------------------------------------------------------------- static x dynamic

def test_executed_counts_over_the_static_histogram(h200_profile):
    target, _ = h200_profile
    static_mix = _static_case("rmsnorm/default")["static"][0]["instruction_mix"]
    heat = join(static_mix, target.instruction_mix)
    assert heat.same_binary
    rows = {r.opcode: r for r in heat.rows}
    # A straight-line kernel: every executed instruction runs once per warp,
    # M x threads / 32 = 16384 x 8 warps.
    assert {r.per_instance for r in heat.rows if r.executed} == {16384 * 256 / 32}
    assert rows["NOP"].executed is None and rows["NOP"].static_count == 15
    assert heat.rows[0].executed == max(r.executed or 0 for r in heat.rows)
    other = join({"FFMA": 3}, {"HGMMA": 10.0, "FFMA": 6.0})
    assert other.unmatched == ["HGMMA"] and not other.same_binary


def test_samples_the_gpu_waited_in_make_the_timing_suspect():
    """The H100 case behind it: a launch costing 25-38 us of host time, a 25 us kernel timed at
    56 us in turns with cuBLAS; a few early waits are normal, most are not."""
    from kernelscope.profiler import timing_checks as tc
    ok = tc.host_wait_check(3, 1000)
    assert ok.ran and ok.passed and "3 of 1000" in ok.detail
    bad = tc.host_wait_check(900, 1000)
    assert bad.ran and bad.passed is False and "waiting for the host" in bad.detail
    assert tc.host_wait_check(0, 0).ran is False
    assert tc.HOST_WAIT in tc.CHECK_NAMES
    checks = tc.Checks()
    checks.add(bad)
    assert checks.suspect and tc.HOST_WAIT in checks.summary()
