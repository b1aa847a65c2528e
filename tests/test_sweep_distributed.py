"""Sweeps spread over Dask workers, tested without a GPU: fake measure functions on a local
Dask cluster whose workers hold a fake GPU resource; a worker that dies; Ctrl-C and resume;
the serial, local-cluster and existing-cluster paths giving the same merged JSON."""

from __future__ import annotations

import json
import os
import sys

import pytest

import sweep_fakes
from terminal_signals import sigint_as_at_a_terminal
from kernelscope.errors import UserError
from kernelscope.profiler import executors, sweep_journal, sweep_runner

CONFIGS = [{"threads": t, "vec": v} for t in (128, 256, 512) for v in (2, 3, 4)]
SHAPES = [{"M": 64, "N": 256}, {"M": 64, "N": 512}]


def _plan(tmp_path):
    return sweep_runner.SweepPlan(target="rmsnorm", reference="torch.rmsnorm", dtype="bfloat16",
                                  report_dir=str(tmp_path))


def _run(tmp_path, name, executor, measure, resume=False, **kw):
    plan = _plan(tmp_path)
    points = sweep_runner.plan_points(SHAPES, CONFIGS)
    journal = sweep_journal.Journal.start(str(tmp_path / name), plan.header(SHAPES), resume=resume)
    try:
        return sweep_runner.run_sweep(plan, points, executor, journal, measure=measure, **kw)
    finally:
        executor.close()


def _journal_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def dask_available():
    pytest.importorskip("distributed")


# ----------------------------------------------------------------------------- without Dask

def test_serial_sweep_journals_every_point_and_merges_in_project_order(tmp_path):
    out = _run(tmp_path, "s.jsonl", executors.SerialExecutor(), sweep_fakes.fake_measure)
    doc = out.document
    assert doc["schema"] == "kernelscope.sweep" and not out.interrupted
    assert len(doc["rows"]) == len(SHAPES) * len(CONFIGS) == 18
    timed = [r for r in doc["rows"] if r["timing"]]
    assert [r["timing"]["median_ms"] for r in timed] == sorted(r["timing"]["median_ms"] for r in timed)
    assert [r["status"] for r in doc["rows"][len(timed):]] == ["invalid"] * 6
    # speed against the reference timed on the same device: 1.0 ms / (128/4/100 ms)
    fastest = timed[0]
    assert fastest["config"] == {"threads": 128, "vec": 4}
    assert fastest["speed_vs_reference_pct"] == pytest.approx(100.0 * 1.0 / 0.32)
    assert doc["reference_timing"]["median_ms"] == 1.0 and doc["mixed_device_models"] is False
    assert doc["devices"] == [{"uuid": "GPU-fake", "name": "Fake GPU", "host": "testhost", "driver": "580.00",
                               "rows": 12}]
    lines = _journal_lines(tmp_path / "s.jsonl")
    assert lines[0]["kind"] == sweep_journal.HEADER_KIND and len(lines) == 19
    assert out.progress.done == 18 and out.progress.remaining == 0


def test_a_point_that_fails_twice_is_failed_with_its_reason_and_the_sweep_goes_on(tmp_path):
    out = _run(tmp_path, "f.jsonl", executors.SerialExecutor(), sweep_fakes.always_raising_measure)
    failed = [r for r in out.document["rows"] if r["status"] == "failed"]
    assert len(failed) == 6 and all(r["config"]["threads"] == 128 for r in failed)
    assert "illegal memory access" in failed[0]["message"] and "attempt 2" in failed[0]["message"]
    assert "attempt 1" in failed[0]["retries"][0]
    assert sum(r["status"] == "ok" for r in out.document["rows"]) == 8
    assert out.progress.failed == 6 and out.progress.retried == 6


