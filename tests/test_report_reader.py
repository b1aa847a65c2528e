"""The report reader on real reports: identity, launch, device, session, metrics, mix, stalls."""

import pytest

from kernelscope.errors import UserError
from kernelscope.profiler.report import group_by_nvtx, load_report
from kernelscope.profiler.selection import select, split_spec
from ncu_csv import read_raw_csv, to_base_unit

FULL = "h200-cute-add-and-cublas-gemm.full.ncu-rep"
MANY = "h200-torch-242-launches.metrics6.ncu-rep"


@pytest.fixture(scope="module")
def full_pair(fixture_file):
    return load_report(fixture_file(FULL))


def test_reads_both_kernels_with_identity_and_launch(full_pair):
    cute, gemm = full_pair
    assert cute.name.startswith("kernel_cutlass_add_kernel")
    assert gemm.name == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    assert (cute.index, gemm.index) == (0, 1)
    assert cute.grid == (65536, 1, 1) and cute.block == (256, 1, 1) and cute.cluster is None
    assert gemm.grid == (2, 66, 1) and gemm.block == (384, 1, 1) and gemm.cluster == (2, 1, 1)


def test_device_and_session_facts(full_pair):
    gemm = full_pair[1]
    assert gemm.device.name == "NVIDIA H200"
    assert gemm.device.sm_count == 132
    assert gemm.device.compute_capability == "9.0"
    assert gemm.device.max_sm_clock_hz == pytest.approx(1.98e9)
    assert gemm.device.sm_clock_hz == pytest.approx(1.5885e9, rel=1e-3)
    assert gemm.session.tool_version.startswith("2025.3.1")
    assert "--clock-control none" in gemm.session.command_line
    assert gemm.session.clock_control == "none"
    assert gemm.session.cache_control == "all"  # ncu's default: the flag is absent
    assert gemm.session.replay_passes == 38


def test_metrics_carry_value_and_unit(full_pair):
    gemm = full_pair[1]
    assert len(gemm.metrics) > 2000
    assert gemm.metrics["gpu__time_duration.sum"].value == pytest.approx(176800.0)
    assert gemm.metrics["gpu__time_duration.sum"].unit == "ns"
    assert gemm.metrics["launch__registers_per_thread"].value == 168
    assert gemm.metrics["device__attribute_display_name"].value == "NVIDIA H200"


def test_instruction_mix_and_stalls(full_pair):
    cute, gemm = full_pair
    assert gemm.instruction_mix["HGMMA"] == 2_097_152
    assert gemm.instruction_mix["UTMALDG"] == 163_840
    assert "HGMMA" not in cute.instruction_mix
    assert sum(cute.instruction_mix.values()) == 8_388_608
    assert gemm.stalls["gmma"] == pytest.approx(3.7375, rel=1e-4)
    assert cute.stalls["long_scoreboard"] == pytest.approx(66.941, rel=1e-4)
    assert len(gemm.stalls) >= 18


def test_values_agree_with_ncu_export(full_pair, fixture_file):
    rows = read_raw_csv(fixture_file(FULL.replace(".ncu-rep", ".raw.csv")))
    assert len(rows) == len(full_pair)
    checked = 0
    for profile, row in zip(full_pair, rows):
        assert row["Kernel Name"][0] == profile.name
        for name in ("gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum",
                     "launch__shared_mem_per_block_dynamic", "lts__t_sector_hit_rate.pct"):
            text, unit = row[name]
            assert float(profile.value(name)) == pytest.approx(to_base_unit(text, unit), rel=1e-5), name
            checked += 1
    assert checked == 10


def test_many_launches_report(fixture_file):
    profiles = load_report(fixture_file(MANY))
    assert len(profiles) == 242
    assert [p.index for p in profiles] == list(range(242))
    assert all(p.session.replay_passes == 1 for p in profiles)
    # Only six metrics were asked for: no instruction mix, no stalls, nothing invented.
    assert all(not p.instruction_mix and not p.stalls for p in profiles)
    assert profiles[5].value("sm__throughput.avg.pct_of_peak_sustained_elapsed") is None


def test_select_by_regex_and_errors(full_pair):
    assert [p.index for p in select(full_pair, "nvjet")] == [1]
    assert len(select(full_pair, None)) == 2
    with pytest.raises(UserError, match="no kernel matches 'flash'.*nvjet"):
        select(full_pair, "flash")
    with pytest.raises(UserError, match="bad kernel regex"):
        select(full_pair, "(")


def test_split_spec():
    assert split_spec("a.ncu-rep:nvjet|gemm") == ("a.ncu-rep", "nvjet|gemm")
    assert split_spec("a.ncu-rep.xz:@1") == ("a.ncu-rep.xz", "@1")
    assert split_spec("saved.json:gemm") == ("saved.json", "gemm")
    assert split_spec("dir:with:colons/a.ncu-rep") == ("dir:with:colons/a.ncu-rep", None)
    assert split_spec("a.ncu-rep") == ("a.ncu-rep", None)


