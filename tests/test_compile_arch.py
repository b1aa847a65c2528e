"""The compile cache holds only cubins of its key's arch, whatever imported cutlass first.

The CuTe DSL reads CUTE_DSL_ARCH once, at import: a process that imported cutlass before
kernelscope set it used to compile for another arch and store that cubin under the
sm_90a key, where every later inspect (and the static gate) read it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.profiler.compile_cache import CacheKey, CompileCache
from kernelscope.toolchain.tools import find_cuda_tool

# cutlass imported while CUTE_DSL_ARCH names another arch (explicit, so the test does not
# depend on which GPU, if any, the DSL would detect), then kernelscope asked for sm_90a.
IMPORT_CUTLASS_FIRST = """
import json, os, sys
os.environ["CUTE_DSL_ARCH"] = "sm_100a"
import cutlass
del os.environ["CUTE_DSL_ARCH"]
from kernelscope.profiler.static import inspect_target
inspection = inspect_target("rmsnorm", arch="sm_90a")
with open(sys.argv[1], "wb") as f:
    f.write(inspection.cubin)
(kernel,) = inspection.kernels
print(json.dumps({"from_cache": inspection.from_cache, "sass": kernel.sass}))
"""


def elf_arch_of(path: Path) -> str | None:
    """Read here from cuobjdump's header line, independently of kernelscope's reader."""
    out = subprocess.run([find_cuda_tool("cuobjdump"), "--dump-elf", str(path)],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"\bsm=(\w+)", out)
    return f"sm_{m.group(1)}" if m else None


def test_cutlass_imported_first_still_compiles_and_caches_for_the_requested_arch(tmp_path):
    pytest.importorskip("cutlass")
    cache_dir = tmp_path / "cache"
    cubin = tmp_path / "inspected.cubin"
    env = dict(os.environ, KERNELSCOPE_CACHE_DIR=str(cache_dir))
    env.pop("CUTE_DSL_ARCH", None)
    env.pop("CUTE_DSL_DUMP_DIR", None)
    result = subprocess.run([sys.executable, "-c", IMPORT_CUTLASS_FIRST, str(cubin)],
                            capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    doc = json.loads(result.stdout.splitlines()[-1])
    assert doc["from_cache"] is False
    assert elf_arch_of(cubin) == "sm_90a"
    # Paired FP32 ops exist from sm_100 on; an sm_90a listing has none.
    assert "FMUL2" not in doc["sass"] and "FHFMA" not in doc["sass"]
    stored = list(cache_dir.glob("compile/*/*/kernel.cubin"))
    assert stored, "the compile was not cached"
    assert [elf_arch_of(p) for p in stored] == ["sm_90a"] * len(stored)


@pytest.fixture(scope="module")
def cubins(tmp_path_factory) -> dict[str, bytes]:
    """A trivial kernel built for sm_90a and for sm_100a by nvcc."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    folder = tmp_path_factory.mktemp("cubins")
    source = folder / "k.cu"
    source.write_text("extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    out = {}
    for arch in ("sm_90a", "sm_100a"):
        target = folder / f"k_{arch}.cubin"
        subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-o", str(target), str(source)], check=True)
        out[arch] = target.read_bytes()
    return out


def _key(arch: str) -> CacheKey:
    return CacheKey(target="k", source_hash="h", config={}, shape={}, dtype="float32", arch=arch)


def test_store_refuses_a_cubin_of_another_arch(tmp_path, cubins):
    cache = CompileCache(tmp_path)
    assert cache.store(_key("sm_90a"), cubins["sm_100a"], {"kernel": "k"}) is False
    assert cache.load(_key("sm_90a")) is None
    assert cache.store(_key("sm_90a"), cubins["sm_90a"], {"kernel": "k"}) is True
    assert cache.load(_key("sm_90a")).cubin == cubins["sm_90a"]


def test_load_treats_an_entry_of_another_arch_as_a_miss(tmp_path, cubins):
    cache = CompileCache(tmp_path)
    key = _key("sm_90a")
    assert cache.store(key, cubins["sm_90a"], {"kernel": "k"})
    # An entry written before stores were checked, or by an older kernelscope.
    (stored,) = (tmp_path / "compile").glob("*/*/kernel.cubin")
    stored.write_bytes(cubins["sm_100a"])
    assert cache.load(key) is None
    assert not stored.exists()          # a bad entry is discarded, so the next compile stores a good one
    assert cache.store(key, cubins["sm_90a"], {"kernel": "k"}) and cache.load(key) is not None
    stored.write_bytes(b"not a cubin")
    assert cache.load(key) is None


def test_a_compile_for_another_arch_is_refused_with_one_line(cubins, tmp_path, monkeypatch):
    """A kernel that forces its own target (or returns a compile memoised for another arch)
    is not inspected, nor cached, as the arch asked for."""
    pytest.importorskip("cutlass")
    from types import SimpleNamespace

    from kernelscope.errors import UserError
    from kernelscope.profiler.dsl_compile import compile_artifacts

    # compile_artifacts sets these for the process: keep them to this test.
    monkeypatch.setenv("CUTE_DSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    spec = SimpleNamespace(name="pinned", compile=lambda *args: SimpleNamespace(cubin=cubins["sm_100a"]))
    with pytest.raises(UserError) as refused:
        compile_artifacts(spec, {}, {}, "float32", "sm_90a")
    message = str(refused.value)
    assert "\n" not in message and "sm_100a, not sm_90a" in message and "CUTE_DSL_ARCH=sm_90a" in message
    assert refused.value.exit_code == 3
    assert compile_artifacts(spec, {}, {}, "float32", "sm_100a").cubin == cubins["sm_100a"]
