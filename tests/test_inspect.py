"""`kernelscope inspect` end to end, in a subprocess as a user runs it (no GPU needed).

The register and shared-memory numbers are checked against cuobjdump run here, on the
cubin that `--save-sass` wrote, independently of kernelscope's own reading of it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.toolchain.tools import find_cuda_tool

EXAMPLE_SOURCE = Path(__file__).parent / "examples" / "smem_reverse.py"

# `kernelscope inspect` in a process where compiling fails: a request served from the cache
# succeeds, one that would compile does not. How fast a cached inspect is:
# benchmarks/bench_inspect_cached.py.
CACHE_ONLY_INSPECT = """
import sys
from kernelscope.profiler import dsl_compile, static

def refuse_to_compile(*args, **kwargs):
    raise AssertionError("inspect compiled in a process that serves only cached requests")

static.compile_artifacts = dsl_compile.compile_artifacts = refuse_to_compile
from kernelscope.cli.main import main
try:
    main(["inspect", *sys.argv[1:]])
finally:
    print(f"cutlass imported: {'cutlass' in sys.modules}", file=sys.stderr)
"""


def error_lines(stderr: str) -> list[str]:
    """stderr without the progress line a cold compile prints when stderr is not a terminal."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("kernelscope: compiling ")]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kernelscope-cache")


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    """The example kernel in a folder of its own: the cache key hashes a file's neighbours
    too, and tests/examples may change while the suite runs."""
    path = tmp_path_factory.mktemp("example") / "smem_reverse.py"
    path.write_text(EXAMPLE_SOURCE.read_text())
    return path


@pytest.fixture(scope="module")
def target(example) -> str:
    return f"{example}:SPEC"


def run_cli(args, cache_dir: Path, cwd: Path | None = None, cache_only: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, KERNELSCOPE_CACHE_DIR=str(cache_dir))
    env.pop("CUTE_DSL_DUMP_DIR", None)
    command = ["-c", CACHE_ONLY_INSPECT] if cache_only else ["-m", "kernelscope", "inspect"]
    return subprocess.run([sys.executable, *command, *args], capture_output=True, text=True, env=env, cwd=cwd)


