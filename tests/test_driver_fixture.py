"""The reports `kernelscope profile` made on an H200 (tests/fixtures/README.md has the commands):
exactly one launch of the target and one of the reference, grouped by their NVTX ranges,
with the quick set's metrics present, and the profile's diff printed from them."""

import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.profiler.report import load_report
from kernelscope.profiler.worker import REFERENCE_RANGE, TARGET_RANGE

FIXTURES = Path(__file__).parent / "fixtures"
# A user's own kernel (tests/examples/my_scale.py) goes through the same capture; its report is made and
# read on the GPU machine (tests/test_driver_gpu.py), not kept here (the tracked tree's size budget).
REPORTS = {
    "h200-rmsnorm-vs-torch.quick.ncu-rep": ("kernel_cutlass_kernel_kernelscopekernelsrmsnorm", "layer_norm"),
}
# Metrics the quick set must bring for the catalog (sections plus named metrics).
QUICK_MUST_HAVE = [
    "gpu__time_duration.sum", "launch__registers_per_thread", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "l1tex__m_xbar2l1tex_read_bytes.sum",
    "l1tex__m_l1tex2xbar_write_bytes.sum", "lts__t_sector_hit_rate.pct", "l1tex__t_sector_hit_rate.pct",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "smsp__inst_executed.sum",
    "smsp__inst_executed_op_branch.sum", "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
]


@pytest.mark.parametrize("name", list(REPORTS))
def test_exactly_the_two_intended_launches(fixture_file, name):
    path = fixture_file(name)
    launches = load_report(path)
    assert len(launches) == 2
    target_kernel, reference_kernel = REPORTS[name]
    assert target_kernel in launches[0].name and reference_kernel in launches[1].name
    grouped = load_report(path, group_nvtx_prefix="ks:")
    assert [p.name for p in grouped] == [TARGET_RANGE, REFERENCE_RANGE]
    for p in grouped:
        assert p.kind == "nvtx-range" and p.launches == 1
        assert p.session.clock_control == "none" and p.session.cache_control == "all"
        missing = [m for m in QUICK_MUST_HAVE if m not in p.metrics]
        assert not missing, missing
        assert p.instruction_mix and p.stalls


@pytest.mark.parametrize("name", list(REPORTS))
def test_sidecar_records_the_run(name):
    side = json.loads(lzma.open(FIXTURES / f"{name}.kernelscope.json.xz").read())
    assert side["request"]["clock_control"] == "none" and side["request"]["cache_control"] == "all"
    assert "--nvtx-include regex:ks:.*/" in side["command_line"]
    assert [p for _, p in side["passes"]] == [35, 35]
    assert side["worker_status"]["correct"] is True and side["metrics_dropped_unknown_to_ncu"] == []


def test_profile_diff_from_the_fixture(fixture_file):
    path = fixture_file("h200-rmsnorm-vs-torch.quick.ncu-rep")
    r = subprocess.run([sys.executable, "-m", "kernelscope.reports.profile_view", str(path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "captured: target 1 launch(es), reference 1 launch(es)" in r.stdout
    assert "ks:target" in r.stdout and "ks:reference" in r.stdout and "Duration" in r.stdout
    # As in `diff`, the verdict comes first, right after the capture line.
    verdict = r.stdout.splitlines()[1]
    assert verdict.startswith("B (ks:reference) is 21.7% slower than A (ks:target)"), verdict
    keys = subprocess.run([sys.executable, "-m", "kernelscope.reports.profile_view", str(path), "--key-metrics"],
                          capture_output=True, text=True, timeout=300)
    metrics = json.loads(keys.stdout.strip().splitlines()[-1])
    assert metrics["launch__registers_per_thread"] == 32 and metrics["gpu__time_duration.sum"] > 0
