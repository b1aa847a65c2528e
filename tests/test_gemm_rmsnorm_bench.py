"""CPU checks of the fused RMSNorm -> GEMM benchmark's arithmetic: paired per-round ratios, their
summary over shapes with a bootstrap interval and the verdict on each target, the clock readings'
parsing, and that the command-line flags the docs use still parse."""

import json
import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import _bench_common as common  # noqa: E402
import bench_gemm_rmsnorm as bench  # noqa: E402

BASE = {"tile_n": 256, "raster": "m"}
ALT = {"tile_n": 256, "raster": "n"}


def _drifting_samples(rounds, fused_factor, unfused_factor, *, alt_factor=None, noise=0.0, seed=1):
    """Times of one shape whose GPU slows down by 40% over the run (the same for every side at a
    given round); cuBLAS takes 1.0 x drift, the fused kernel fused_factor x drift, torch unfused
    unfused_factor x drift (times a little independent noise when asked)."""
    rng = random.Random(seed)
    drift = [1.0 + 0.4 * r / (rounds - 1) for r in range(rounds)]

    def side(f):
        return [0.5 * f * d * (1.0 + noise * rng.gauss(0, 1)) for d in drift]

    fused = [side(fused_factor)] + ([side(alt_factor)] if alt_factor is not None else [])
    return {"fused": fused, "cublas_gemm": side(1.0), "torch_unfused": side(unfused_factor)}