def test_ctrl_c_keeps_what_finished_and_resume_skips_it(tmp_path):
    interrupt = sweep_fakes.InterruptAfter(6)
    out = _run(tmp_path, "r.jsonl", executors.SerialExecutor(), interrupt)
    assert out.interrupted and len(_journal_lines(tmp_path / "r.jsonl")) == 1 + 5
    calls = []

    def counting(plan, point, profile_fn=None):
        calls.append(point.index)
        return sweep_fakes.fake_measure(plan, point)

    resumed = _run(tmp_path, "r.jsonl", executors.SerialExecutor(), counting, resume=True)
    assert sorted(calls) == list(range(5, 18)) and resumed.progress.skipped == 5
    straight = _run(tmp_path, "straight.jsonl", executors.SerialExecutor(), sweep_fakes.fake_measure)
    assert resumed.document == straight.document


def test_journal_refuses_to_overwrite_or_resume_another_sweep_and_ignores_a_torn_last_line(tmp_path):
    _run(tmp_path, "j.jsonl", executors.SerialExecutor(), sweep_fakes.fake_measure)
    plan = _plan(tmp_path)
    with pytest.raises(UserError, match="exists: pass --resume"):
        sweep_journal.Journal.start(str(tmp_path / "j.jsonl"), plan.header(SHAPES), resume=False)
    other = sweep_runner.SweepPlan(target="rmsnorm", reference="torch.rmsnorm", dtype="float16")
    with pytest.raises(UserError, match="dtype='bfloat16'"):
        sweep_journal.Journal.start(str(tmp_path / "j.jsonl"), other.header(SHAPES), resume=True)
    with open(tmp_path / "j.jsonl", "a") as f:
        f.write('{"kind": "point", "key": "x", "sta')           # the process died mid-line
    header, records = sweep_journal.read(str(tmp_path / "j.jsonl"))
    assert len(records) == 18 and header["dtype"] == "bfloat16"


def test_ctrl_c_while_a_point_is_written_keeps_the_file_and_the_records_in_step(tmp_path, monkeypatch):
    """The SIGINT lands between the fsync of a line and the in-memory record: it must wait until both hold it."""
    import signal
    import threading

    plan = _plan(tmp_path)
    journal = sweep_journal.Journal.start(str(tmp_path / "i.jsonl"), plan.header(SHAPES), resume=False)
    write_line = sweep_journal.Journal._append

    def write_then_ctrl_c(self, obj):
        write_line(self, obj)
        if obj.get("kind") == sweep_journal.POINT_KIND:
            os.kill(os.getpid(), signal.SIGINT)

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run on the main thread only")
    monkeypatch.setattr(sweep_journal.Journal, "_append", write_then_ctrl_c)
    # A pytest-xdist worker ignores SIGINT; the command line has Python's default handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            journal.add({"index": 0, "key": "k0", "status": "ok", "final": True})
    finally:
        signal.signal(signal.SIGINT, previous)
    _, on_disk = sweep_journal.read(journal.path)
    assert [r["key"] for r in on_disk] == [r["key"] for r in journal.records] == ["k0"]


def test_a_suspect_timing_is_kept_unranked_and_not_measured_again_on_resume(tmp_path):
    out = _run(tmp_path, "c.jsonl", executors.SerialExecutor(), sweep_fakes.checked_measure)
    rows = out.document["rows"]
    suspect = [r for r in rows if r["status"] == "suspect"]
    assert [r["config"] for r in suspect] == [{"threads": 512, "vec": 4}] * 2
    for r in suspect:
        assert r["timing"]["median_ms"] == 0.001 and r["timing"]["checks"]["failed"] == ["physical_floor"]
        assert r["message"].startswith("SUSPECT: physical_floor") and r["speed_vs_reference_pct"] is None
    ranked = [r for r in rows if r["status"] == "ok"]
    assert rows[:len(ranked)] == ranked              # the fastest (impossible) time is not first
    assert all(r["timing"]["checks"]["suspect"] is False and r["speed_vs_reference_pct"] for r in ranked)
    again = _run(tmp_path, "c.jsonl", executors.SerialExecutor(), sweep_fakes.always_raising_measure, resume=True)
    assert again.progress.skipped == 18 and again.document == out.document


