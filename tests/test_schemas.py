"""The published JSON Schemas (docs/schemas/) hold for real outputs of every document kernelscope writes."""

import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SCHEMAS = ROOT / "docs" / "schemas"
GEMM_PAIR = FIXTURES / "h200-gemm-vs-cublas-4096.quick.ncu-rep.xz"


def _validator(name: str):
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _check(name: str, doc: dict) -> None:
    errors = sorted(_validator(name).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def _cli(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "kernelscope", *args], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_every_written_document_has_a_schema():
    assert {p.name for p in SCHEMAS.glob("*.schema.json")} == {
        f"{n}.schema.json" for n in ("show", "diff", "sweep", "gate", "baseline")}


@pytest.mark.parametrize("spec", [str(GEMM_PAIR), str(FIXTURES / "h200-rule-kernels.ncu-rep.xz"),
                                  str(FIXTURES / "h200-torch-242-launches.metrics6.ncu-rep.xz") + ":@0"])
def test_show_documents(spec):
    doc = json.loads(_cli("show", spec, "--format", "json"))
    _check("show", doc)


def test_diff_documents():
    _check("diff", json.loads(_cli("diff", str(GEMM_PAIR), "--format", "json")))
    cross = json.loads(_cli("diff", f"{FIXTURES / 'h200-cute-add-and-cublas-gemm.full.ncu-rep.xz'}:cutlass",
                            f"{GEMM_PAIR}:nvjet", "--format", "json"))
    assert cross["findings"]
    _check("diff", cross)


def test_a_violation_is_caught():
    doc = json.loads(_cli("diff", str(GEMM_PAIR), "--format", "json"))
    doc["findings"][0]["severity"] = "catastrophic"
    doc["views"]["launch"]["metrics"][0]["a"] = [1]
    messages = [e.message for e in _validator("diff").iter_errors(doc)]
    assert len(messages) == 2


def test_sweep_document_recorded_on_an_h200():
    with lzma.open(FIXTURES / "h200-sweep-rmsnorm.json.xz", "rt") as f:
        _check("sweep", json.load(f))


def test_baseline_and_gate_documents(tmp_path):
    _check("baseline", json.loads((ROOT / "baselines" / "static-sm90a.json").read_text()))
    base = tmp_path / "base.json"
    _cli("baseline", "save", "--report", str(GEMM_PAIR), "-o", str(base))
    _check("baseline", json.loads(base.read_text()))
    verdicts = tmp_path / "gate.json"
    _cli("gate", "--baseline", str(base), "--report", str(GEMM_PAIR), "--json", str(verdicts), "--quiet")
    doc = json.loads(verdicts.read_text())
    assert doc["verdict"] == "PASS" and doc["cases"]
    _check("gate", doc)


def test_inspect_document_is_a_show_document():
    import kernelscope as ks

    _check("show", ks.inspect("rmsnorm").to_dict())
