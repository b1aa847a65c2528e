"""CompiledKernel's deferred artifacts: built once, on first read, never by a launch."""

import dataclasses

from kernelscope.kernels.spec import CompiledKernel


def _counting_build(calls):
    def build():
        calls.append(1)
        return b"not an ELF", ".version 8.0"
    return build


def test_a_launch_never_builds_the_artifacts():
    calls = []
    ck = CompiledKernel(launch=lambda inputs: inputs["out"], bind=lambda inputs: (lambda: 7),
                        artifacts=_counting_build(calls))
    assert ck.bound({"out": 1})() == 7
    assert calls == []


def test_the_artifacts_are_built_once_on_first_read():
    calls = []
    ck = CompiledKernel(launch=None, artifacts=_counting_build(calls))
    assert ck.ptx == ".version 8.0"
    assert ck.cubin == b"not an ELF"
    assert ck.kernel_names == [] and calls == [1]
    assert ck.materialize() is ck and calls == [1]


def test_a_build_error_surfaces_where_the_artifacts_are_read():
    def broken():
        raise RuntimeError("the DSL failed")
    ck = CompiledKernel(launch=None, artifacts=broken)
    try:
        ck.materialize()
    except RuntimeError as e:
        assert "the DSL failed" in str(e)
    else:
        raise AssertionError("materialize() hid the compile error")


def test_replace_and_eager_artifacts_keep_working():
    calls = []
    lazy = CompiledKernel(launch=None, artifacts=_counting_build(calls))
    copy = dataclasses.replace(lazy, bind=lambda inputs: (lambda: 1))
    assert copy.cubin == b"not an ELF" and copy.bind is not None
    eager = CompiledKernel(launch=None, cubin=b"x")
    assert eager.cubin == b"x" and eager.sass is None and eager.ptx is None and eager.kernel_names == []
    try:
        eager.no_such_field
    except AttributeError:
        pass
    else:
        raise AssertionError("an unknown attribute did not raise AttributeError")