def test_rows_of_two_gpu_models_are_never_one_ratio():
    def row(i, name, ms, ref_ms):
        return {"index": i, "key": str(i), "shape": {}, "config": {"i": i}, "status": "ok", "final": True,
                "timing": {"median_ms": ms}, "reference_timing": {"median_ms": ref_ms},
                "device": {"name": name, "uuid": f"GPU-{name}", "host": "h", "driver": "1"}}

    doc = sweep_journal.merge({"target": "t"}, [row(0, "H100", 2.0, 1.0), row(1, "H200", 1.0, 0.5)])
    assert doc["mixed_device_models"] is True and doc["reference_timing"] is None
    by_index = {r["index"]: r["speed_vs_reference_pct"] for r in doc["rows"]}
    assert by_index == {0: 50.0, 1: 50.0}
    assert [d["name"] for d in doc["devices"]] == ["H100", "H200"]


def test_the_report_of_a_sweep_over_two_models_says_which_row_came_from_which_device():
    from kernelscope.reports import html, html_pages

    def row(i, name, ms):
        return {"index": i, "key": str(i), "shape": {"M": 8}, "config": {"threads": 128 * (i + 1)}, "status": "ok",
                "final": True, "timing": {"median_ms": ms, "iqr_ms": 0.0}, "reference_timing": {"median_ms": 1.0},
                "device": {"name": name, "uuid": f"GPU-{name}", "host": "h", "driver": "580"}}

    doc = sweep_journal.merge({"target": "rmsnorm", "reference": "torch.rmsnorm"},
                              [row(0, "H100", 2.0), row(1, "H200", 1.0)])
    page = html_pages.sweep_page(doc)
    text = html.render(page)
    assert "device 0: H100 GPU-H100 on h (driver 580), 1 rows; device 1: H200 GPU-H200" in text
    assert "times of different models are not comparable" in text
    assert "<th>device</th>" in text and "threads=256 on H200" in text


def test_without_dask_the_flags_say_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(UserError, match=r"pip install 'kernelscope\[dask\]'") as e:
        executors.make_executor("all", None)
    assert e.value.exit_code == 3
    with pytest.raises(UserError, match="not both"):
        executors.make_executor("0", "tcp://h:8786")


# ----------------------------------------------------------------------------- on Dask

@pytest.mark.slow
def test_local_cluster_and_existing_cluster_merge_to_the_serial_result(tmp_path, dask_available):
    from distributed import LocalCluster

    serial = _run(tmp_path, "serial.jsonl", executors.SerialExecutor(), sweep_fakes.fake_measure).document
    local = _run(tmp_path, "local.jsonl", executors.DaskExecutor.local(["0", "1"], workers_per_gpu=1),
                 sweep_fakes.fake_measure).document
    with LocalCluster(n_workers=2, threads_per_worker=1, resources={"GPU": 1}, processes=True,
                      dashboard_address=None) as cluster:
        remote = _run(tmp_path, "remote.jsonl", executors.DaskExecutor.connect(cluster.scheduler_address),
                      sweep_fakes.fake_measure).document
    assert local == serial and remote == serial
    checked_serial = _run(tmp_path, "cs.jsonl", executors.SerialExecutor(), sweep_fakes.checked_measure).document
    checked_local = _run(tmp_path, "cl.jsonl", executors.DaskExecutor.local(["0", "1"], workers_per_gpu=1),
                         sweep_fakes.checked_measure).document
    assert checked_local == checked_serial
    assert [r["status"] for r in checked_local["rows"]].count("suspect") == 2
    assert len(_journal_lines(tmp_path / "local.jsonl")) == len(_journal_lines(tmp_path / "remote.jsonl")) == 19


