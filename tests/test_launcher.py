"""kernels/cute_build.launcher without a GPU: a compiled DSL function's arguments are converted
once, at bind time, and every launch runs the packed arguments (the per-call conversion cost
25-38 us of host time per launch on the H100 host, benchmarks/results/launch-overhead-h100.json)."""

from kernelscope.kernels import cute_build
from kernelscope.kernels.launch_cache import LoadedCompile


class FakeCompiled:
    """What the DSL's compiled function offers: argument conversion, an executor, a slow call."""

    def __init__(self):
        self.converted, self.ran, self.called = [], [], []

    def generate_execution_args(self, *args):
        self.converted.append(args)
        return [("packed", a) for a in args], ["adapted"]

    def to(self, device):
        assert device is None
        return self

    def run_compiled_program(self, exe_args):
        self.ran.append(exe_args)
        return 0

    def __call__(self, *args):
        self.called.append(args)
        return 0


def test_arguments_are_converted_once_and_every_launch_runs_them(monkeypatch):
    monkeypatch.delenv("KERNELSCOPE_PER_CALL_ARGS", raising=False)
    fn = FakeCompiled()
    launch = cute_build.launcher(fn, (1, 2))
    for _ in range(3):
        assert launch() == 0
    assert fn.converted == [(1, 2)] and len(fn.ran) == 3 and fn.called == []
    assert fn.ran[0] == [("packed", 1), ("packed", 2)]
    # A launch-cache entry wraps the loaded function: the launcher reaches through it.
    inner = FakeCompiled()
    cute_build.launcher(LoadedCompile(inner, None, None), (3,))()
    assert inner.converted == [(3,)] and len(inner.ran) == 1


def test_per_call_conversion_stays_available(monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_PER_CALL_ARGS", "1")
    fn = FakeCompiled()
    launch = cute_build.launcher(fn, (1, 2))
    launch()
    launch()
    assert fn.converted == [] and fn.called == [(1, 2), (1, 2)]
    # Something that is only callable (no executor) is called as it is.
    monkeypatch.delenv("KERNELSCOPE_PER_CALL_ARGS")
    calls = []
    cute_build.launcher(lambda *a: calls.append(a), (5,))()
    assert calls == [(5,)]