def test_nvtx_grouping_merges_launches_of_one_range(fixture_file):
    profiles = load_report(fixture_file(MANY))[:6]
    # The recorded launches carry no NVTX ranges; give three of them one to exercise the merge.
    for p in profiles[1:4]:
        p.nvtx_ranges = ["ks:reference"]
    grouped = group_by_nvtx(profiles, "ks:")
    assert [p.kind for p in grouped] == ["kernel", "nvtx-range", "kernel", "kernel"]
    merged = grouped[1]
    assert merged.name == "ks:reference" and merged.launches == 3
    members = profiles[1:4]
    assert merged.value("gpu__time_duration.sum") == pytest.approx(sum(m.value("gpu__time_duration.sum") for m in members))
    assert merged.value("smsp__inst_executed.sum") == pytest.approx(sum(m.value("smsp__inst_executed.sum") for m in members))


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    (b"hello, not a report", "not an Nsight Compute report"),
])
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.ncu-rep"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        load_report(path)


def test_truncated_report_is_refused(tmp_path, fixture_file):
    data = fixture_file(FULL).read_bytes()
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[: len(data) * 2 // 5])
    with pytest.raises(UserError, match="truncated"):
        load_report(cut)


def test_xz_compressed_reports_read_directly(fixture_file):
    from ncu_csv import FIXTURES_DIR

    compressed = FIXTURES_DIR / f"{FULL}.xz"
    direct = load_report(compressed)
    plain = load_report(fixture_file(FULL))
    assert [p.source for p in direct] == [str(compressed)] * 2
    assert [p.metrics == q.metrics and p.instruction_mix == q.instruction_mix for p, q in zip(direct, plain)] == [True, True]


def test_corrupt_xz_is_one_clear_error(tmp_path):
    bad = tmp_path / "x.ncu-rep.xz"
    bad.write_bytes(b"not xz at all")
    with pytest.raises(UserError, match="not a valid xz file"):
        load_report(bad)


def test_a_report_read_again_is_parsed_once_and_each_call_gets_its_own_copy(fixture_file, tmp_path, monkeypatch):
    # ncu_report keeps each parsed report in memory for the process's life, so a file read again
    # must not be parsed again; callers may still change what they get.
    import os
    import shutil

    from kernelscope.profiler import report

    path = tmp_path / "copy.ncu-rep"
    shutil.copy(fixture_file(FULL), path)
    parses = []
    real = report._load_report_uncached
    monkeypatch.setattr(report, "_load_report_uncached", lambda *a, **k: parses.append(a) or real(*a, **k))
    first = load_report(path)
    first[1].metrics.clear()
    second = load_report(path)
    assert len(parses) == 1
    assert second[1].metrics and second[1].name == first[1].name and second[1] is not first[1]
    load_report(path, lines=True)                 # other options: parsed
    assert len(parses) == 2
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))   # the file changed
    assert load_report(path)[1].metrics
    assert len(parses) == 3
    load_report(path, lines=lambda p: True)       # a predicate: never cached
    load_report(path, lines=lambda p: True)
    assert len(parses) == 5


def test_warp_states_are_estimated_from_pc_samples_only_where_the_ratios_are_missing():
    from kernelscope.profiler.record import Metric
    from kernelscope.profiler.report import _sampled_stall_metrics

    samples = {"smsp__pcsamp_warps_issue_stalled_selected": Metric(200, ""),
               "smsp__pcsamp_warps_issue_stalled_long_scoreboard": Metric(5000, ""),
               "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued": Metric(4000, ""),
               "smsp__pcsamp_warps_issue_stalled_no_instructions": Metric(50, "")}
    # A warp is selected one cycle per issued instruction: samples in a state over samples selected.
    estimated = _sampled_stall_metrics(samples)
    assert estimated["kernelscope__sampled_stall_long_scoreboard_per_issue_active.ratio"].value == 25.0
    assert estimated["kernelscope__sampled_stall_no_instruction_per_issue_active.ratio"].value == 0.25
    assert estimated["kernelscope__sampled_stall_selected_per_issue_active.ratio"].value == 1.0
    assert not any("not_issued" in name for name in estimated)
    # With the warp-state ratios in the report (WarpStateStats), nothing is estimated.
    measured = {**samples, "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": Metric(1.5, "")}
    assert _sampled_stall_metrics(measured) == {}
    # Without samples of the issuing state there is no scale.
    assert _sampled_stall_metrics({"smsp__pcsamp_warps_issue_stalled_wait": Metric(10, "")}) == {}