@pytest.mark.slow
def test_a_dead_worker_fails_its_point_with_the_reason_and_it_is_retried_once(tmp_path, dask_available):
    out = _run(tmp_path, "d.jsonl", executors.DaskExecutor.local(["0", "1"], workers_per_gpu=1),
               sweep_fakes.dying_measure)
    rows = {json.dumps([r["shape"], r["config"]]): r for r in out.document["rows"]}
    died = [r for r in rows.values() if r["config"] == {"threads": 256, "vec": 4}]
    assert len(died) == 2 and all(r["status"] == "ok" for r in died)
    assert all("worker died" in r["retries"][0] for r in died)
    failed_lines = [ln for ln in _journal_lines(tmp_path / "d.jsonl")[1:] if ln["status"] == "failed"]
    assert len(failed_lines) == 2 and not any(ln["final"] for ln in failed_lines)
    assert out.progress.done == 18 and out.progress.failed == 0 and out.progress.retried == 2


@pytest.mark.slow
def test_a_cluster_without_gpu_workers_is_refused(dask_available):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with pytest.raises(UserError, match="--resources GPU=1") as e:
            executors.DaskExecutor.connect(cluster.scheduler_address)
    assert e.value.exit_code == 3


def test_mixed_gpu_models_on_one_host_are_reported_per_device(tmp_path, dask_available, monkeypatch):
    monkeypatch.setenv("KS_FAKE_MODELS", "0=Fake H100,1=Fake H200")
    out = _run(tmp_path, "m.jsonl", executors.DaskExecutor.local(["0", "1"], workers_per_gpu=1),
               sweep_fakes.fake_measure)
    doc = out.document
    names = {d["name"] for d in doc["devices"]}
    if len(names) == 1:
        pytest.skip("one worker took every point")
    assert doc["mixed_device_models"] and doc["reference_timing"] is None
    assert sum(d["rows"] for d in doc["devices"]) == 12


@pytest.mark.slow
def test_ctrl_c_on_the_command_exits_130_keeping_the_journal_and_the_merged_json(tmp_path, dask_available):
    """The CLI against an existing cluster on this CPU machine: the points fail (no CUDA here),
    which is enough to see them journaled before Ctrl-C arrives."""
    import os
    import signal
    import subprocess
    import time
    from pathlib import Path

    from distributed import LocalCluster

    root = Path(__file__).resolve().parent.parent
    with LocalCluster(n_workers=1, threads_per_worker=1, resources={"GPU": 1}, processes=True,
                      dashboard_address=None) as cluster:
        json_path = tmp_path / "s.json"
        proc = subprocess.Popen([sys.executable, "-m", "kernelscope", "sweep", str(root / "tests/examples/my_scale.py:SPEC"),
                                 "--vs", "none", "--scheduler", cluster.scheduler_address, "--json", str(json_path)],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "COLUMNS": "160"}, preexec_fn=sigint_as_at_a_terminal)
        journal = tmp_path / "s.jsonl"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and len(journal.read_text().splitlines()) >= 2:
                break
            time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted:" in err and f"--resume {journal}" in err and "Traceback" not in err
    doc = json.loads(json_path.read_text())
    header, records = sweep_journal.read(str(journal))
    assert records and len(doc["rows"]) == len({r["key"] for r in records})
    assert header["target"].endswith("tests/examples/my_scale.py:SPEC")


@pytest.mark.slow
def test_local_workers_share_the_host_cores_instead_of_each_taking_all(dask_available, monkeypatch):
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 16)
    executor = executors.DaskExecutor.local(["0", "1"], workers_per_gpu=2)
    try:
        seen = executor._client.run(lambda: (os.environ.get("OMP_NUM_THREADS"), os.environ.get("CUDA_VISIBLE_DEVICES")))
    finally:
        executor.close()
    assert sorted(seen.values()) == [("4", "0"), ("4", "0"), ("4", "1"), ("4", "1")]
