"""`baseline save --gpus/--scheduler`: cases measured through an executor, each recording its
device; the document matches a one-GPU run's when every device agrees, says `mixed` when
they do not (the gate then stays INCONCLUSIVE), and a case failing twice keeps the rest."""

from __future__ import annotations

import json

import pytest

from kernelscope.errors import UserError
from kernelscope.gate import distributed as suite_runner
from kernelscope.gate import verdicts as gate
from kernelscope.gate.baseline import load_baseline
from kernelscope.gate.runner import _case_record
from kernelscope.gate.suite import load_suite
from kernelscope.profiler import executors

H100 = {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "compute_capability": "9.0"}
H200 = {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0"}


def _fake_run_case(models: dict[str, dict], fail: dict[str, int] | None = None):
    """A run_case that measures nothing: each case 'runs' on the GPU model named for it."""
    fail = dict(fail or {})

    def run_case(case, suite, use_cache, keep_reports):
        if fail.get(case.id, 0) > 0:
            fail[case.id] -= 1
            raise RuntimeError("CUDA error: out of memory")
        gpu = models[case.id]
        record = dict(_case_record(case), correctness={"ok": True},
                      timing={"target": {"samples_ms": [0.1] * 20, "median_ms": 0.1, "n": 20}},
                      device={"name": gpu["name"], "uuid": f"GPU-{gpu['name'][-4:]}", "host": "h"})
        env = {"gpu": gpu, "driver": "580.00", "cuda": "13.0", "torch": "2.11.0",
               "timing": {"clock_control": "none", "flush_l2": True}}
        return {"record": record, "ncu": None, "gpu_environment": env}

    return run_case


@pytest.fixture
def suite():
    return load_suite("suites/gpu.toml")


def test_cases_on_one_model_give_the_one_gpu_environment(suite, monkeypatch, tmp_path):
    monkeypatch.setattr(suite_runner, "run_case", _fake_run_case({c.id: H100 for c in suite.cases}))
    doc = suite_runner.run_suite_on(executors.SerialExecutor(), suite, output=str(tmp_path / "b.json"))
    assert [c["id"] for c in doc["cases"]] == [c.id for c in suite.cases]
    assert doc["environment"]["gpu"] == H100 and doc["environment"]["driver"] == "580.00"
    assert all(c["device"]["name"] == H100["name"] for c in doc["cases"])
    assert gate.gate(doc, json.loads(json.dumps(doc))).verdict == gate.PASS


def test_cases_on_two_models_are_mixed_and_the_gate_stays_inconclusive(suite, monkeypatch, tmp_path):
    ids = [c.id for c in suite.cases]
    monkeypatch.setattr(suite_runner, "run_case", _fake_run_case({ids[0]: H100, ids[1]: H200}))
    mixed = suite_runner.run_suite_on(executors.SerialExecutor(), suite, output=str(tmp_path / "m.json"))
    assert mixed["environment"]["gpu"]["name"] == "mixed: NVIDIA H100 80GB HBM3, NVIDIA H200"
    monkeypatch.setattr(suite_runner, "run_case", _fake_run_case({i: H100 for i in ids}))
    single = suite_runner.run_suite_on(executors.SerialExecutor(), suite, output=str(tmp_path / "s.json"))
    result = gate.gate(single, mixed)
    assert result.verdict == gate.INCONCLUSIVE and result.exit_code == gate.EXIT_INCONCLUSIVE
    timing = [m for m in result.metrics if m.family == "timing"]
    assert timing and all(m.verdict == gate.INCONCLUSIVE for m in timing)


def test_a_case_failing_once_is_retried_and_twice_ends_the_run_keeping_the_rest(suite, monkeypatch, tmp_path):
    ids = [c.id for c in suite.cases]
    monkeypatch.setattr(suite_runner, "run_case", _fake_run_case({i: H100 for i in ids}, fail={ids[0]: 1}))
    doc = suite_runner.run_suite_on(executors.SerialExecutor(), suite, output=str(tmp_path / "r.json"))
    assert len(doc["cases"]) == len(ids)
    monkeypatch.setattr(suite_runner, "run_case", _fake_run_case({i: H100 for i in ids}, fail={ids[0]: 2}))
    out = tmp_path / "f.json"
    with pytest.raises(UserError, match="failed twice: RuntimeError: CUDA error: out of memory") as e:
        suite_runner.run_suite_on(executors.SerialExecutor(), suite, output=str(out))
    assert e.value.exit_code == 3
    partial = load_baseline(str(out) + ".partial.json")
    assert [c["id"] for c in partial["cases"]] == ids[1:]
