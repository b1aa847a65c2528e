"""Suites, baseline files, report baselines and the baseline/gate commands (no GPU needed)."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kernelscope.cli.main import main
from kernelscope.errors import UserError
from kernelscope.gate import baseline as bl
from kernelscope.gate import environment
from kernelscope.gate import policy as gate_policy
from kernelscope.gate import suite as suites
from kernelscope.gate import verdicts as g
from kernelscope.reports import gate_output as out

ROOT = Path(__file__).resolve().parent.parent
STATIC_SUITE = ROOT / "suites" / "static.toml"
STATIC_BASELINE = ROOT / "baselines" / "static-sm90a.json"
CUTE_ADD_REPORT = "h200-cute-add-and-cublas-gemm.full.ncu-rep"


def _cli(argv, capsys=None) -> int:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code


# ----------------------------------------------------------------------------- suites

def _suite(tmp_path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_suite_expands_shapes_configs_and_names_cases(tmp_path):
    path = _suite(tmp_path, """
[suite]
samples = 50
[[case]]
name = "rms"
target = "rmsnorm"
reference = "torch.rmsnorm"
shapes = [{M = 1024, N = 4096}, {M = 2048, N = 4096}]
configs = [{vec = 8}, {vec = 4, threads = 128}]
[[case]]
target = "rmsnorm"
shape = {M = 64, N = 1024}
config = {cluster = [2, 1]}
samples = 7
ncu = true
""")
    suite = suites.load_suite(path)
    ids = [c.id for c in suite.cases]
    assert ids == ["rms/M=1024,N=4096/vec=8", "rms/M=1024,N=4096/vec=4,threads=128",
                   "rms/M=2048,N=4096/vec=8", "rms/M=2048,N=4096/vec=4,threads=128", "rmsnorm"]
    last = suite.cases[-1]
    assert (last.samples, last.ncu, last.config) == (7, True, {"cluster": (2, 1)})
    assert suite.cases[0].samples == 50 and suite.cases[0].reference == "torch.rmsnorm"


@pytest.mark.parametrize("text,message", [
    ("[[case]]\nname='x'\n", "target"),
    ("[suite]\nsamples = 0\n[[case]]\ntarget='rmsnorm'\n", "positive integer"),
    ("[[case]]\ntarget='rmsnorm'\nshape={M=1}\nshapes=[{M=2}]\n", "either shape or shapes"),
    ("[[case]]\ntarget='rmsnorm'\nspeed=1\n", "unknown key speed"),
    ("[[case]]\ntarget='rmsnorm'\n[[case]]\ntarget='rmsnorm'\n", "case ids repeat"),
    ("[suite]\n", "no cases"),
    ("[[case]\n", "not valid TOML"),
    ("[[rule]]\nmatch='timing:*'\nmin_effect=-1\n[[case]]\ntarget='rmsnorm'\n", "non-negative"),
])
def test_suite_errors_are_one_line(tmp_path, text, message):
    with pytest.raises(UserError, match=message):
        suites.load_suite(_suite(tmp_path, text))


def test_suite_rules_are_read(tmp_path):
    suite = suites.load_suite(_suite(tmp_path, "[[rule]]\nmatch='static:sass.NOP'\nignore=true\n[[case]]\ntarget='rmsnorm'\n"))
    assert suite.rules[0].ignore


def test_static_suite_covers_every_registered_target_and_arch():
    from kernelscope.kernels import registry

    suite = suites.load_suite(STATIC_SUITE)
    covered = {(c.target, c.arch) for c in suite.cases}
    for name in registry.names():
        for arch in registry.resolve(name).archs:
            assert (name, arch) in covered


# ----------------------------------------------------------------------------- files

def test_save_is_atomic_and_refuses_to_overwrite(tmp_path):
    doc = {"schema": bl.SCHEMA, "schema_version": bl.SCHEMA_VERSION, "cases": [], "environment": {}}
    path = tmp_path / "sub" / "b.json"
    bl.save_baseline(doc, path)
    assert bl.load_baseline(path)["cases"] == []
    with pytest.raises(UserError, match="--force"):
        bl.save_baseline({**doc, "cases": [{"id": "x"}]}, path)
    assert bl.load_baseline(path)["cases"] == []
    bl.save_baseline({**doc, "cases": [{"id": "x"}]}, path, force=True)
    assert bl.load_baseline(path)["cases"] == [{"id": "x"}]
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]     # no temp file left


def test_failed_write_keeps_the_old_baseline(tmp_path):
    doc = {"schema": bl.SCHEMA, "schema_version": bl.SCHEMA_VERSION, "cases": [{"id": "old"}], "environment": {}}
    path = tmp_path / "b.json"
    bl.save_baseline(doc, path)

    class Unserialisable:
        def __repr__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        bl.save_baseline({**doc, "cases": [{"id": "new", "x": Unserialisable()}]}, path, force=True)
    assert bl.load_baseline(path)["cases"] == [{"id": "old"}]
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]


@pytest.mark.parametrize("content,message", [
    ("not json", "not a readable JSON"),
    ('{"schema": "kernelscope.show"}', "not a kernelscope baseline"),
    ('{"schema": "kernelscope.baseline", "schema_version": 99, "cases": []}', "version 99"),
    ('{"schema": "kernelscope.baseline", "schema_version": 1, "cases": [{}]}', "malformed"),
])
def test_bad_baseline_files(tmp_path, content, message):
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        bl.load_baseline(path)


def test_committed_static_baseline_is_current_format():
    doc = bl.load_baseline(STATIC_BASELINE)
    assert doc["kind"] == "static"
    assert doc["environment"]["nvidia-cutlass-dsl"]
    for case in doc["cases"]:
        assert case["static"], case["id"]
        regs = case["static"][0]["metrics"]["launch__registers_per_thread"]["value"]
        assert isinstance(regs, int) and regs > 0


# ----------------------------------------------------------------------------- the static gate (CLI)

@pytest.fixture(scope="module")
def static_run(tmp_path_factory):
    """A compile-only baseline of the static suite saved now, and the gate of a second run
    against it (compiles come from the compile cache the first run filled)."""
    folder = tmp_path_factory.mktemp("static-gate")
    base, run = folder / "base.json", folder / "run.json"
    assert _cli(["baseline", "save", "--static-only", "--suite", str(STATIC_SUITE), "-o", str(base), "--quiet"]) == 0
    code = _cli(["gate", "--baseline", str(base), "--suite", str(STATIC_SUITE), "--quiet",
                 "--save-run", str(run), "--json", str(folder / "verdicts.json"),
                 "--junit", str(folder / "junit.xml"), "--markdown", str(folder / "summary.md")])
    return code, folder, base, run


def test_static_gate_a_a_passes(static_run):
    code, folder, _, _ = static_run
    doc = json.loads((folder / "verdicts.json").read_text())
    assert doc["schema"] == out.GATE_SCHEMA and doc["schema_version"] == out.GATE_SCHEMA_VERSION
    assert (code, doc["verdict"]) == (0, "PASS"), [m for c in doc["cases"] for m in c["metrics"] if m["verdict"] != "PASS"][:5]
    families = {m["family"] for c in doc["cases"] for m in c["metrics"]}
    assert families == {"static"}
    metrics = {m["metric"] for c in doc["cases"] for m in c["metrics"]}
    assert {"launch__registers_per_thread", "static__spill_store_bytes", "launch__shared_mem_per_block_static",
            "static__sass_instructions"} <= metrics
    assert any(m.startswith("sass.") for m in metrics)
    tree = ET.parse(folder / "junit.xml")
    assert tree.getroot().get("failures") == "0"
    assert "PASS" in (folder / "summary.md").read_text()


def test_static_gate_fails_when_the_baseline_demands_fewer_registers(static_run, tmp_path):
    _, _, base, run = static_run
    edited = json.loads(base.read_text())
    regs = edited["cases"][0]["static"][0]["metrics"]["launch__registers_per_thread"]
    regs["value"] -= 8
    path = tmp_path / "fewer-registers.json"
    path.write_text(json.dumps(edited))
    # The gate against the edited copy, judging the run already made (same compile).
    current = bl.load_baseline(run)
    result = g.gate(bl.load_baseline(path), current, families=[gate_policy.STATIC])
    bad = [m for m in result.metrics if m.verdict == g.REGRESSION]
    assert [(m.case, m.metric) for m in bad] == [(edited["cases"][0]["id"], "launch__registers_per_thread")]
    assert result.exit_code == 1
    # And end to end through the command (compiles come from the cache of the run above).
    code = _cli(["gate", "--baseline", str(path), "--suite", str(STATIC_SUITE), "--quiet",
                 "--junit", str(tmp_path / "j.xml")])
    assert code == 1
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert root.get("failures") == "1"
    assert "launch__registers_per_thread" in ET.tostring(root, encoding="unicode")


def test_static_gate_other_toolchain_is_inconclusive(static_run, tmp_path):
    _, _, base, run = static_run
    edited = json.loads(base.read_text())
    edited["environment"]["nvidia-cutlass-dsl"] = "0.0.1"
    result = g.gate(edited, bl.load_baseline(run), families=[gate_policy.STATIC])
    assert result.verdict == g.INCONCLUSIVE and result.exit_code == 3
    assert g.gate(edited, bl.load_baseline(run), gate_policy.Policy(accept_inconclusive=True),
                  families=[gate_policy.STATIC]).exit_code == 0


def test_baseline_save_static_only_refuses_to_overwrite(tmp_path, capsys):
    path = tmp_path / "b.json"
    path.write_text("{}")
    code = _cli(["baseline", "save", "--static-only", "--suite", str(STATIC_SUITE), "-o", str(path)])
    assert code == 2
    assert "--force" in capsys.readouterr().err
    assert path.read_text() == "{}"


def test_gate_usage_errors_exit_2(tmp_path, capsys):
    assert _cli(["gate", "--baseline", str(tmp_path / "missing.json")]) == 2
    assert "no such baseline" in capsys.readouterr().err
    assert _cli(["gate", "--baseline", str(STATIC_BASELINE), "--suite", "a.toml", "--report", "b.ncu-rep"]) == 2


# ----------------------------------------------------------------------------- report baselines

def test_report_gate_a_a_and_injected_counter_regression(fixture_file, tmp_path, capsys, monkeypatch):
    report = str(fixture_file(CUTE_ADD_REPORT))
    base = tmp_path / "report-baseline.json"
    assert _cli(["baseline", "save", "--report", report, "-o", str(base)]) == 0
    assert _cli(["gate", "--baseline", str(base), "--report", report, "--quiet"]) == 0
    doc = json.loads(base.read_text())
    assert doc["environment"]["ncu"]["version"] == "2025.3.1.0"
    gemm = next(c for c in doc["cases"] if "nvjet" in c["id"])
    gemm["counters"][0]["metrics"]["smsp__inst_executed.sum"]["value"] *= 0.9
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    capsys.readouterr()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step-summary.md"))
    code = _cli(["gate", "--baseline", str(edited), "--report", report, "--json", str(tmp_path / "v.json")])
    assert code == 1
    stdout = capsys.readouterr().out
    assert "::error title=REGRESSION%3A" in stdout and "smsp__inst_executed.sum" in stdout
    assert "REGRESSION" in (tmp_path / "step-summary.md").read_text()
    verdicts = json.loads((tmp_path / "v.json").read_text())
    bad = [(c["case"], m["metric"]) for c in verdicts["cases"] for m in c["metrics"] if m["verdict"] == "REGRESSION"]
    assert bad == [(gemm["id"], "smsp__inst_executed.sum")]


def test_report_from_another_gpu_is_inconclusive(fixture_file, tmp_path):
    report = str(fixture_file(CUTE_ADD_REPORT))
    doc = bl.document_from_report(report)
    doc["environment"]["gpu"]["name"] = "NVIDIA H100 80GB HBM3"
    current = bl.align_report_to_baseline(bl.document_from_report(report), doc)
    result = g.gate(doc, current, mode="report", families=[gate_policy.COUNTERS])
    assert result.verdict == g.INCONCLUSIVE
    assert all(m.verdict == g.INCONCLUSIVE for m in result.metrics)


def test_report_matches_a_suite_case_by_kernel_name(fixture_file):
    report = str(fixture_file(CUTE_ADD_REPORT))
    doc = bl.document_from_report(report)
    gemm = next(c for c in doc["cases"] if "nvjet" in c["id"])
    suite_like = {**doc, "cases": [{**gemm, "id": "gemm-4k"}]}
    aligned = bl.align_report_to_baseline(bl.document_from_report(report), suite_like)
    assert [c["id"] for c in aligned["cases"]] == ["gemm-4k"]
    assert g.gate(suite_like, aligned, mode="report", families=[gate_policy.COUNTERS]).verdict == g.PASS


# ----------------------------------------------------------------------------- renderers

def test_annotations_escape_workflow_command_characters():
    v = g.MetricVerdict(case="a,b", family="static", metric="x", verdict=g.REGRESSION, reason="50% worse\nreally")
    result = g.GateResult(cases=[g.CaseVerdict(case="a,b", description="", metrics=[v])],
                          environment_differences=[], baseline_environment={}, current_environment={})
    (line,) = out.github_annotations(result)
    assert line.startswith("::error title=REGRESSION%3A a%2Cb static%3Ax::")
    assert "50%25 worse%0Areally" in line


def test_markdown_and_junit_of_an_inconclusive_result():
    v = g.MetricVerdict(case="c", family="timing", metric="target", verdict=g.INCONCLUSIVE,
                        reason="environment differs: gpu.name 'A' vs 'B'", unit="ms", baseline=0.1, current=0.2)
    result = g.GateResult(cases=[g.CaseVerdict(case="c", description="rmsnorm", metrics=[v])],
                          environment_differences=[environment.EnvironmentDifference("gpu.name", "A", "B", ["timing"])],
                          baseline_environment={}, current_environment={})
    md = out.gate_markdown(result)
    assert "INCONCLUSIVE" in md and "`gpu.name`" in md and "100.00 µs" in md
    root = ET.fromstring(out.gate_junit(result))
    assert root.get("skipped") == "1"
    assert root.find("testsuite/testcase/skipped") is not None


def test_gpu_suite_without_a_gpu_exits_3(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    code = _cli(["baseline", "save", "--suite", str(ROOT / "suites" / "gpu.toml"), "-o", str(tmp_path / "b.json")])
    assert code == 3
    assert "--static-only" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()


def test_case_errors_name_the_case(tmp_path, capsys):
    suite = _suite(tmp_path, "[suite]\nstatic_only = true\n[[case]]\nname = 'bad'\ntarget = 'rmsnorm'\nconfig = {speed = 3}\n")
    code = _cli(["baseline", "save", "--suite", str(suite), "-o", str(tmp_path / "b.json"), "--quiet"])
    assert code == 2
    assert "case bad:" in capsys.readouterr().err


def test_slower_variant_is_rmsnorm_with_an_extra_knob():
    from kernelscope.kernels import registry
    from kernelscope.kernels.rmsnorm import SPEC

    spec = registry.resolve(str(ROOT / "suites" / "slower_variants.py") + ":rmsnorm_with_extra_traffic")
    assert spec.default_config == {**SPEC.default_config, "extra_mib": 0}
    assert spec.reference_fp32 is SPEC.reference_fp32
