"""A damaged compile-cache entry is noticed on read and replaced by a fresh compile."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.profiler.compile_cache import ENTRY_FORMAT, CacheKey, CompileCache, valid_cubin

ROOT = Path(__file__).resolve().parent.parent


def _tiny_elf() -> bytes:
    """A whole 64-bit ELF file: header, one section with 16 bytes, and the section table."""
    data = b"\x00" * 16
    shoff = 64 + len(data)
    header = b"\x7fELF" + bytes([2, 1, 1]) + b"\x00" * 9
    header += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 2, 0)
    null = b"\x00" * 64
    progbits = struct.pack("<IIQQQQIIQQ", 0, 1, 0, 0, 64, len(data), 0, 0, 1, 0)
    return header + data + null + progbits


def test_a_whole_elf_is_valid_and_any_cut_of_it_is_not():
    elf = _tiny_elf()
    assert valid_cubin(elf)
    assert not valid_cubin(b"")
    assert not any(valid_cubin(elf[:n]) for n in range(len(elf)))
    assert not valid_cubin(b"\x00" * len(elf))


@pytest.fixture(scope="module")
def sm90_cubin(tmp_path_factory) -> bytes:
    """A real sm_90a cubin: the cache keeps only cubins whose ELF names the key's arch."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    folder = tmp_path_factory.mktemp("cubin")
    (folder / "k.cu").write_text("extern \"C\" __global__ void k(float *x) { x[threadIdx.x] += 1.0f; }\n")
    subprocess.run([nvcc, "-cubin", "-arch=sm_90a", "-o", str(folder / "k.cubin"), str(folder / "k.cu")], check=True)
    return (folder / "k.cubin").read_bytes()


@pytest.mark.parametrize("damage", ["empty-cubin", "truncated-cubin", "no-cubin", "bad-json", "json-list"])
def test_damaged_entry_reads_as_missing_and_is_removed(tmp_path, damage, sm90_cubin):
    cache = CompileCache(tmp_path)
    key = CacheKey(target="t", source_hash="h", config={}, shape={}, dtype=None, arch="sm_90a")
    assert cache.store(key, sm90_cubin, {"kernel": "t"})
    assert cache.load(key) is not None and cache.load(key).meta["format"] == ENTRY_FORMAT
    entry = cache._dir(key)
    if damage == "empty-cubin":
        (entry / "kernel.cubin").write_bytes(b"")
    elif damage == "truncated-cubin":
        (entry / "kernel.cubin").write_bytes(sm90_cubin[:100])
    elif damage == "no-cubin":
        (entry / "kernel.cubin").unlink()
    elif damage == "bad-json":
        (entry / "entry.json").write_text("{")
    else:
        (entry / "entry.json").write_text(json.dumps([1]))
    assert cache.load(key) is None
    assert not entry.exists()
    assert not list(entry.parent.glob(".bad-*"))
    assert cache.store(key, sm90_cubin, {"kernel": "t"})
    assert cache.load(key) is not None


@pytest.mark.slow
def test_inspect_rebuilds_a_truncated_cached_cubin(tmp_path):
    """A truncated kernel.cubin once broke `inspect` on every later run, --no-cache included."""
    example = tmp_path / "src" / "smem_reverse.py"
    example.parent.mkdir()
    example.write_text((ROOT / "tests" / "examples" / "smem_reverse.py").read_text())
    env = {**os.environ, "KERNELSCOPE_CACHE_DIR": str(tmp_path / "cache"), "CI": "true"}
    pyroot = ROOT / ".pyroot"
    if pyroot.is_dir():
        env["PYTHONPATH"] = f"{pyroot}{os.pathsep}{env.get('PYTHONPATH', '')}"

    def inspect(*extra, rc=0):
        p = subprocess.run([sys.executable, "-m", "kernelscope", "inspect", f"{example}:SPEC", "--format", "json",
                            *extra], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert p.returncode == rc, p.stderr
        return (json.loads(p.stdout) if rc == 0 else None), p.stderr

    first, stderr = inspect()
    # a cold compile says so on a non-terminal: one plain line
    assert "kernelscope: compiling smem_reverse for sm_90a" in stderr
    (cubin,) = (tmp_path / "cache" / "compile").rglob("kernel.cubin")
    cubin.write_bytes(cubin.read_bytes()[: cubin.stat().st_size // 3])
    second, _ = inspect()
    assert second["inspect"]["from_cache"] is False
    assert second["kernels"][0]["profile"]["metrics"] == first["kernels"][0]["profile"]["metrics"]
    (cubin,) = (tmp_path / "cache" / "compile").rglob("kernel.cubin")
    assert valid_cubin(cubin.read_bytes())
    third, stderr = inspect()
    assert third["inspect"]["from_cache"] is True and "compiling" not in stderr
    # --save-sass never replaces the listings of an earlier run without -f
    inspect("--save-sass", "sass")
    listings = {p: p.read_bytes() for p in (tmp_path / "sass").iterdir()}
    _, stderr = inspect("--save-sass", "sass", rc=2)
    assert stderr.count("\n") == 1 and "exists: pass -f/--force" in stderr
    assert {p: p.read_bytes() for p in (tmp_path / "sass").iterdir()} == listings
    inspect("--save-sass", "sass", "-f")
