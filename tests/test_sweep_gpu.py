"""The sweep's point task on a real GPU: rmsnorm compiled, launched, timed (with fresh inputs and
every timing check) against torch on the same device and checked on the host; the row names the device it ran on."""

import pytest

from kernelscope.profiler import executors, sweep_journal, sweep_runner


@pytest.mark.gpu
def test_measure_point_times_checks_and_names_the_device(tmp_path):
    plan = sweep_runner.SweepPlan(target="rmsnorm", reference="torch.rmsnorm", dtype="bfloat16", rep_ms=10.0,
                                  fresh_inputs=True)
    shapes = [{"M": 2048, "N": 4096}]
    points = sweep_runner.plan_points(shapes, [{"threads": 128, "vec": 8}, {"threads": 256, "vec": 8}])
    journal = sweep_journal.Journal.start(str(tmp_path / "g.jsonl"), plan.header(shapes), resume=False)
    out = sweep_runner.run_sweep(plan, points, executors.SerialExecutor(), journal)
    rows = out.document["rows"]
    assert [r["status"] for r in rows] == ["ok", "ok"]
    for r in rows:
        assert r["timing"]["median_ms"] > 0 and r["reference_timing"]["median_ms"] > 0
        assert r["correctness"]["ok"] and r["speed_vs_reference_pct"] > 0
        checks = r["timing"]["checks"]
        assert checks["suspect"] is False and "fresh_inputs_differ" in checks["ran"]
        assert "output_after_timing" in checks["ran"]
        assert r["device"]["name"] and r["device"]["uuid"].startswith("GPU-")
    assert len(out.document["devices"]) == 1 and out.document["devices"][0]["rows"] == 2
