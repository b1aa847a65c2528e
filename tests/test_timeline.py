"""`show --timeline`: ncu's PM samples of a launch and the phases read from them, on a real H200
full-set report (PmSampling included) of an elementwise add and cuBLAS's GEMM (tests/fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelscope.cli.main import _register, cli
from kernelscope.errors import UserError
from kernelscope.profiler.report import load_report
from kernelscope.profiler.sources import load_profiles
from kernelscope.profiler.timeline import Timeline, phases

pytest.importorskip("ncu_report")

_register()
SCHEMA = Path(__file__).resolve().parent.parent / "docs" / "schemas" / "show.schema.json"
# The H200 full-set report (--set full includes PmSampling): an elementwise add (no tensor pipe)
# and cuBLAS's GEMM (tests/fixtures/README.md).
PM = "h200-cute-add-and-cublas-gemm.full.ncu-rep"
WITHOUT_PM = "h200-gemm-vs-cublas-2048.quick.ncu-rep"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def pair(fixture_file):
    return load_report(fixture_file(PM), timeline=True)


def test_both_kernels_have_a_timeline_on_one_axis(pair):
    assert pair[0].name.startswith("kernel_cutlass_add_kernel")
    assert pair[1].name == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    for p in pair:
        t = p.timeline
        assert isinstance(t, Timeline)
        assert t.interval_us == 1.5               # profiler__pmsampler_interval_time, 1500 ns
        assert list(t.series) == ["tensor_pipe_pct", "issue_pct", "dram_read_pct", "dram_write_pct", "l2_pct",
                                  "sm_active_cycles", "clusters_active"]
        assert t.left_out == []
        assert all(len(v) == len(t.times_us) for v in t.series.values())
        # Timestamp-0 samples are skipped: the times rise, ~1.5 us apart, 0 at the first active sample.
        gaps = [b - a for a, b in zip(t.times_us, t.times_us[1:])]
        assert min(gaps) > 1.45 and max(gaps) < 1.55
        first, last = t.active()
        assert t.times_us[first] == 0.0 and t.times_us[first - 1] < 0
        assert t.series["sm_active_cycles"][first - 1] == 0 and t.series["sm_active_cycles"][last + 1] == 0
        # The samples span more than the kernel: zeros before and after it.
        assert first > 50 and len(t.times_us) - last > 50


def test_plateau_ramp_and_tail_of_the_tensor_pipe(pair):
    found = phases(pair[1].timeline)
    assert found.series == "tensor_pipe_pct"
    assert found.plateau > 99.9
    # Spans are whole intervals: two samples to reach the plateau; the last wave, on fewer SMs, runs
    # at ~88 % of the pipe, below 90 % of the plateau, so it is the tail (30 samples).
    assert found.ramp_us == found.ramp_intervals * 1.5 and found.tail_us == found.tail_intervals * 1.5
    assert (found.ramp_intervals, found.tail_intervals) == (2, 30)
    assert found.active_samples == 117 and found.active_span_us == 174.0
    tensor = pair[1].timeline.series["tensor_pipe_pct"]
    assert tensor[found.plateau_from] >= 0.9 * found.plateau > tensor[found.plateau_from - 1]
    assert tensor[found.plateau_to] >= 0.9 * found.plateau > tensor[found.plateau_to + 1]
    # Between the waves a dip (36 %, 73 %), then the last wave at 87.8-89.0 %.
    assert tensor[found.plateau_to + 1] < 50
    assert all(87 < v < 90 for v in tensor[found.plateau_to + 3 : found.last_active - 2])


def test_a_kernel_without_tensor_work_is_read_from_the_issue_series(pair):
    add = pair[0].timeline
    found = phases(add)
    assert found.series == "issue_pct"
    assert max(add.series["tensor_pipe_pct"]) == 0
    assert 14 < found.plateau < 15
    assert (found.ramp_intervals, found.tail_intervals, found.active_samples) == (1, 2, 38)
    # A streaming kernel: DRAM reads from its second active sample, writes all along.
    first, last = add.active()
    assert add.series["dram_read_pct"][first + 1] > 60
    assert all(v > 20 for v in add.series["dram_write_pct"][first + 8 : last - 1])


def test_the_gemm_writes_to_dram_mostly_at_the_end(pair):
    t = pair[1].timeline
    first, last = t.active()
    assert t.series["dram_read_pct"][first + 1] > 25                    # the first tiles
    writes = t.series["dram_write_pct"]
    assert max(writes[first : first + 19]) < 0.1 and writes[last] > 15


def test_timeline_stays_out_of_the_profile_dict_and_the_cache_key(fixture_file, pair):
    assert "timeline" not in pair[0].to_dict()
    plain = load_report(fixture_file(PM))
    assert all(p.timeline is None for p in plain)          # not asked for: not read
    again = load_report(fixture_file(PM), timeline=True)   # a copy from the cache, timeline included
    assert again[0].timeline is not pair[0].timeline
    assert again[0].timeline.series == pair[0].timeline.series


def test_show_timeline_table(fixture_file):
    result = run("show", f"{fixture_file(PM)}:@1", "--timeline")
    assert result.exit_code == 0, result.output
    out = result.output
    header = next(line for line in out.splitlines() if "t (us)" in line)
    for column in ("Tensor pipe %", "Issue %", "DRAM read %", "DRAM write %", "L2 %", "SM active cycles",
                   "Clusters active", "Phase"):
        assert column in header
    rows = [[c.strip() for c in line.split("│")] for line in out.splitlines() if line.count("│") >= 8]
    assert len(rows) == 117 + 2                              # the active samples, one before, one after
    assert [r[0] for r in rows[:3]] == ["-1.5", "0.0", "1.5"]
    assert [r[-1] for r in rows] == ["before"] + ["ramp"] * 2 + ["plateau"] * 85 + ["tail"] * 30 + ["after"]
    assert rows[4][1] == "100.0" and rows[-2][4] == "18.3"    # a plateau sample; the last DRAM writes
    assert "phases of tensor_pipe_pct: plateau 100.00 % · ramp 3.0 us · tail 45.0 us · active span 174.0 us " \
           "(117 samples) · interval 1.5 us" in out


def test_show_timeline_json(fixture_file):
    result = run("show", fixture_file(PM), "--timeline", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema"] == "kernelscope.show" and len(doc["kernels"]) == 2
    expected = [("issue_pct", 1.5, 3.0, 55.5), ("tensor_pipe_pct", 3.0, 45.0, 174.0)]
    for kernel, (series, ramp, tail, span) in zip(doc["kernels"], expected):
        t = kernel["timeline"]
        assert t["interval_us"] == 1.5
        assert len(t["times_us"]) == len(t["series"]["tensor_pipe_pct"]) > 150
        p = t["phases"]
        assert p["series"] == series
        assert (p["ramp_us"], p["tail_us"], p["active_span_us"]) == (ramp, tail, span)
        assert t["times_us"][p["samples"]["first_active"]] == 0.0
        assert "timeline" not in kernel["profile"]
    jsonschema = pytest.importorskip("jsonschema")
    errors = list(jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).iter_errors(doc))
    assert not errors, errors[0].message


@pytest.mark.parametrize("args, message", [
    (["@without"], "no PM samples for [0] HopperGemm: collect ncu's PmSampling section "
                   "(`kernelscope profile ... --section PmSampling` or `--set full`)"),
    (["@showjson"], "a kernelscope JSON file holds no PM samples; a timeline needs the .ncu-rep report"),
    (["@pm", "--format", "csv"], "--timeline prints a table or JSON, not csv"),
    (["@pm", "--lines"], "--timeline and --lines are two views: give one of them"),
])
def test_user_errors_are_one_line(args, message, fixture_file, tmp_path):
    showjson = tmp_path / "plain.json"
    showjson.write_text(run("show", fixture_file(PM), "--format", "json").output)
    names = {"@without": fixture_file(WITHOUT_PM), "@showjson": showjson, "@pm": fixture_file(PM)}
    result = run("show", *(names.get(a, a) for a in args), "--timeline")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_loading_a_json_source_with_timeline_is_refused(tmp_path, fixture_file):
    path = tmp_path / "plain.json"
    path.write_text(run("show", fixture_file(PM), "--format", "json").output)
    assert len(load_profiles(path)) == 2
    with pytest.raises(UserError, match="needs the .ncu-rep report"):
        load_profiles(path, timeline=True)


def test_diff_timeline_puts_the_phases_side_by_side(fixture_file):
    result = run("diff", fixture_file(PM), "--timeline")
    assert result.exit_code == 0, result.output
    rows = {r[0]: r[1:] for r in ([c.strip() for c in line.split("│")] for line in result.output.splitlines()
                                  if line.count("│") == 3)}
    # A: the add (issue series), B: cuBLAS (tensor-pipe series)
    assert rows["ramp (us)"] == ["1.5", "3.0", "-1.5"] and rows["tail (us)"] == ["3.0", "45.0", "-42.0"]
    assert rows["active span (us)"] == ["55.5", "174.0", "-118.5"]
    assert "different series" in result.output and "under 1.5 us is not resolved" in result.output
    doc = json.loads(run("diff", fixture_file(PM), "--timeline", "--format", "json").output)
    assert [doc["timelines"][k]["phases"]["series"] for k in "ab"] == ["issue_pct", "tensor_pipe_pct"]
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((SCHEMA.parent / "diff.schema.json").read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    assert not errors, errors[0].message
    for args, message in (([fixture_file(WITHOUT_PM)], "no PM samples for [0] HopperGemm"),
                          ([fixture_file(PM), "--format", "csv"], "--timeline prints a table or JSON, not csv")):
        bad = run("diff", *args, "--timeline")
        assert bad.exit_code == 2 and message in bad.stderr and bad.stderr.count("\n") == 1
