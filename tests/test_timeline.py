"""`show --timeline`: ncu's PM samples of a launch and the phases read from them, on a real H100
report of our gemm and cuBLAS at 2048^3 with the PmSampling section (tests/fixtures/README.md)."""

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
PM = "h100-gemm-vs-cublas-2048.pmsampling.ncu-rep"
WITHOUT_PM = "h200-gemm-vs-cublas-2048.quick.ncu-rep"
# The H200 full-set report holds PM samples too: an elementwise add (no tensor pipe) and cuBLAS.
FULL_H200 = "h200-cute-add-and-cublas-gemm.full.ncu-rep"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def pair(fixture_file):
    return load_report(fixture_file(PM), timeline=True)


def test_both_kernels_have_a_timeline_on_one_axis(pair):
    assert [p.name.startswith("kernel_cutlass_kernel_kernelscopekernelsgemm") for p in pair] == [True, False]
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
    for p in pair:
        found = phases(p.timeline)
        assert found.series == "tensor_pipe_pct"
        assert 96.9 <= found.plateau <= 97.0
        # Spans are whole intervals, and both GEMMs reach the plateau and leave it within 3 samples.
        assert found.ramp_us == found.ramp_intervals * 1.5 and 1 <= found.ramp_intervals <= 3
        assert found.tail_us == found.tail_intervals * 1.5 and 1 <= found.tail_intervals <= 3
        assert (found.ramp_intervals, found.tail_intervals) == (2, 2)
        assert found.active_samples == 17 and found.active_span_us == 24.0
        tensor = p.timeline.series["tensor_pipe_pct"]
        assert tensor[found.plateau_from] >= 0.9 * found.plateau > tensor[found.plateau_from - 1]
        assert tensor[found.plateau_to] >= 0.9 * found.plateau > tensor[found.plateau_to + 1]


def test_dram_writes_come_only_at_the_end(pair):
    t = pair[0].timeline
    first, last = t.active()
    writing = [i for i, v in enumerate(t.series["dram_write_pct"]) if v >= 1.0]
    assert writing == [last - 1, last]                   # the epilogue's stores, ~5 % then ~18 %
    assert 4 < t.series["dram_write_pct"][last - 1] < 7 and 17 < t.series["dram_write_pct"][last] < 20
    # Reads lead: ~40 % in the second active sample, before the tensor pipe is busy.
    assert t.series["dram_read_pct"][first + 1] > 30 and t.series["tensor_pipe_pct"][first + 1] < 20


def test_a_kernel_without_tensor_work_is_read_from_the_issue_series(fixture_file):
    add, gemm = load_report(fixture_file(FULL_H200), timeline=True)
    found = phases(add.timeline)
    assert found.series == "issue_pct"
    assert max(add.timeline.series["tensor_pipe_pct"]) == 0
    assert 14 < found.plateau < 15
    # cuBLAS's last wave runs on fewer SMs (tensor pipe ~88 % against 100 %): below 90 % of the
    # plateau, so it is the tail.
    tail = phases(gemm.timeline)
    assert tail.series == "tensor_pipe_pct" and tail.plateau > 99.9 and tail.tail_intervals == 30


def test_timeline_stays_out_of_the_profile_dict_and_the_cache_key(fixture_file, pair):
    assert "timeline" not in pair[0].to_dict()
    plain = load_report(fixture_file(PM))
    assert all(p.timeline is None for p in plain)          # not asked for: not read
    again = load_report(fixture_file(PM), timeline=True)   # a copy from the cache, timeline included
    assert again[0].timeline is not pair[0].timeline
    assert again[0].timeline.series == pair[0].timeline.series


def test_show_timeline_table(fixture_file):
    result = run("show", f"{fixture_file(PM)}:@0", "--timeline")
    assert result.exit_code == 0, result.output
    out = result.output
    header = next(line for line in out.splitlines() if "t (us)" in line)
    for column in ("Tensor pipe %", "Issue %", "DRAM read %", "DRAM write %", "L2 %", "SM active cycles",
                   "Clusters active", "Phase"):
        assert column in header
    rows = [[c.strip() for c in line.split("│")] for line in out.splitlines() if line.count("│") >= 8]
    assert len(rows) == 17 + 2                               # the active samples, one before, one after
    assert [r[0] for r in rows[:3]] == ["-1.5", "0.0", "1.5"]
    assert [r[-1] for r in rows] == ["before"] + ["ramp"] * 2 + ["plateau"] * 13 + ["tail"] * 2 + ["after"]
    assert rows[5][1] == "96.9" and rows[-2][4] == "18.4"     # a plateau sample; the last DRAM writes
    assert "phases of tensor_pipe_pct: plateau 96.95 % · ramp 3.0 us · tail 3.0 us · active span 24.0 us " \
           "(17 samples) · interval 1.5 us" in out


def test_show_timeline_json(fixture_file):
    result = run("show", fixture_file(PM), "--timeline", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema"] == "kernelscope.show" and len(doc["kernels"]) == 2
    for kernel in doc["kernels"]:
        t = kernel["timeline"]
        assert t["interval_us"] == 1.5
        assert len(t["times_us"]) == len(t["series"]["tensor_pipe_pct"]) > 150
        p = t["phases"]
        assert p["series"] == "tensor_pipe_pct" and 96.9 <= p["plateau_pct"] <= 97.0
        assert (p["ramp_us"], p["tail_us"], p["active_span_us"]) == (3.0, 3.0, 24.0)
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