def _rows(shape, samples, configs, passes=2):
    rounds = len(samples["cublas_gemm"])
    pass_of_round = [r * passes // rounds for r in range(rounds)]
    rows = bench.shape_rows(shape, configs, samples, pass_of_round)
    for r in rows:
        r["fused_accuracy"] = {"rel_norm_error": 2e-3, "worst_row_rel_error": 3e-3}
    return rows


def test_paired_ratio_cancels_a_drift_common_to_all_sides():
    samples = _drifting_samples(200, 0.99, 1.07)
    (row,) = _rows({"M": 4096, "N": 4096, "K": 4096}, samples, [BASE])
    assert row["paired_fused_over_gemm"] == pytest.approx(0.99)
    assert row["paired_unfused_over_fused"] == pytest.approx(1.07 / 0.99)
    q = row["paired_fused_over_gemm_quartiles"]
    assert q["q3"] - q["q1"] == pytest.approx(0.0, abs=1e-12) and q["n"] == 200
    assert row["meets_gemm_target"] and row["meets_unfused_target"]
    # The per-pass medians show the drift that the pairing removed.
    assert row["passes"][1]["fused"]["median"] > 1.15 * row["passes"][0]["fused"]["median"]
    assert row["fused_tflops"] == pytest.approx(2 * 4096**3 / (row["fused_ms"] * 1e-3) / 1e12)


def test_a_config_is_compared_round_by_round_with_the_base():
    samples = _drifting_samples(100, 1.00, 1.06, alt_factor=0.97)
    base, alt = _rows({"M": 8192, "N": 4096, "K": 4096}, samples, [BASE, ALT])
    assert "paired_over_base_quartiles" not in base
    assert alt["paired_over_base_quartiles"]["median"] == pytest.approx(0.97)
    assert alt["paired_fused_over_gemm"] == pytest.approx(0.97)


def test_summary_geomean_interval_and_verdicts():
    shapes = [{"M": m, "N": 4096, "K": 4096} for m in (4096, 8192, 16384)]
    rows = []
    for i, shape in enumerate(shapes):
        # fused / cuBLAS 0.98, 0.99, 1.00; unfused / cuBLAS 1.02 (so unfused / fused ~1.03)
        rows += _rows(shape, _drifting_samples(300, 0.98 + 0.01 * i, 1.02, alt_factor=1.1, noise=0.01, seed=i),
                      [BASE, ALT] if i < 2 else [BASE])
    summary = bench.summarize(rows, BASE, draws=500)
    assert summary["shapes"] == 3
    expected = (0.98 * 0.99 * 1.00) ** (1 / 3)
    assert summary["geomean_paired_fused_over_gemm"] == pytest.approx(expected, rel=3e-3)
    lo, hi = summary["interval_paired_fused_over_gemm"]
    assert lo < summary["geomean_paired_fused_over_gemm"] < hi and hi - lo < 0.01
    assert summary["gemm_target"] == "met"
    assert summary["unfused_target"] == "not met"
    by = {json.dumps(c["config"], sort_keys=True): c for c in summary["by_config"]}
    alt = by[json.dumps(ALT, sort_keys=True)]
    assert alt["shapes"] == 2
    assert alt["geomean_paired_over_base"] == pytest.approx(math.sqrt(1.1 / 0.98 * 1.1 / 0.99), rel=5e-3)
    assert alt["gemm_target"] == "not met"
    assert "geomean_paired_over_base" not in by[json.dumps(BASE, sort_keys=True)]
    text = bench._summary_table(summary)
    assert "not met >= 1.05" in text and "over base" in text
    # A run in progress writes its rows without the bootstrap: no interval, no verdict.
    partial = bench.summarize(rows, BASE, draws=0)
    assert partial["interval_paired_fused_over_gemm"] is None and partial["gemm_target"] == "n/a"


def test_verdict_needs_the_whole_interval_on_one_side():
    assert common.verdict((0.97, 1.01), 1.02, at_most=True) == "met"
    assert common.verdict((1.00, 1.03), 1.02, at_most=True) == "unresolved"
    assert common.verdict((1.03, 1.05), 1.02, at_most=True) == "not met"
    assert common.verdict((1.051, 1.08), 1.05, at_most=False) == "met"
    assert common.verdict((1.03, 1.06), 1.05, at_most=False) == "unresolved"
    assert common.verdict((1.01, 1.04), 1.05, at_most=False) == "not met"


def test_bootstrap_interval_narrows_with_more_rounds_and_holds_the_truth():
    rng = random.Random(7)
    few = [[1.0 + 0.05 * rng.gauss(0, 1) for _ in range(20)] for _ in range(4)]
    many = [[1.0 + 0.05 * rng.gauss(0, 1) for _ in range(2000)] for _ in range(4)]
    lo_f, hi_f = common.bootstrap_geomean_of_medians(few, draws=500)
    lo_m, hi_m = common.bootstrap_geomean_of_medians(many, draws=500)
    assert lo_m < 1.0 < hi_m
    assert hi_m - lo_m < (hi_f - lo_f) / 4
    assert common.bootstrap_geomean_of_medians([[1.25] * 10, [0.8] * 5], draws=50) == pytest.approx((1.0, 1.0))
    with pytest.raises(ValueError):
        common.bootstrap_geomean_of_medians([[1.0], []])


def test_ratio_helpers():
    assert common.paired_ratios([2.0, 3.0], [1.0, 2.0]) == [2.0, 1.5]
    with pytest.raises(ValueError):
        common.paired_ratios([1.0], [1.0, 2.0])
    q = common.quartiles([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (q["q1"], q["median"], q["q3"], q["n"]) == (2.0, 3.0, 4.0, 5)
    assert common.quartiles([7.0]) == {"median": 7.0, "q1": 7.0, "q3": 7.0, "n": 1}
    assert common.geomean([2.0, 8.0]) == pytest.approx(4.0)


def test_clock_readings_parse_and_summarise():
    fields = common._CLOCK_FIELDS
    a = common.parse_clock_line(fields, "1980, 1980, 2619, 41, 301.52, 0x0000000000000000")
    b = common.parse_clock_line(fields, "1755, 1980, 2619, 63, 690.10, 0x0000000000000004")
    c = common.parse_clock_line(fields[:-1], "[N/A], 1980, 2619, 60, [N/A]")
    assert a["clocks.sm"] == 1980.0 and a["clocks_event_reasons.active"] == "0x0000000000000000"
    assert c["clocks.sm"] is None and "clocks_event_reasons.active" not in c
    s = common.clock_summary([a, b, c])
    assert s["readings"] == 3
    assert s["sm_mhz"] == {"min": 1755.0, "median": 1867.5, "max": 1980.0}
    assert s["temperature_c"]["max"] == 63.0
    assert s["clock_event_reasons"] == ["0x0000000000000004"]
    none = common.clock_summary([])
    assert none["sm_mhz"] is None and none["readings"] == 0


def test_clock_sampler_without_nvidia_smi_reads_nothing():
    with common.ClockSampler(None) as sampler:
        pass
    assert sampler.readings == []
    assert common.gpu_clock_reading(None) == {"error": "nvidia-smi not available"}


def test_existing_flags_still_parse():
    args = bench._parse_args(["--out", "x.json", "--shapes", "8192x4096x4096", "--config", '{"raster": "n"}',
                              "--also", '[{"a_buffers": 1}]', "--also-shapes", "12", "--rep-ms", "80",
                              "--with-gemm", "--passes", "3"])
    assert args.passes == 3 and args.rep_ms == 80.0 and args.with_gemm and args.also_shapes == 12
    assert args.config_obj == {"raster": "n"} and args.also_list == [{"a_buffers": 1}]
    assert args.rounds is None and args.bootstrap == 2000 and not args.keep_samples
    for bad in (["--passes", "0"], ["--rep-ms", "-1"], ["--also", '{"a_buffers": 1}'], ["--rounds", "0"]):
        with pytest.raises(SystemExit):
            bench._parse_args(bad)


def test_shape_line_is_one_readable_line():
    samples = _drifting_samples(10, 0.99, 1.06, alt_factor=0.98)
    rows = _rows({"M": 4096, "N": 8192, "K": 4096}, samples, [BASE, ALT])
    for r in rows:
        r["clock"] = common.clock_summary([])
    line = bench._shape_line(rows[1], rows[1]["fused_accuracy"], "raster=n")
    assert "\n" not in line and "sm n/a MHz" in line and "/base 0.990" in line and "raster=n" in line


def _cuda():
    import torch
    return torch.cuda.is_available()


@pytest.mark.skipif(_cuda(), reason="checks the exit without a GPU")
def test_main_without_a_gpu_exits_with_status_2(capsys):
    assert bench.main(["--shapes", "256x256x256"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


@pytest.mark.gpu
def test_round_robin_times_every_side_every_round():
    import torch
    small = torch.randn(1024, 1024, device="cuda")
    large = torch.randn(4096, 4096, device="cuda")
    calls = []
    sides = [lambda: (calls.append(0), small @ small), lambda: (calls.append(1), large @ large)]
    timed = common.round_robin(sides, passes=2, rounds=20)
    assert timed["rounds_per_pass"] == 20 and timed["pass_of_round"] == [0] * 20 + [1] * 20
    assert [len(s) for s in timed["samples_ms"]] == [40, 40]
    assert all(t > 0 for s in timed["samples_ms"] for t in s)
    assert common.quartiles(timed["samples_ms"][1])["median"] > 4 * common.quartiles(timed["samples_ms"][0])["median"]
    # Every round launches each side once, the first side rotating.
    timed_calls = calls[-80:]
    assert sorted(timed_calls) == [0] * 40 + [1] * 40
    assert timed_calls[:4] == [0, 1, 1, 0]


@pytest.mark.gpu
def test_round_robin_head_start_keeps_the_gpu_from_waiting_for_short_launches():
    """Launches of a few microseconds, each behind its L2 flush: queued behind the pass's head start,
    the GPU should almost never have passed a sample's start event before its launch was issued."""
    import torch
    x = torch.randn(256, device="cuda")
    timed = common.round_robin([lambda: x.mul_(1.0), lambda: x.add_(0.0)], passes=2, rounds=200)
    assert max(timed["host_waited"]) <= 0.05 * 400, timed["host_waited"]
    assert common._spin_cycles_for(torch, torch.device("cuda"), 0) == 0
