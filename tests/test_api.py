"""The Python API (`import kernelscope as ks`) on the shipped report fixtures, no GPU."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kernelscope as ks
from kernelscope.api.digest import estimate_tokens

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
GEMM_PAIR = str(FIXTURES / "h200-gemm-vs-cublas-4096.quick.ncu-rep.xz")
MANY = str(FIXTURES / "h200-torch-242-launches.metrics6.ncu-rep.xz")
SWEEP = str(FIXTURES / "h200-sweep-rmsnorm.json.xz")


def _cli(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "kernelscope", *args], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def pair():
    return ks.diff(GEMM_PAIR)


def test_import_is_light():
    code = ("import sys, kernelscope as ks; ks.load, ks.diff, ks.inspect, ks.gate_against; "
            "print(sorted(m for m in ('torch', 'cutlass', 'pandas', 'matplotlib', 'mcp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_load_select_and_one():
    many = ks.load(MANY)
    assert len(many) == 242 and many[0].index == 0
    assert [p.index for p in many.select("@5")] == [5]
    assert len(ks.load(MANY + ":@7")) == 1 and ks.load(MANY + ":@7").one().index == 7
    with pytest.raises(ks.UserError, match="matches 242 kernels"):
        many.one()
    with pytest.raises(ks.UserError, match="no kernel @999"):
        many.select("@999")
    with pytest.raises(ks.UserError, match="no such file"):
        ks.load(FIXTURES / "missing.ncu-rep")


def test_profiles_document_is_the_cli_show_json():
    loaded = ks.load(GEMM_PAIR, kernel="nvjet")
    # The API's document in a process of its own: in a long test process an earlier test can leave
    # a metric's unit changed in the profile record (seen once under xdist, not yet explained).
    fresh = subprocess.run([sys.executable, "-c", "import sys, kernelscope as ks; "
                            f"sys.stdout.write(ks.load({str(GEMM_PAIR)!r}, kernel='nvjet').to_json())"],
                           capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert fresh == _cli("show", GEMM_PAIR, "-k", "nvjet", "--format", "json")
    rows = loaded.to_dataframe()
    duration = rows[rows.metric_id == "duration"].iloc[0]
    assert duration.value == pytest.approx(loaded.one().value("gpu__time_duration.sum"))
    assert set(rows.columns) == {"kernel_index", "kernel", "view", "metric_id", "label", "value", "unit"}


def test_diff_document_is_the_cli_diff_json(pair):
    assert pair.to_json() == _cli("diff", GEMM_PAIR, "--format", "json")
    a, b = ks.load(GEMM_PAIR)
    again = ks.diff(a, ks.load(GEMM_PAIR, kernel="nvjet"))
    assert again.to_dict() == pair.to_dict()
    rows = pair.to_dataframe()
    dur = rows[rows.metric_id == "duration"].iloc[0]
    assert dur.a > dur.b and dur.better_side == "b" and dur.change == pytest.approx(dur.a - dur.b)


def test_evaluate_gives_the_findings_of_the_diff(pair):
    a, b = ks.load(GEMM_PAIR)
    findings = ks.evaluate(a, b)
    assert [f.rule_id for f in findings] == [f.rule_id for f in pair.findings] != []
    table = findings.to_dataframe()
    assert list(table.rule) == [f.rule_id for f in findings]
    assert findings.to_dict() == {k: pair.to_dict()[k] for k in findings.to_dict()}
    assert set(findings.to_dict()) >= {"verdict", "findings", "shared", "rules_not_evaluated"}
    alone = ks.evaluate(a)
    assert all(f.compares == "target" for f in alone)


def test_explain_rule_and_rules():
    ids = [r["id"] for r in ks.list_rules()]
    assert "stall-barrier" in ids
    rule = ks.explain_rule("stall-barrier")
    assert rule["id"] == "stall-barrier" and rule["condition"] and rule["hint"]
    with pytest.raises(ks.UserError, match="did you mean stall-barrier"):
        ks.explain_rule("stall-barr")


def test_html_fragments_have_no_script_and_hold_the_content(pair):
    for result in (pair, pair.findings, ks.load(GEMM_PAIR), ks.load_sweep(SWEEP)):
        html = result._repr_html_()
        assert html.startswith('<div class="kernelscope">') and "<script" not in html.lower()
        # A fragment, not a page: no document, no page style sheet (SVG plots keep their own).
        assert "<html" not in html and "<body" not in html and "body {" not in html
    assert pair.findings[0].title in pair.findings._repr_html_()
    assert "<svg" in pair._repr_html_()


def test_sweep_loaded_from_a_recorded_file():
    sweep = ks.load_sweep(SWEEP)
    table = sweep.to_dataframe()
    assert len(table) == len(sweep.to_dict()["rows"])
    fastest = table[table.status == "ok"].median_ms.min()
    assert table.iloc[0].median_ms == fastest
    assert "fastest first" in sweep.brief()
    with pytest.raises(ks.UserError, match="not a kernelscope sweep"):
        ks.load_sweep(FIXTURES / "h200-anchors-2026-11-21.json")


def test_gate_on_a_report_matches_the_cli(tmp_path):
    base = ks.baseline(report=GEMM_PAIR)
    path = base.save(str(tmp_path / "base.json"))
    with pytest.raises(ks.UserError, match="exists"):
        base.save(path)
    result = ks.gate_against(path, report=GEMM_PAIR)
    assert result.verdict == "PASS" and result.exit_code == 0
    cli_json = tmp_path / "gate.json"
    _cli("gate", "--baseline", path, "--report", GEMM_PAIR, "--json", str(cli_json), "--quiet")
    ours, theirs = result.to_dict(), json.loads(cli_json.read_text())
    for doc in (ours, theirs):
        doc["environment"]["current"].pop("created_utc")
    assert ours == theirs
    assert set(result.to_dataframe().verdict) == {"PASS"}


def test_brief_keeps_to_its_budget_and_leads_with_the_verdict(pair):
    for tokens in (60, 150, 400, 2000):
        text = pair.brief(tokens)
        assert estimate_tokens(text) <= tokens
        assert text.startswith("A kernel_cutlass") and "A is 1.6% slower than B" in text
    assert "1. [warning]" in pair.brief(400) and "evidence:" in pair.brief(400)
    # A 1.6% gap between two kernels measured once names no main reason: the verdict says it is noise.
    assert "Main reason" not in pair.brief(400)
    assert "The 1.6% gap is within run-to-run noise" in pair.brief(400)
    assert "more; the JSON document holds everything" in pair.brief(150)
    assert all(f"({f.rule_id};" in pair.brief(4000) for f in pair.findings)
    assert _cli("diff", GEMM_PAIR, "--format", "brief", "--tokens", "150") == pair.brief(150)
    assert _cli("show", MANY, "--format", "brief") == ks.load(MANY).brief()


def test_to_dataframe_without_pandas_is_one_clear_error(monkeypatch, pair):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ks.MissingExtra) as e:
        pair.to_dataframe()
    assert str(e.value) == "to_dataframe() needs pandas, which is not installed: pip install 'kernelscope[pandas]'"
    assert e.value.exit_code == 3


def test_gpu_calls_without_a_gpu_are_environment_errors():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    for call in (lambda: ks.run("rmsnorm"), lambda: ks.profile("rmsnorm"),
                 lambda: ks.sweep("rmsnorm", configs={"threads": [128, 256]})):
        with pytest.raises(ks.UserError, match="no CUDA GPU") as e:
            call()
        assert e.value.exit_code == 3


def test_inspection_lists_the_loops_the_cli_lists():
    import kernelscope as ks
    from kernelscope.toolchain.sass_loops import innermost

    inspection = ks.inspect("gemm")
    (loops,) = inspection.loops()
    # The consumers' k-tile loop: one WGMMA group of tile_k / 16 = 4 HGMMA per k-tile.
    mma_loops = [loop for loop in innermost(loops) if loop.opcodes.get("HGMMA")]
    assert [loop.opcodes["HGMMA"] for loop in mma_loops] == [4]
    assert all(loop.to_dict()["instructions"] == loop.instructions for loop in loops)


def test_a_diff_across_two_gpus_says_so_in_python_json_and_brief():
    """A pair of reports from an H200 and an H100: the caveat reaches every way an agent reads
    a diff, not only the terminal table."""
    import kernelscope as ks
    from kernelscope.api.digest import digest

    h100 = str(FIXTURES / "h100-gemm-vs-cublas-4096.lines.ncu-rep.xz")
    pair = ks.diff(GEMM_PAIR + ":@0", h100 + ":@0")
    assert pair.comparability == ["different devices: NVIDIA H200 vs NVIDIA H100 80GB HBM3"]
    doc = pair.to_dict()
    assert doc["comparability"] == pair.comparability
    assert "Compare with care: different devices: NVIDIA H200 vs NVIDIA H100 80GB HBM3." in digest(doc, tokens=400)
    same = ks.diff(GEMM_PAIR)
    assert same.comparability == [] and same.to_dict()["comparability"] == []
    assert "Compare with care" not in digest(same.to_dict(), tokens=400)
    assert "<b>Compare with care:</b> different devices: NVIDIA H200 vs NVIDIA H100 80GB HBM3." in pair._repr_html_()


def test_diff_merge_in_python_as_on_the_command_line():
    many = str(FIXTURES / "h200-torch-242-launches.metrics6.ncu-rep.xz")
    pair = ks.diff(many + ":distribution", many + ":distribution", merge=True)
    assert pair.a.kind == "merged" and pair.a.launches == 2
    with pytest.raises(ks.UserError, match="A merges 240 launch"):
        ks.diff(many + ":vectorized", many + ":distribution", merge=True)
    with pytest.raises(ks.UserError, match="matches 2 kernels"):
        ks.diff(many + ":distribution", many + ":@0")
