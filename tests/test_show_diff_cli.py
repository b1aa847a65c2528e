"""`kernelscope show` and `diff` end to end, through the real command line."""

import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kernelscope.cli.main import _register, cli
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.report import load_report
from kernelscope.profiler.sources import load_profiles
from ncu_csv import read_raw_csv, to_base_unit

FULL = "h200-cute-add-and-cublas-gemm.full.ncu-rep"
MANY = "h200-torch-242-launches.metrics6.ncu-rep"

_register()


def run(*args, env=None):
    result = CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "220", **(env or {})})
    return result


# -- parsing what the terminal table printed ------------------------------------------

_SCALES = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "": 1.0}


def parse_printed(text: str) -> float:
    """Turn a printed value ('176.800 us', '1.611 GB', '90.53 %', '16,870,196') back into a number."""
    text = text.strip()
    m = re.fullmatch(r"([-\d.,]+)\s*(ns|us|ms|s)", text)
    if m:
        return float(m.group(1).replace(",", "")) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
    m = re.fullmatch(r"([-\d.,]+)\s*([KMGT]?)(B|Hz)", text)
    if m:
        return float(m.group(1).replace(",", "")) * _SCALES[m.group(2)]
    m = re.fullmatch(r"([-\d.,]+)\s*%", text)
    if m:
        return float(m.group(1))
    return float(text.replace(",", ""))


def printed_rows(output: str) -> dict[str, list[str]]:
    """Label -> cells, for every table row of the diff output."""
    rows = {}
    for line in output.splitlines():
        if "│" in line:
            cells = [c.strip() for c in line.split("│")]
            rows.setdefault(cells[0], cells[1:])
    return rows


# ncu metric behind each checked catalog row, and the precision the table prints it with
CHECKED = {
    "Registers / thread": "launch__registers_per_thread",
    "Grid size (blocks)": "launch__grid_size",
    "Block size (threads)": "launch__block_size",
    "Dynamic shared memory / block": "launch__shared_mem_per_block_dynamic",
    "Duration": "gpu__time_duration.sum",
    "SM throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "Memory throughput": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "Tensor pipe active": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "DRAM read": "dram__bytes_read.sum",
    "DRAM write": "dram__bytes_write.sum",
    "L2 hit rate": "lts__t_sector_hit_rate.pct",
    "L2 -> L1/SMEM bytes": "l1tex__m_xbar2l1tex_read_bytes.sum",
    "L1 -> L2 bytes": "l1tex__m_l1tex2xbar_write_bytes.sum",
    "TMA load bytes (L2 -> SMEM)": "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "TMA load instructions": "smsp__sass_inst_executed_op_tma_ld.sum",
    "Shared bank conflicts (stores)": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "Instructions executed (warp)": "smsp__inst_executed.sum",
    "Branch instructions": "smsp__inst_executed_op_branch.sum",
    "Long scoreboard": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "Achieved occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
}


def test_diff_prints_every_view_and_values_match_ncu_export(fixture_file):
    report = fixture_file(FULL)
    result = run("diff", f"{report}:cutlass", f"{report}:nvjet")
    assert result.exit_code == 0, result.output
    for title in ("Launch & occupancy", "Throughput", "Memory", "Instructions", "Warp stalls", "Instruction mix"):
        assert title in result.output
    rows = printed_rows(result.output)
    export = read_raw_csv(fixture_file(FULL.replace(".ncu-rep", ".raw.csv")))
    checked = 0
    for label, metric in CHECKED.items():
        cells = rows[label]
        for side, row in zip(cells[:2], export):
            expected = to_base_unit(*row[metric])
            printed = parse_printed(side)
            # The table prints 3-4 significant digits (or exact integers): compare at that precision.
            assert printed == pytest.approx(expected, rel=2e-3, abs=6e-3), (label, side, row[metric])
            checked += 1
    assert checked >= 24


