"""Every shipped kernel compiles, without a GPU, for every architecture it claims, and its
SASS holds the opcodes its design declares (KernelSpec.expected_sass).

Parametrised from the registry, so a kernel is covered as soon as it is registered.
Each case runs `kernelscope inspect` in a fresh process (the DSL's target is chosen before
it is imported) with the suite's compile cache, which CI starts empty: a kernel is compiled
once per run and shared with the static gate and the README's commands.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from kernelscope.kernels import registry
from kernelscope.toolchain.tools import find_cuda_tool


def _cases():
    cases = []
    for name in registry.names():
        try:
            archs = registry.resolve(name).archs
        except Exception:  # a kernel that cannot even be loaded fails below, with the reason
            archs = [None]
        cases += [pytest.param(name, arch, id=f"{name}-{arch or 'unloadable'}") for arch in archs]
    return cases


@pytest.mark.parametrize("name, arch", _cases())
def test_shipped_kernel_inspects(name, arch, tmp_path):
    if arch is None:
        registry.resolve(name)  # raises with the reason
        pytest.fail(f"{name} names no architecture")
    # The suite's compile cache (KERNELSCOPE_CACHE_DIR, fresh per CI run): the static gate and
    # the README's commands compile the same kernels, and a compile is 5-25 s.
    env = dict(os.environ)
    env.pop("CUTE_DSL_ARCH", None)
    env.pop("CUTE_DSL_DUMP_DIR", None)
    result = subprocess.run(
        [sys.executable, "-m", "kernelscope", "inspect", name, "--arch", arch, "--format", "json",
         "--save-sass", str(tmp_path / "sass")],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["inspect"]["expected_sass_missing"] == []
    assert doc["kernels"], "the compile produced no kernel"
    # cuobjdump on the cubin inspect saved, read here independently of kernelscope.
    (cubin,) = (tmp_path / "sass").glob("*.cubin")
    usage = subprocess.run([find_cuda_tool("cuobjdump"), "--dump-resource-usage", str(cubin)],
                           capture_output=True, text=True, check=True).stdout
    reference = {
        fn: dict((k, int(v)) for k, v in re.findall(r"(REG|SHARED|STACK):(\d+)", fields))
        for fn, fields in re.findall(r"Function (\S+?):\s*\n\s*(REG:[^\n]*)", usage)
    }
    assert {k["profile"]["name"] for k in doc["kernels"]} == set(reference)
    for kernel in doc["kernels"]:
        profile = kernel["profile"]
        metrics = {k: v["value"] for k, v in profile["metrics"].items()}
        assert profile["kind"] == "static"
        assert metrics["launch__registers_per_thread"] == reference[profile["name"]]["REG"]
        assert metrics["launch__shared_mem_per_block_static"] == reference[profile["name"]]["SHARED"]
        assert metrics["static__stack_frame_bytes"] == reference[profile["name"]]["STACK"]
        assert metrics["static__sass_instructions"] > 0
        assert sum(profile["instruction_mix"].values()) == metrics["static__sass_instructions"]
    # Nothing written into the working directory by the DSL.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sass"]
