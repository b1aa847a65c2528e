"""`kernelscope rules list/explain` and the findings of `diff`, through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from kernelscope.cli.main import _register, cli
from kernelscope.rules.engine import load_rules
from rule_files import write_rule_file  # noqa: E402  (tests/ is on sys.path)

PAIR = "h200-cute-add-and-cublas-gemm.full.ncu-rep"

_register()


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "220"})


def test_rules_list_shows_every_builtin_rule():
    result = run("rules", "list")
    assert result.exit_code == 0, result.output
    for rule_id in load_rules().rules:
        assert rule_id in result.output
    assert f"{len(load_rules().rules)} rules from" in result.output


def test_rules_explain_shows_condition_thresholds_and_section():
    result = run("rules", "explain", "register-pressure")
    assert result.exit_code == 0, result.output
    assert "condition:  reg_blocks < other_blocks and reg_blocks < offered and coalesce(target.setmaxnreg, 0) == 0" in result.output
    assert "let:        latency_share = " in result.output or "latency_share" in result.output
    assert "section:    Launch Statistics, Occupancy" in result.output
    unknown = run("rules", "explain", "register")
    assert unknown.exit_code == 2
    assert "no rule has the id 'register'" in unknown.output and "register-pressure" in unknown.output


def test_diff_prints_findings_under_the_tables(fixture_file):
    result = run("diff", fixture_file(PAIR))
    assert result.exit_code == 0, result.output
    tables_end = result.output.index("Instruction mix")
    findings_start = result.output.index("Findings (7)")
    assert findings_start > tables_end
    # The headline comes first: who is faster, by how much.
    assert result.output.index("is 206.3% slower than A") < tables_end
    assert "Narrow (non-vectorized) global accesses" in result.output
    assert "SM throughput 35.23 % of peak vs 90.53 % in the reference" in result.output


def test_diff_json_and_markdown_carry_the_findings(fixture_file):
    doc = json.loads(run("diff", fixture_file(PAIR), "--format", "json").output)
    rules = [f["rule"] for f in doc["findings"]]
    assert rules[0] == "narrow-global-access" and len(rules) == 7
    # A is the faster kernel here: the verdict says so and no finding claims a share of a gap.
    assert doc["verdict"]["faster"] == "a" and doc["verdict"]["gap_ns"] < 0 and doc["verdict"]["main_reason"] is None
    assert doc["verdict"]["within_noise"] is False
    # ... and points to the comparison that would explain the gap: B against A.
    assert doc["verdict"]["unexplained"] == ("A is the faster kernel: its findings are its own headroom, none is "
                                             "the reason for a gap; to see what makes B 206.3% slower, swap the "
                                             "two (B first)")
    assert all(f["explains"] is None for f in doc["findings"])
    first = doc["findings"][0]
    assert first["severity"] == "warning" and first["cause"] == "narrow-access" and 0 < first["impact"] <= 1
    quoted = {v["name"]: v for v in first["values"]}
    assert quoted["target.global_ld_bytes_per_instruction"]["value"] == 128
    assert quoted["target.global_ld_bytes_per_instruction"]["unit"] == "byte"
    sm = next(f for f in doc["findings"] if f["rule"] == "sm-throughput-below-reference")
    assert sm["cause"] is None and abs({v["name"]: v for v in sm["values"]}["reference.sm_throughput_pct"]["value"] - 90.53) < 0.005
    md = run("diff", fixture_file(PAIR), "--format", "markdown").output
    assert "### Findings" in md and "**WARNING** Narrow (non-vectorized) global accesses" in md
    assert md.startswith("**B (`nvjet")


def test_diff_within_noise_says_so_instead_of_a_main_reason(fixture_file):
    # The shipped GEMM vs cuBLAS (H200): 1.6% slower, measured once each.
    gemm = fixture_file("h200-gemm-vs-cublas-4096.quick.ncu-rep")
    doc = json.loads(run("diff", gemm, "--format", "json").output)
    assert doc["verdict"]["faster"] == "b" and doc["verdict"]["within_noise"] is True
    assert doc["verdict"]["main_reason"] is None and "within run-to-run noise" in doc["verdict"]["unexplained"]
    text = run("diff", gemm).output
    assert "Main reason" not in text and "The 1.6% gap is within run-to-run noise" in text
    md = run("diff", gemm, "--format", "markdown").output
    assert "**The 1.6% gap is within run-to-run noise" in md


def test_diff_with_a_user_rule_file_and_disable(fixture_file, tmp_path):
    rules = write_rule_file(
        tmp_path, "mine.toml", id="dram-writes-vs-reference", title="More DRAM writes than the reference",
        compares="reference", section="Memory Workload Analysis", condition="ratio.dram_write_bytes >= more",
        message="DRAM write {target.dram_write_bytes} vs {reference.dram_write_bytes} ({ratio.dram_write_bytes})",
        hint="Write each output once.", after="[rule.thresholds]\nmore = 1.5\n")
    result = run("diff", fixture_file(PAIR), "--rules", rules, "--disable", "stall-long-scoreboard", "--format", "json")
    assert result.exit_code == 0, result.output
    by_rule = {f["rule"]: f for f in json.loads(result.output)["findings"]}
    assert by_rule["dram-writes-vs-reference"]["message"] == "DRAM write 55.091 MB vs 26.179 MB (2.10x)"
    assert "stall-long-scoreboard" not in by_rule


def test_malformed_rule_file_is_one_line_and_exit_2(fixture_file, tmp_path):
    bad = write_rule_file(tmp_path, "bad.toml", id="broken", compares="reference", severity="serious",
                          condition="target.fadd > 0")
    proc = subprocess.run([sys.executable, "-m", "kernelscope", "diff", str(fixture_file(PAIR)), "--rules", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"kernelscope: error: {bad}: rule 'broken': field 'severity': must be one of error, warning, info, not 'serious'"
    ]