def test_diff_marks_the_better_side_by_direction(fixture_file):
    report = fixture_file(FULL)
    rows = printed_rows(run("diff", f"{report}:cutlass", f"{report}:nvjet").output)
    assert rows["Registers / thread"][-1] == "A"       # fewer registers: lower is better
    assert rows["Tensor pipe active"][-1] == "B"       # higher is better
    assert rows["HGMMA (wgmma)"][-1] == ""             # a fact, not a goal
    assert rows["Branch instructions"][2] == "-459,457"
    assert rows["Branch instructions"][3] == "-46.7%"


def test_diff_with_one_report_of_two_kernels(fixture_file):
    report = fixture_file(FULL)
    both = run("diff", report)
    explicit = run("diff", f"{report}:@0", f"{report}:@1")
    assert both.exit_code == 0 and both.output == explicit.output


def test_instruction_mix_table_lists_the_opcodes_that_differ_most(fixture_file):
    report = fixture_file(FULL)
    result = run("diff", f"{report}:cutlass", f"{report}:nvjet", "--format", "json")
    doc = json.loads(result.output)
    mix = doc["instruction_mix"]
    assert mix[0]["opcode"] == "UIADD3"   # 40% of the GEMM's instructions, none in the add kernel
    hgmma = next(o for o in mix if o["opcode"] == "HGMMA")
    assert hgmma["count_a"] == 0 and hgmma["count_b"] == 2_097_152
    assert hgmma["share_b"] == pytest.approx(2_097_152 / 17_150_750)


def test_diff_json_is_versioned_and_joined_by_id(fixture_file):
    report = fixture_file(FULL)
    doc = json.loads(run("diff", f"{report}:cutlass", f"{report}:nvjet", "--format", "json").output)
    assert doc["schema"] == "kernelscope.diff" and doc["schema_version"] == 1
    regs = next(m for m in doc["views"]["launch"]["metrics"] if m["id"] == "registers_per_thread")
    assert (regs["a"], regs["b"], regs["change"], regs["better_side"]) == (16, 168, -152.0, "a")
    dram = next(m for m in doc["views"]["throughput"]["metrics"] if m["id"] == "dram_throughput_pct")
    # ncu's name on Hopper (gpu__dram_throughput), read in both kernels of a full-set report
    assert dram["a"] == pytest.approx(68.18, abs=0.01) and dram["b"] == pytest.approx(13.51, abs=0.01)


def test_show_json_round_trips(fixture_file, tmp_path):
    report = fixture_file(FULL)
    result = run("show", report, "--format", "json")
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["schema"] == "kernelscope.show" and doc["schema_version"] == 1
    saved = tmp_path / "profiles.json"
    saved.write_text(result.output)
    again = load_profiles(saved)
    original = load_report(report)
    assert [p.to_dict() for p in again] == [KernelProfile.from_dict(p.to_dict()).to_dict() for p in original]
    # A saved JSON is a first-class input: show and diff print the same from it as from the report.
    assert run("show", saved, "--format", "json").output == result.output.replace(str(report), str(saved), 1)
    # (profiles keep the report they came from as their source)
    assert run("diff", f"{saved}:@0", f"{saved}:@1").output == run("diff", f"{report}:@0", f"{report}:@1").output


def test_reduced_section_report_shows_na_never_zero(fixture_file):
    report = fixture_file(MANY)
    result = run("show", f"{report}:@5", "--format", "json")
    doc = json.loads(result.output)
    values = {m["id"]: m["value"] for v in doc["kernels"][0]["views"].values() for m in v["metrics"]}
    assert values["duration"] is not None and values["registers_per_thread"] is not None
    for missing in ("sm_throughput_pct", "l2_hit_rate", "hgmma", "branch_ratio", "stall_long_scoreboard"):
        assert values[missing] is None, missing
    table = run("show", f"{report}:@5").output
    assert re.search(r"SM throughput\s+│\s+n/a", table)
    assert "Warp stalls (cycles per issued instruction): not collected in this report" in table


def test_show_many_kernels_summarises_one_line_each(fixture_file):
    result = run("show", fixture_file(MANY))
    assert result.exit_code == 0
    assert "242 kernels" in result.output
    assert len([l for l in result.output.splitlines() if "vectorized_elementwise_kernel" in l]) >= 160


