"""The timing gate on a GPU: A/A passes, a deliberately slower variant is a regression."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.gate import runner
from kernelscope.gate import suite as suites
from kernelscope.gate import verdicts as g

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
VARIANT = ROOT / "suites" / "slower_variants.py"


def _suite(tmp_path, target: str, config: str) -> suites.Suite:
    path = tmp_path / f"suite-{abs(hash((target, config)))}.toml"
    path.write_text(f"""
[suite]
samples = 100
[[case]]
name = "rms"
target = "{target}"
reference = "torch.rmsnorm"
shape = {{M = 8192, N = 4096}}
config = {config}
""")
    return suites.load_suite(path)


def test_a_a_passes_and_a_slower_variant_regresses(tmp_path):
    plain = _suite(tmp_path, "rmsnorm", "{vec = 8}")
    base = runner.run_suite(plain)
    assert base["cases"][0]["correctness"]["ok"]
    again = g.gate(base, runner.run_suite(plain))
    assert again.exit_code == 0, [(m.metric, m.reason) for m in again.metrics if m.verdict != g.PASS]

    slower = _suite(tmp_path, f"{VARIANT}:rmsnorm_with_extra_traffic", "{vec = 8, extra_mib = 64}")
    slower_run = runner.run_suite(slower)
    result = g.gate(base, slower_run)
    target = next(m for m in result.metrics if m.family == "timing" and m.metric == "target")
    assert target.verdict == g.REGRESSION and result.exit_code == 1
    assert all(m.verdict == g.PASS for m in result.metrics if m.family == "static")

    improvement = g.gate(slower_run, runner.run_suite(plain))
    assert next(m for m in improvement.metrics if m.metric == "target").verdict == g.IMPROVEMENT
    assert improvement.exit_code == 0
