"""Gate verdicts: the rank test, timing and counter rules, environment, missing metrics, exit codes."""

from __future__ import annotations

import copy
import math
import random

import pytest

from kernelscope.gate import policy as gate_policy
from kernelscope.gate import statistics as stats
from kernelscope.gate import verdicts as g


# ----------------------------------------------------------------------------- Mann-Whitney

def test_rank_test_exact_small_samples():
    # All three of x above all three of y: U = 9 of 9, P = 1 / C(6, 3) = 0.05.
    t = stats.mann_whitney([4, 5, 6], [1, 2, 3])
    assert t.method == "exact"
    assert t.u == 9
    assert t.p_greater == pytest.approx(0.05)
    assert t.p_less == pytest.approx(1.0)


def test_rank_test_exact_matches_enumeration():
    import itertools

    x, y = [1.5, 3.2, 7.0, 8.1], [2.0, 2.5, 4.0, 5.5, 6.0]
    observed = stats.mann_whitney(x, y)
    pooled = x + y
    # Enumerate every split of the pooled values into groups of |x| and |y|.
    us = []
    for chosen in itertools.combinations(range(len(pooled)), len(x)):
        xs = [pooled[i] for i in chosen]
        ys = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        us.append(sum(1 for a in xs for b in ys if a > b))
    p = sum(1 for u in us if u >= observed.u) / len(us)
    assert observed.p_greater == pytest.approx(p)


def test_rank_test_normal_approximation_against_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    x = [rng.gauss(1.02, 0.05) for _ in range(150)]
    y = [rng.gauss(1.00, 0.05) for _ in range(120)]
    ours = stats.mann_whitney(x, y)
    ref = scipy_stats.mannwhitneyu(x, y, alternative="greater", method="asymptotic", use_continuity=True)
    assert ours.method == "normal"
    assert ours.u == pytest.approx(ref.statistic)
    assert ours.p_greater == pytest.approx(ref.pvalue, rel=1e-6)


def test_rank_test_ties_use_corrected_variance():
    scipy_stats = pytest.importorskip("scipy.stats")
    x = [1, 1, 2, 2, 3, 3, 3, 4] * 5
    y = [1, 2, 2, 2, 3, 3, 4, 4] * 5
    ours = stats.mann_whitney(x, y)
    ref = scipy_stats.mannwhitneyu(x, y, alternative="less", method="asymptotic")
    assert ours.p_less == pytest.approx(ref.pvalue, rel=1e-6)


def test_rank_test_identical_samples_give_no_evidence():
    t = stats.mann_whitney([2.0] * 50, [2.0] * 50)
    assert t.p_greater == 1.0 and t.p_less == 1.0


# ----------------------------------------------------------------------------- documents