def test_show_csv_and_markdown(fixture_file):
    report = fixture_file(FULL)
    csv_out = run("show", f"{report}:nvjet", "--format", "csv").output.splitlines()
    assert csv_out[0] == "kernel_index,kernel,view,metric_id,label,value,unit"
    assert "1,nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT,launch,registers_per_thread,Registers / thread,168,reg" in csv_out
    md = run("show", f"{report}:nvjet", "--format", "markdown").output
    assert "| Registers / thread | 168 |" in md
    md_diff = run("diff", f"{report}:cutlass", f"{report}:nvjet", "--format", "markdown").output
    assert "| Registers / thread | 16 | 168 | -152 | -90.5% | **A** |" in md_diff


@pytest.mark.parametrize("args, message", [
    (["show", "missing.ncu-rep"], "missing.ncu-rep: no such file"),
    (["show", "{notreport}"], "not an Nsight Compute report"),
    (["show", "{full}", "-k", "flash_attn"], "no kernel matches 'flash_attn'"),
    (["show", "{many}", "--view", "stalls"], "view 'stalls': none of its metrics were collected"),
    (["show", "{full}", "--view", "nonsense"], "unknown view 'nonsense'"),
    (["diff", "{full}:nvjet", "{full}:_"], "B '.*:_' matches 2 kernels"),
    (["diff", "{many}"], "needs exactly two kernels"),
    (["diff", "{full}:@7", "{full}:@1"], "has no kernel @7"),
])
def test_user_errors_are_one_line_and_exit_2(fixture_file, tmp_path, args, message):
    not_report = tmp_path / "notes.ncu-rep"
    not_report.write_text("just text")
    names = {"full": fixture_file(FULL), "many": fixture_file(MANY), "notreport": not_report}
    argv = [a.format(**names) for a in args]
    proc = subprocess.run([sys.executable, "-m", "kernelscope", *argv], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert re.search(message, lines[0]), lines[0]


def test_diff_merge_sums_each_sides_launches_and_refuses_unequal_counts(fixture_file):
    """A report with many launches: --merge makes each side one profile of its launches (the
    durations add up), and refuses to put 240 launches beside 2."""
    path = fixture_file(MANY)
    launches = [p for p in load_profiles(path) if p.name == "distribution_elementwise_grid_stride_kernel"]
    assert len(launches) == 2
    total_ns = sum(p.value("gpu__time_duration.sum") for p in launches)
    doc = json.loads(run("diff", f"{path}:distribution", f"{path}:distribution", "--merge", "--format", "json").output)
    assert doc["a"]["kind"] == doc["b"]["kind"] == "merged" and doc["a"]["launches"] == 2
    single = json.loads(run("diff", f"{path}:@0", f"{path}:@1", "--format", "json").output)
    assert doc["a"]["short_name"] == single["a"]["short_name"]     # named as one launch of the kernel is
    assert doc["verdict"]["a_ns"] == pytest.approx(total_ns) and doc["verdict"]["faster"] == "same"
    unequal = run("diff", f"{path}:vectorized", f"{path}:distribution", "--merge")
    assert unequal.exit_code == 2 and "A merges 240 launch(es) and B 2" in unequal.output
    one_side = run("diff", path, "--merge")
    assert one_side.exit_code == 2 and "--merge needs both A and B" in one_side.output
    # Without --merge, the error says how to get there.
    several = run("diff", f"{path}:distribution", f"{path}:@0")
    assert several.exit_code == 2 and "merge its launches with --merge" in several.output


def test_diff_groups_nvtx_ranges_as_show_does(fixture_file):
    doc = json.loads(run("diff", fixture_file("h200-rmsnorm-vs-torch.quick.ncu-rep"), "--group-nvtx", "ks:",
                         "--format", "json").output)
    assert (doc["a"]["name"], doc["b"]["name"]) == ("ks:target", "ks:reference")
    assert doc["a"]["kind"] == doc["b"]["kind"] == "nvtx-range"
