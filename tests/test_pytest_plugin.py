"""The pytest plugin: ks_bench skips cleanly without a GPU, and gates against --ks-baseline.

The gating tests replace the CUDA-event timer by a fixed list of samples (there is no GPU in
CI): what is checked is the plugin's bookkeeping and the gate's verdict on those samples.
"""

import json
from importlib.metadata import entry_points

pytest_plugins = ["pytester"]

# Installed, the plugin loads through its entry point; from a source tree, name it.
INSTALLED = any(ep.value == "kernelscope.api.pytest_plugin" for ep in entry_points(group="pytest11"))
PLUGIN = [] if INSTALLED else ["-p", "kernelscope.api.pytest_plugin"]

# An inner conftest standing in for a GPU: the timer returns the samples the test names.
FAKE_GPU = '''
import pytest
import kernelscope.api.pytest_plugin as plugin
from kernelscope.profiler import timing

SAMPLES = {"fast": [1.0 + 0.001 * i for i in range(40)], "slow": [1.2 + 0.001 * i for i in range(40)]}

_REAL_CHECK = plugin._cuda_available

def fake_environment(self, flush_l2):
    self._environment = {"gpu": {"name": "test GPU"}}
    return self._environment

def pytest_configure(config):
    config.addinivalue_line("markers", "speed(name): which samples the timer returns")
    plugin._cuda_available = lambda: True

def pytest_unconfigure(config):
    plugin._cuda_available = _REAL_CHECK

@pytest.fixture(autouse=True)
def fake_gpu(monkeypatch, request):
    monkeypatch.setattr(plugin._Session, "environment", fake_environment)
    speed = request.node.get_closest_marker("speed").args[0]
    monkeypatch.setattr(timing, "time_callable", lambda fn, **kw: timing.summarize(SAMPLES[speed], flush_l2=True))
'''

TESTS = '''
import pytest

@pytest.mark.speed("{speed}")
def test_kernel(ks_bench):
    t = ks_bench(lambda: None, name="my_kernel/4096")
    assert t.n == 40
'''


def test_without_a_gpu_the_fixture_skips_and_carries_the_gpu_marker(pytester, monkeypatch):
    import kernelscope.api.pytest_plugin as plugin

    monkeypatch.setattr(plugin, "_cuda_available", lambda: False)
    pytester.makepyfile("def test_kernel(ks_bench):\n    raise AssertionError('must not run')\n")
    result = pytester.runpytest_inprocess(*PLUGIN, "-rs", "-m", "gpu")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs a CUDA GPU*"])


def _run(pytester, speed: str, *args: str):
    pytester.makeconftest(FAKE_GPU)
    pytester.makepyfile(TESTS.format(speed=speed))
    return pytester.runpytest_inprocess(*PLUGIN, *args)


def test_save_then_gate_passes_on_the_same_samples_and_fails_on_slower(pytester):
    base = pytester.path / "base.json"
    _run(pytester, "fast", f"--ks-save-baseline={base}").assert_outcomes(passed=1)
    doc = json.loads(base.read_text())
    assert doc["schema"] == "kernelscope.baseline" and doc["cases"][0]["id"] == "my_kernel/4096"
    assert len(doc["cases"][0]["timing"]["target"]["samples_ms"]) == 40

    _run(pytester, "fast", f"--ks-baseline={base}").assert_outcomes(passed=1)
    slower = _run(pytester, "slow", f"--ks-baseline={base}")
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(["*timing regressed against the baseline*my_kernel/4096 target: REGRESSION*slower*"])


def test_a_case_missing_from_the_baseline_warns_and_passes(pytester):
    base = pytester.path / "other.json"
    base.write_text(json.dumps({"schema": "kernelscope.baseline", "schema_version": 1, "kind": "gpu",
                                "environment": {}, "cases": [{"id": "another"}]}))
    result = _run(pytester, "slow", f"--ks-baseline={base}")
    # Other installed plugins may add warnings of their own (pytest-benchmark does under
    # xdist): what matters is that this one is among them and the test still passes.
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*UserWarning: kernelscope:*has no case 'my_kernel/4096': not judged*"])


def test_an_unreadable_baseline_is_a_usage_error(pytester):
    result = _run(pytester, "fast", "--ks-baseline=nope.json")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--ks-baseline: nope.json: no such baseline file*"])