def _samples(median: float, n: int = 200, spread: float = 0.01, seed: int = 0) -> dict:
    rng = random.Random(seed)
    xs = [median * (1 + rng.gauss(0, spread)) for _ in range(n)]
    return {"samples_ms": xs, "median_ms": sorted(xs)[n // 2], "n": n}


ENV = {"gpu": {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "compute_capability": "9.0"},
       "driver": "580.00", "cuda": "13.0", "torch": "2.11.0", "nvidia-cutlass-dsl": "4.8.1",
       "timing": {"clock_control": "none", "flush_l2": True}, "static": {"analysis": 1},
       "git": {"commit": "abc"}}


def _static_kernel(registers=32, ffma=17, spill=0):
    return {"index": 0, "name": "kernel_rms", "metrics": {
        "launch__registers_per_thread": {"value": registers, "unit": "register/thread"},
        "launch__shared_mem_per_block_static": {"value": 1024, "unit": "byte"},
        "launch__block_size": {"value": 256, "unit": ""},
        "static__spill_store_bytes": {"value": spill, "unit": "byte"},
    }, "instruction_mix": {"FFMA": ffma, "LDG": 4}}


def _doc(target_ms=0.1, ref_ms=0.12, seed=0, **static):
    return {"schema": "kernelscope.baseline", "schema_version": 1, "kind": "gpu", "environment": copy.deepcopy(ENV),
            "cases": [{"id": "rms", "target": "rmsnorm", "shape": {"M": 16, "N": 4}, "config": {}, "dtype": "bfloat16",
                       "arch": "sm_90a", "correctness": {"ok": True},
                       "timing": {"target": _samples(target_ms, seed=seed), "reference": _samples(ref_ms, seed=seed + 1)},
                       "static": [_static_kernel(**static)]}]}


def _verdict(result, family, metric):
    return next(m for m in result.metrics if m.family == family and m.metric == metric)


def test_same_distribution_passes():
    result = g.gate(_doc(seed=0), _doc(seed=10))
    assert result.verdict == g.PASS
    assert result.exit_code == 0


def test_slower_target_is_a_regression_of_the_timing_only():
    result = g.gate(_doc(), _doc(target_ms=0.11, seed=3))
    t = _verdict(result, "timing", "target")
    assert t.verdict == g.REGRESSION
    assert t.change == pytest.approx(0.10, abs=0.01)
    assert t.p_value < 1e-6
    assert _verdict(result, "timing", "reference").verdict == g.PASS
    assert result.exit_code == g.EXIT_REGRESSION


def test_small_but_significant_change_passes():
    # 1.5% slower with 200 samples each at 0.2% spread: certainly real, but below 3%.
    base = _doc()
    cur = _doc(seed=5)
    base["cases"][0]["timing"]["target"] = _samples(0.1, spread=0.002, seed=1)
    cur["cases"][0]["timing"]["target"] = _samples(0.1015, spread=0.002, seed=2)
    t = _verdict(g.gate(base, cur), "timing", "target")
    assert t.p_value < 0.01
    assert t.verdict == g.PASS
    assert "below" in t.reason


def test_large_change_without_evidence_is_inconclusive():
    base, cur = _doc(), _doc()
    # Two modes: the median jumps from one to the other while the ranks barely move.
    base["cases"][0]["timing"]["target"] = {"samples_ms": [1.0] * 7 + [3.0] * 5}
    cur["cases"][0]["timing"]["target"] = {"samples_ms": [1.0] * 5 + [3.0] * 7}
    t = _verdict(g.gate(base, cur), "timing", "target")
    assert t.change > 1 and t.p_value > 0.1
    assert t.verdict == g.INCONCLUSIVE


def test_min_effect_is_configurable_per_metric():
    policy = gate_policy.Policy().with_rules([gate_policy.MetricRule("timing:target", min_effect=0.2)])
    result = g.gate(_doc(), _doc(target_ms=0.11, seed=3), policy)
    assert _verdict(result, "timing", "target").verdict == g.PASS


def test_faster_target_is_an_improvement_and_exits_zero():
    result = g.gate(_doc(), _doc(target_ms=0.09, seed=4))
    assert _verdict(result, "timing", "target").verdict == g.IMPROVEMENT
    assert result.exit_code == 0


def test_improvement_accepts_worse_static_facts():
    result = g.gate(_doc(), _doc(target_ms=0.09, seed=4, registers=40))
    regs = _verdict(result, "static", "launch__registers_per_thread")
    assert regs.verdict == g.PASS and "accepted" in regs.reason
    assert result.exit_code == 0


def test_reference_drift_makes_the_target_inconclusive():
    result = g.gate(_doc(), _doc(target_ms=0.11, ref_ms=0.132, seed=3))
    assert _verdict(result, "timing", "reference").verdict == g.INCONCLUSIVE
    assert _verdict(result, "timing", "target").verdict == g.INCONCLUSIVE
    assert result.exit_code == g.EXIT_INCONCLUSIVE


def test_too_few_samples_is_inconclusive():
    base, cur = _doc(), _doc()
    cur["cases"][0]["timing"]["target"] = {"samples_ms": [0.1, 0.1, 0.1]}
    t = _verdict(g.gate(base, cur), "timing", "target")
    assert t.verdict == g.INCONCLUSIVE and "too few" in t.reason


# ----------------------------------------------------------------------------- counters

def test_registers_are_exact_and_lower_is_better():
    result = g.gate(_doc(registers=30), _doc(registers=32))
    regs = _verdict(result, "static", "launch__registers_per_thread")
    assert regs.verdict == g.REGRESSION
    assert result.exit_code == 1
    assert _verdict(g.gate(_doc(registers=32), _doc(registers=30)), "static",
                    "launch__registers_per_thread").verdict == g.IMPROVEMENT


def test_opcode_counts_are_compared_with_absent_as_zero():
    base, cur = _doc(), _doc()
    cur["cases"][0]["static"][0]["instruction_mix"]["STL"] = 2
    result = g.gate(base, cur)
    stl = _verdict(result, "static", "sass.STL")
    assert (stl.baseline, stl.current, stl.verdict) == (0, 2, g.REGRESSION)


def test_launch_shape_change_has_no_direction():
    base, cur = _doc(), _doc()
    cur["cases"][0]["static"][0]["metrics"]["launch__block_size"]["value"] = 512
    assert _verdict(g.gate(base, cur), "static", "launch__block_size").verdict == g.INCONCLUSIVE


def test_counter_tolerance_rules():
    base, cur = _doc(), _doc()
    for d, v in ((base, 1_000_000), (cur, 1_030_000)):
        d["cases"][0]["counters"] = [{"index": 0, "name": "k", "metrics": {"dram__bytes_read.sum": {"value": v, "unit": "byte"}},
                                      "instruction_mix": {}}]
    for d in (base, cur):
        d["environment"]["ncu"] = {"version": "2025.3.1.0", "clock_control": "none", "cache_control": "all"}
    assert _verdict(g.gate(base, cur), "counters", "dram__bytes_read.sum").verdict == g.PASS   # 3% < 5%
    strict = gate_policy.Policy().with_rules([gate_policy.MetricRule("counters:dram__*", rel=0.01)])
    assert _verdict(g.gate(base, cur, strict), "counters", "dram__bytes_read.sum").verdict == g.REGRESSION
    ignored = gate_policy.Policy().with_rules([gate_policy.MetricRule("counters:dram__*", ignore=True)])
    assert not [m for m in g.gate(base, cur, ignored).metrics if m.metric == "dram__bytes_read.sum"]


def test_metric_missing_on_one_side_is_inconclusive_with_reason():
    base, cur = _doc(), _doc()
    del cur["cases"][0]["static"][0]["metrics"]["static__spill_store_bytes"]
    v = _verdict(g.gate(base, cur), "static", "static__spill_store_bytes")
    assert v.verdict == g.INCONCLUSIVE
    assert "not collected in the current run" in v.reason


def test_a_metric_the_baseline_never_had_passes_uncompared():
    # A newer kernelscope adds a metric: the baseline lost nothing, so the gate does not fail on
    # it (a metric the baseline has and the run lacks stays inconclusive, above).
    base, cur = _doc(), _doc()
    cur["cases"][0]["static"][0]["metrics"]["kernelscope__sass_new_count"] = 4
    result = g.gate(base, cur)
    v = _verdict(result, "static", "kernelscope__sass_new_count")
    assert v.verdict == g.PASS and "new since the baseline" in v.reason
    assert result.exit_code == 0
    # A baseline entry that holds no metric at all compared nothing: every metric is inconclusive.
    base["cases"][0]["static"][0]["metrics"] = {}
    empty = g.gate(base, cur)
    assert _verdict(empty, "static", "kernelscope__sass_new_count").verdict == g.INCONCLUSIVE
    assert empty.exit_code == g.EXIT_INCONCLUSIVE


def test_counters_collected_on_one_side_only():
    base, cur = _doc(), _doc()
    base["cases"][0]["counters"] = [{"index": 0, "name": "k", "metrics": {}, "instruction_mix": {}}]
    result = g.gate(base, cur)
    assert any(m.family == "counters" and m.verdict == g.INCONCLUSIVE for m in result.metrics)


# ----------------------------------------------------------------------------- environment, cases

@pytest.mark.parametrize("key,value", [("gpu.name", "NVIDIA H200"), ("timing.clock_control", "base"),
                                       ("driver", "590.00"), ("nvidia-cutlass-dsl", "4.9.0")])
def test_different_environment_is_never_a_pass(key, value):
    cur = _doc(seed=9)
    node = cur["environment"]
    *parents, leaf = key.split(".") if key != "nvidia-cutlass-dsl" else [key]
    for p in parents:
        node = node[p]
    node[leaf] = value
    result = g.gate(_doc(), cur)
    t = _verdict(result, "timing", "target")
    assert t.verdict == g.INCONCLUSIVE and "environment differs" in t.reason
    assert result.exit_code == g.EXIT_INCONCLUSIVE
    assert any(d.key == key for d in result.environment_differences)


def test_ncu_version_matters_only_for_counters():
    base, cur = _doc(), _doc(seed=2)
    base["environment"]["ncu"] = {"version": "2025.3.1.0"}
    cur["environment"]["ncu"] = {"version": "2025.4.0.0"}
    # Neither side has counters: the version of a tool that was not used does not matter.
    assert g.gate(base, cur).verdict == g.PASS


def test_regression_beats_inconclusive_and_accept_flag():
    base, cur = _doc(), _doc(target_ms=0.11, seed=3)
    cur["cases"][0]["static"][0]["metrics"]["launch__block_size"]["value"] = 128
    result = g.gate(base, cur, gate_policy.Policy(accept_inconclusive=True))
    assert result.exit_code == g.EXIT_REGRESSION
    only_unsure = _doc(seed=1)
    only_unsure["cases"][0]["static"][0]["metrics"]["launch__block_size"]["value"] = 128
    assert g.gate(base, only_unsure).exit_code == g.EXIT_INCONCLUSIVE
    assert g.gate(base, only_unsure, gate_policy.Policy(accept_inconclusive=True)).exit_code == 0


def test_cases_missing_on_either_side():
    base, cur = _doc(), _doc()
    cur["cases"][0]["id"] = "other"
    result = g.gate(base, cur)
    reasons = {c.case: c.metrics[0].reason for c in result.cases}
    assert "no baseline" in reasons["other"]
    assert "not in this run" in reasons["rms"]
    assert result.exit_code == g.EXIT_INCONCLUSIVE


def test_wrong_output_is_a_regression_even_when_faster():
    cur = _doc(target_ms=0.05, seed=2)
    cur["cases"][0]["correctness"] = {"ok": False, "summary": "12 elements over tolerance"}
    result = g.gate(_doc(), cur)
    assert _verdict(result, "correctness", "output").verdict == g.REGRESSION
    assert result.exit_code == 1


def test_static_family_only():
    cur = _doc(target_ms=0.2)
    result = g.gate(_doc(), cur, families=[gate_policy.STATIC])
    assert {m.family for m in result.metrics} == {"static"}
    assert result.verdict == g.PASS


def test_rule_validation():
    from kernelscope.errors import UserError

    with pytest.raises(UserError, match="unknown key"):
        gate_policy.MetricRule.from_dict({"match": "timing:*", "tolerance": 1})
    with pytest.raises(UserError, match="alpha"):
        gate_policy.MetricRule.from_dict({"match": "timing:*", "alpha": 2})
    assert math.isclose(gate_policy.Policy().rule_for("timing", "target").min_effect, 0.03)


def test_a_catalog_that_does_not_load_stops_the_gate(monkeypatch):
    # Judging without the catalog's directions would call every change "lower is better":
    # the malformed catalog is reported, not skipped.
    from kernelscope.errors import UserError

    def broken_catalog():
        raise UserError("catalog.toml: not valid TOML (line 3)")

    monkeypatch.setattr(gate_policy, "load_catalog", broken_catalog)
    with pytest.raises(UserError, match="not valid TOML"):
        g.gate(_doc(), _doc())
    monkeypatch.undo()
    assert gate_policy.catalog_directions()["launch__registers_per_thread"] == "lower"


def test_a_case_measured_on_another_gpu_model_is_inconclusive_even_in_one_environment():
    # A baseline saved over several GPUs records each case's device; same environment facts
    # (a host with two models reports "mixed" on both sides) must not hide it.
    base, cur = _doc(), _doc(target_ms=0.2, seed=4)
    for doc in (base, cur):
        doc["environment"]["gpu"] = {"name": "mixed: NVIDIA H100 80GB HBM3, NVIDIA H200"}
    base["cases"][0]["device"] = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-a"}
    cur["cases"][0]["device"] = {"name": "NVIDIA H200", "uuid": "GPU-b"}
    result = g.gate(base, cur)
    t = _verdict(result, "timing", "target")
    assert t.verdict == g.INCONCLUSIVE and "measured on NVIDIA H100 80GB HBM3 in the baseline" in t.reason
    assert "would be REGRESSION" in t.reason
    assert result.exit_code == g.EXIT_INCONCLUSIVE
    # Same model, another card of it: comparable.
    cur["cases"][0]["device"] = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-c"}
    assert _verdict(g.gate(base, cur), "timing", "target").verdict == g.REGRESSION
