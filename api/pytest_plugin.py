"""The kernelscope pytest plugin (entry point `pytest11`): time kernels in your own tests.

    def test_my_kernel_speed(ks_bench):
        fn = build_my_kernel(...)            # a callable that launches the kernel once
        timing = ks_bench(fn, name="my_kernel/4096")

`ks_bench` times the callable as `kernelscope run` does (CUDA events around each launch,
L2 flushed before each, median and IQR of many launches) and, with
`--ks-baseline FILE`, judges the samples against the case of the same name in that
baseline with the gate's statistics (rank test and minimum effect): a REGRESSION fails
the test, an INCONCLUSIVE verdict is a warning. `--ks-save-baseline FILE` writes this
session's timings as a baseline document for later runs.

Tests that use `ks_bench` carry the `gpu` marker; tests marked `gpu` are skipped where no
CUDA GPU is visible. The plugin imports nothing heavy until a test needs a GPU.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest

FIXTURE = "ks_bench"
GPU_MARKER = "gpu"


def pytest_addoption(parser):
    group = parser.getgroup("kernelscope")
    group.addoption("--ks-baseline", metavar="FILE", default=None,
                    help="kernelscope: judge ks_bench timings against this baseline (REGRESSION fails the test).")
    group.addoption("--ks-save-baseline", metavar="FILE", default=None,
                    help="kernelscope: write this session's ks_bench timings as a baseline file.")
    group.addoption("--ks-rep-ms", type=float, default=100.0,
                    help="kernelscope: time budget of the timed launches per ks_bench call (default 100 ms).")


def pytest_configure(config):
    config.addinivalue_line("markers", f"{GPU_MARKER}: needs an NVIDIA GPU; skipped where none is present")
    config._kernelscope = _Session(config)
    config._kernelscope.baseline()  # a missing or malformed file stops the session before any test


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(GPU_MARKER)
    if not any(GPU_MARKER in item.keywords for item in items) or _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if GPU_MARKER in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    state = getattr(session.config, "_kernelscope", None)
    if state is not None:
        state.save()


class _Session:
    """The baseline read once per session, and the timings recorded for --ks-save-baseline."""

    def __init__(self, config):
        self.baseline_path = config.getoption("--ks-baseline", None)
        self.save_path = config.getoption("--ks-save-baseline", None)
        self.rep_ms = config.getoption("--ks-rep-ms", 100.0)
        self._baseline: dict[str, Any] | None = None
        self._environment: dict[str, Any] | None = None
        self.cases: list[dict[str, Any]] = []

    def baseline(self) -> dict[str, Any] | None:
        if self.baseline_path and self._baseline is None:
            from kernelscope.errors import UserError
            from kernelscope.gate.baseline import load_baseline

            try:
                self._baseline = load_baseline(self.baseline_path)
            except UserError as e:
                raise pytest.UsageError(f"--ks-baseline: {e}") from None
        return self._baseline

    def environment(self, flush_l2: bool) -> dict[str, Any]:
        if self._environment is None:
            from kernelscope.gate.environment import capture_environment

            self._environment = capture_environment(gpu=True, flush_l2=flush_l2)
        return self._environment

    def document(self, cases: list[dict[str, Any]], flush_l2: bool) -> dict[str, Any]:
        from kernelscope.gate.baseline import SCHEMA, SCHEMA_VERSION

        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "kind": "gpu",
                "suite": {"path": "pytest", "name": "pytest", "static_only": False, "samples": None},
                "environment": self.environment(flush_l2), "cases": cases}

    def save(self) -> None:
        if self.save_path and self.cases:
            from kernelscope.gate.baseline import save_baseline

            save_baseline(self.document(self.cases, True), self.save_path, force=True)


class Bench:
    """The `ks_bench` fixture: call it with a kernel launcher to time (and gate) it."""

    def __init__(self, state: _Session, node_id: str):
        self._state = state
        self._node_id = node_id
        self.results: list[Any] = []

    def __call__(self, fn: Callable[..., Any], *, name: str | None = None, reference: Callable[..., Any] | None = None,
                 rep_ms: float | None = None, warmup_ms: float = 25.0, flush_l2: bool = True, input_sets=None):
        """Time `fn` (called as fn(), or fn(input_sets[i]) to rotate inputs) and return its
        Timing. `reference`, when given, is timed too: if it moved against the baseline, the
        machine did, and the verdict is INCONCLUSIVE rather than a false regression. With
        --ks-baseline, fail the test when `fn` regressed against case `name` (default: the
        test's node id)."""
        from kernelscope.profiler import timing as timing_module

        case_id = name or self._node_id
        common = dict(warmup_ms=warmup_ms, rep_ms=rep_ms or self._state.rep_ms, flush_l2=flush_l2,
                      input_sets=input_sets)
        timing = timing_module.time_callable(fn, **common)
        timings = {"target": timing.to_dict()}
        if reference is not None:
            timings["reference"] = timing_module.time_callable(reference, **common).to_dict()
        self.results.append(timing)
        self._state.environment(flush_l2)  # captured while the GPU is in use, once per session
        case = {"id": case_id, "target": case_id, "reference": None, "shape": {}, "config": {}, "dtype": None,
                "arch": None, "timing": timings}
        self._state.cases.append(case)
        base = self._state.baseline()
        if base is not None:
            self._judge(base, case, flush_l2)
        return timing

    def _judge(self, base: dict[str, Any], case: dict[str, Any], flush_l2: bool) -> None:
        from kernelscope.gate import policy, verdicts

        base_case = next((c for c in base.get("cases") or [] if c.get("id") == case["id"]), None)
        if base_case is None:
            warnings.warn(f"kernelscope: {self._state.baseline_path} has no case {case['id']!r}: not judged")
            return
        subset = {**base, "cases": [base_case]}
        result = verdicts.gate(subset, self._state.document([case], flush_l2), policy.Policy(), families=[policy.TIMING])
        lines = [f"{m.case} {m.metric}: {m.verdict} ({m.reason})" for m in result.metrics]
        if result.verdict == verdicts.REGRESSION:
            pytest.fail("kernelscope: timing regressed against the baseline: " + "; ".join(lines), pytrace=False)
        if result.verdict == verdicts.INCONCLUSIVE:
            warnings.warn("kernelscope: inconclusive against the baseline: " + "; ".join(lines))


@pytest.fixture
def ks_bench(request) -> Bench:
    """Time a kernel launcher the way `kernelscope run` does; gate it with --ks-baseline."""
    if not _cuda_available():
        pytest.skip("needs a CUDA GPU")
    return Bench(request.config._kernelscope, request.node.nodeid)
