"""The launch cache: a compiled function written by one process is loaded by the next, a
damaged entry is compiled again, and the settings that change the code change the key."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Checked without importing it: an import here would fix the DSL's target before the kernels set it.
if importlib.util.find_spec("cutlass") is None:
    pytest.skip("needs nvidia-cutlass-dsl", allow_module_level=True)

PROBE = str(Path(__file__).with_name("launch_cache_probe.py"))


def _probe(tmp_path, *args, **env) -> dict:
    full = {**os.environ, "KERNELSCOPE_CACHE_DIR": str(tmp_path / "cache"), **env}
    r = subprocess.run([sys.executable, PROBE, *args], capture_output=True, text=True, env=full, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _entries(tmp_path) -> list[Path]:
    return sorted((tmp_path / "cache" / "launch").glob("*/*/launch.o"))


def test_a_second_process_loads_what_the_first_compiled(tmp_path):
    first = _probe(tmp_path, "fake-rmsnorm")
    assert first["stats"] == {"loaded": 0, "stored": 1, "compiled": 1}
    second = _probe(tmp_path, "fake-rmsnorm")
    assert second["stats"] == {"loaded": 1, "stored": 0, "compiled": 0}
    assert second["loaded_type"] == "LoadedCompile"
    assert second["cubin_sha256"] == first["cubin_sha256"] and second["ptx_chars"] == first["ptx_chars"] > 0
    assert len(_entries(tmp_path)) == 1


def test_a_damaged_entry_is_compiled_again(tmp_path):
    _probe(tmp_path, "fake-rmsnorm")
    (obj,) = _entries(tmp_path)
    obj.write_bytes(obj.read_bytes()[:100])
    again = _probe(tmp_path, "fake-rmsnorm")
    assert again["stats"] == {"loaded": 0, "stored": 1, "compiled": 1}
    assert _probe(tmp_path, "fake-rmsnorm")["stats"]["loaded"] == 1


def test_line_info_is_another_entry_and_the_switch_turns_it_off(tmp_path):
    _probe(tmp_path, "fake-rmsnorm")
    with_lines = _probe(tmp_path, "fake-rmsnorm", CUTE_DSL_LINEINFO="1")
    assert with_lines["stats"]["compiled"] == 1 and len(_entries(tmp_path)) == 2
    off = _probe(tmp_path, "fake-rmsnorm", KERNELSCOPE_NO_LAUNCH_CACHE="1")
    assert off["stats"] == {"loaded": 0, "stored": 0, "compiled": 1}


@pytest.mark.gpu
@pytest.mark.gpu_fast
@pytest.mark.parametrize("kernel", ["gemm", "flash_attn"])
def test_a_loaded_kernel_launches_and_is_correct(tmp_path, kernel):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    first = _probe(tmp_path, "gpu", kernel)
    assert first["correct"] and first["stats"]["stored"] == 1
    second = _probe(tmp_path, "gpu", kernel)
    assert second["correct"], second
    assert second["stats"] == {"loaded": 1, "stored": 0, "compiled": 0}