def json_of(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def metrics_of(doc: dict, index: int = 0) -> dict:
    return {k: v["value"] for k, v in doc["kernels"][index]["profile"]["metrics"].items()}


def cuobjdump_resources(cubin: Path) -> dict[str, int]:
    out = subprocess.run([find_cuda_tool("cuobjdump"), "--dump-resource-usage", str(cubin)],
                         capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if "REG:" in l)
    return {k: int(v) for k, v in re.findall(r"(REG|STACK|SHARED|LOCAL):(\d+)", line)}


@pytest.fixture(scope="module")
def first_and_cached(cache_dir, target, tmp_path_factory):
    """The same request twice: a compile, then one in a process that cannot compile."""
    sass_dir = tmp_path_factory.mktemp("sass")
    work = tmp_path_factory.mktemp("cwd")
    first = run_cli([target, "--format", "json", "--save-sass", str(sass_dir)], cache_dir, cwd=work)
    second = run_cli([target, "--format", "json"], cache_dir, cwd=work, cache_only=True)
    return json_of(first), json_of(second), second.stderr, sass_dir, work


def test_inspect_reports_the_compiled_kernel(first_and_cached):
    doc, _, _, _, _ = first_and_cached
    assert doc["schema"] == "kernelscope.show"
    assert doc["inspect"]["from_cache"] is False
    assert doc["inspect"]["config"] == {"threads": 128, "scratch": 0}
    (kernel,) = doc["kernels"]
    profile = kernel["profile"]
    assert profile["kind"] == "static" and profile["session"]["tool"] == "static"
    assert profile["block"] == [128, 1, 1] and profile["grid"] == [8192 // 128, 1, 1]
    m = metrics_of(doc)
    assert m["launch__block_size"] == 128
    assert m["launch__grid_size"] == 64
    assert m["launch__shared_mem_per_block_dynamic"] == 128 * 4
    assert m["launch__barrier_count"] == 1
    assert m["static__spill_store_bytes"] == 0 and m["static__stack_frame_bytes"] == 0
    mix = profile["instruction_mix"]
    assert mix["STS"] >= 1 and mix["LDS"] >= 1 and mix["BAR"] >= 1
    assert m["static__sass_instructions"] == sum(mix.values())
    assert doc["inspect"]["expected_sass_missing"] == []


def test_numbers_match_cuobjdump_on_the_same_cubin(first_and_cached):
    doc, _, _, sass_dir, _ = first_and_cached
    (cubin,) = sass_dir.glob("*.cubin")
    reference = cuobjdump_resources(cubin)
    m = metrics_of(doc)
    assert m["launch__registers_per_thread"] == reference["REG"]
    assert m["launch__shared_mem_per_block_static"] == reference["SHARED"]
    assert m["static__stack_frame_bytes"] == reference["STACK"]
    assert m["static__local_memory_bytes"] == reference["LOCAL"]
    (listing,) = sass_dir.glob("*.sass")
    text = listing.read_text()
    assert "STS" in text and "BAR.SYNC" in text


def test_second_inspect_comes_from_the_cache_without_compiling(first_and_cached):
    first, second, second_stderr, _, _ = first_and_cached
    assert second["inspect"]["from_cache"] is True
    # Not even the DSL is loaded: the key is computed from source files alone.
    assert "cutlass imported: False" in second_stderr
    assert metrics_of(second) == metrics_of(first)
    assert second["kernels"][0]["profile"]["instruction_mix"] == first["kernels"][0]["profile"]["instruction_mix"]


def test_a_request_not_in_the_cache_would_compile(cache_dir, target):
    """The cache-only process above does fail when asked for something it must compile."""
    result = run_cli([target, "--config", "threads=32", "--format", "json"], cache_dir, cache_only=True)
    assert result.returncode != 0
    assert "inspect compiled in a process that serves only cached requests" in result.stderr


def test_compile_leaves_nothing_in_the_working_directory(first_and_cached):
    *_, work = first_and_cached
    assert list(work.iterdir()) == []


def test_local_memory_array_shows_as_stack_and_local_traffic(cache_dir, target, tmp_path):
    result = run_cli([target, "--config", "scratch=256", "--format", "json", "--save-sass", str(tmp_path)], cache_dir)
    m = metrics_of(json_of(result))
    reference = cuobjdump_resources(next(tmp_path.glob("*.cubin")))
    assert m["static__stack_frame_bytes"] == reference["STACK"] > 0
    # Every element of the array is stored once (vectorised stores), so at least its size.
    assert m["static__spill_store_bytes"] >= 256 * 4
    assert m["static__spill_load_bytes"] >= 4


def test_vs_config_diffs_two_compiles(cache_dir, target):
    result = run_cli([target, "--config", "threads=64", "--vs-config", "threads=256", "--format", "json"], cache_dir)
    doc = json_of(result)
    assert doc["a"]["config"]["threads"] == 64 and doc["b"]["config"]["threads"] == 256
    (comparison,) = doc["comparisons"]
    launch = {m["id"]: m for m in comparison["views"]["launch"]["metrics"]}
    assert (launch["block_size"]["a"], launch["block_size"]["b"]) == (64, 256)
    assert (launch["shared_mem_dynamic"]["a"], launch["shared_mem_dynamic"]["b"]) == (64 * 4, 256 * 4)
    table = run_cli([target, "--config", "threads=64", "--vs-config", "threads=256"], cache_dir)
    assert table.returncode == 0, table.stderr
    assert "Dynamic shared memory" in table.stdout


def test_missing_expected_opcode_fails_with_one_line(cache_dir, example):
    result = run_cli([f"{example}:SPEC_EXPECTING_HGMMA"], cache_dir)
    assert result.returncode == 1
    assert "HGMMA" in result.stdout                      # marked in the table
    (line,) = error_lines(result.stderr)
    assert "expected opcodes missing" in line and "HGMMA" in line and "STS" not in line.split(":")[-1]


def test_json_output_is_a_profile_file_show_reads(cache_dir, target, tmp_path):
    path = tmp_path / "static.json"
    path.write_text(run_cli([target, "--format", "json"], cache_dir).stdout)
    env = dict(os.environ, KERNELSCOPE_CACHE_DIR=str(cache_dir))
    shown = subprocess.run([sys.executable, "-m", "kernelscope", "show", str(path), "--view", "static"],
                           capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "Stack frame" in shown.stdout


def test_consumer_blackwell_build(cache_dir, target, tmp_path):
    result = run_cli([target, "--arch", "sm_120a", "--format", "json", "--save-sass", str(tmp_path)], cache_dir)
    doc = json_of(result)
    assert doc["kernels"][0]["profile"]["device"]["compute_capability"] == "12.0"
    elf = subprocess.run([find_cuda_tool("cuobjdump"), "--dump-elf", str(next(tmp_path.glob("*.cubin")))],
                         capture_output=True, text=True, check=True).stdout
    assert "sm=120a" in elf
    assert metrics_of(doc)["launch__barrier_count"] == 1


@pytest.mark.parametrize("args, message", [
    (["--config", "tile=3"], "unknown config key tile"),
    (["--config", "threads=100"], "threads=100 must be a multiple of 32"),
    (["--shape", "K=4"], "unknown shape dimension K"),
    (["--dtype", "bfloat16"], "supports dtype float32"),
])
def test_user_errors_are_one_line(cache_dir, target, args, message):
    result = run_cli([target, *args], cache_dir)
    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert line.startswith("kernelscope: error:") and message in line


def test_unknown_target_and_unclaimed_arch(cache_dir, example):
    result = run_cli(["no_such_kernel"], cache_dir)
    assert result.returncode == 2 and "unknown target" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli([f"{example}:SPEC_EXPECTING_HGMMA", "--arch", "sm_120a"], cache_dir)
    assert result.returncode == 2 and "does not build for sm_120a" in result.stderr


def test_kernel_compile_error_is_one_line_with_its_source_location(cache_dir, tmp_path):
    source = EXAMPLE_SOURCE.read_text()
    broken = source.replace("gY[i] = stage[threads - 1 - tidx]", "gY[i] = stage[threads - 1 - tidx] + no_such_name")
    assert broken != source
    path = tmp_path / "broken_kernel.py"
    path.write_text(broken)
    result = run_cli([f"{path}:SPEC"], cache_dir)
    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert "compile failed for sm_90a" in line and "no_such_name" in line
    assert f"{path}:" in line and "\x1b[" not in line


def test_cached_result_reads_like_a_fresh_one(first_and_cached):
    first, second, *_ = first_and_cached
    assert second["source"] == first["source"]
    assert list(second["inspect"]["config"]) == list(first["inspect"]["config"])


def test_a_compile_memoised_in_process_is_inspected_but_not_cached(tmp_path, monkeypatch):
    """A kernel that hands back a compile it made earlier in this process gives no launch
    facts (the DSL did not run); such a result must not be stored for later inspects."""
    import importlib.util
    import functools

    from kernelscope.profiler import dsl_compile, static

    monkeypatch.setenv("KERNELSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    module_spec = importlib.util.spec_from_file_location("smem_reverse_memo", EXAMPLE_SOURCE)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    memo = functools.lru_cache(maxsize=None)(
        lambda threads, scratch, n, dtype, arch: module._compile({"threads": threads, "scratch": scratch}, {"N": n}, dtype, arch))
    kernel = module.SPEC
    kernel.compile = lambda config, shape, dtype, arch: memo(config["threads"], config["scratch"], shape["N"], dtype, arch)

    first = dsl_compile.compile_artifacts(kernel, {"threads": 128, "scratch": 0}, {"N": 8192}, "float32", "sm_90a")
    again = dsl_compile.compile_artifacts(kernel, {"threads": 128, "scratch": 0}, {"N": 8192}, "float32", "sm_90a")
    assert first.observed_compile and first.launches
    assert not again.observed_compile and not again.launches and again.cubin == first.cubin

    # Through inspect_target: the unobserved compile is inspected, and nothing reaches the cache.
    monkeypatch.setattr(static, "compile_artifacts", lambda *a, **k: again)
    inspection = static.inspect_target(str(EXAMPLE_SOURCE) + ":SPEC")
    assert inspection.profiles and not inspection.from_cache
    assert not any((tmp_path / "cache").rglob("entry.json"))
    # A compile the DSL was seen to run is stored as usual.
    monkeypatch.setattr(static, "compile_artifacts", lambda *a, **k: first)
    static.inspect_target(str(EXAMPLE_SOURCE) + ":SPEC")
    assert len(list((tmp_path / "cache").rglob("entry.json"))) == 1


def test_a_process_that_imported_cutlass_first_still_keeps_cubins_out_of_its_folder(tmp_path):
    """The DSL reads its dump folder once, at import: a notebook that imported cutlass before
    calling ks.inspect used to get the user kernel's kept cubin in its working directory."""
    import subprocess
    import sys

    work = tmp_path / "work"
    work.mkdir()
    code = ("import os; os.environ.setdefault('CUTE_DSL_ARCH', 'sm_90a'); import cutlass; import kernelscope as ks; "
            f"r = ks.inspect({str(EXAMPLE_SOURCE) + ':SPEC'!r}, use_cache=False); print(r.target)")
    env = {**os.environ, "KERNELSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("CUTE_DSL_DUMP_DIR", None)
    r = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1].endswith("smem_reverse.py:SPEC")
    assert sorted(p.name for p in work.iterdir()) == []


def test_loops_are_listed_in_the_table_and_the_json(cache_dir, target):
    table = run_cli([target, "--loops"], cache_dir)
    assert table.returncode == 0, table.stderr
    assert "loops of the SASS" in table.stdout or "no loop in the SASS" in table.stdout
    doc = json_of(run_cli([target, "--loops", "--format", "json"], cache_dir))
    (entry,) = doc["loops"]
    assert entry["index"] == 0 and isinstance(entry["loops"], list)
    for loop in entry["loops"]:
        assert loop["start"] < loop["end"] and loop["instructions"] == sum(loop["opcodes"].values())


def test_loops_and_lines_together_are_refused_in_one_line(cache_dir, target):
    result = run_cli([target, "--loops", "--lines"], cache_dir)
    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert "--loops and --lines" in line
