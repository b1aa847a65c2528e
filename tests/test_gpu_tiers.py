"""The GPU test tiers, checked by collection alone (no GPU): the fast tier (`-m gpu_fast`) tests
every registered kernel, moves every knob of each kernel's config space and runs the CLI end to
end; the `--gpu-part K/N` parts of the README split the full tier (`-m gpu`) with no test lost or
repeated."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_tiers

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()

_COLLECTED: dict[tuple[str, ...], list[dict]] = {}


# Collects in a process of its own and records what the checks need (gpu_tiers.RecordCollection).
_RECORD = """
import sys
sys.path.insert(0, sys.argv[1])
import pytest, gpu_tiers
sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", sys.argv[1], *sys.argv[3:]],
                     plugins=[gpu_tiers.RecordCollection(sys.argv[2])]))
"""


def collect(tmp_path_factory, *args: str) -> list[dict]:
    """What matters of every test collected under tests/ with `args` (once per args)."""
    if args not in _COLLECTED:
        out = tmp_path_factory.mktemp("collected") / "items.json"
        r = subprocess.run([sys.executable, "-c", _RECORD, str(ROOT / "tests"), str(out), *args],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        _COLLECTED[args] = [{**t, "markers": set(t["markers"]), "kernels": set(t["kernels"]),
                             "strings": set(t["strings"])} for t in json.loads(out.read_text())]
    return _COLLECTED[args]


def _readme_parts() -> int:
    """N of the README's `--gpu-part K/N` commands, which must name every part 1..N once."""
    found = [tuple(map(int, m)) for m in re.findall(r"--gpu-part (\d+)/(\d+)", README)]
    assert found, "README shows no --gpu-part command"
    counts = {n for _, n in found}
    assert len(counts) == 1, f"README deals the GPU tests into different part counts: {sorted(counts)}"
    n = counts.pop()
    assert sorted(k for k, _ in found) == list(range(1, n + 1)), found
    return n


@pytest.fixture
def gpu_tests(tmp_path_factory):
    tests = [t for t in collect(tmp_path_factory) if "gpu" in t["markers"]]
    assert len(tests) > 100     # the GPU test files were collected, not just this one
    return tests


def test_readme_shows_how_to_run_each_tier():
    assert "python3 -m pytest -q -m gpu_fast" in README
    assert _readme_parts() >= 2


def test_fast_tier_is_part_of_the_full_tier_and_holds_no_slow_test(tmp_path_factory, gpu_tests):
    everything = collect(tmp_path_factory)
    fast = [t for t in everything if "gpu_fast" in t["markers"]]
    assert fast
    not_gpu = [t["nodeid"] for t in fast if "gpu" not in t["markers"]]
    assert not not_gpu, f"fast-tier tests without the gpu marker (they would run without a GPU): {not_gpu}"
    slow = [t["nodeid"] for t in fast if "slow" in t["markers"]]
    assert not slow, f"slow tests in the fast tier: {slow}"
    assert len(fast) < len(gpu_tests) / 3


def test_every_test_of_a_gpu_file_is_in_the_full_tier(tmp_path_factory):
    outside = [t["nodeid"] for t in collect(tmp_path_factory)
               if t["nodeid"].split("::")[0].endswith("_gpu.py") and "gpu" not in t["markers"]]
    assert not outside, f"tests of GPU files without the gpu marker: {outside}"


def test_fast_tier_tests_every_kernel_and_moves_every_knob(gpu_tests):
    from kernelscope.kernels import registry

    fast = [t for t in gpu_tests if "gpu_fast" in t["markers"]]
    tested = set().union(*(t["kernels"] for t in fast))
    assert set(registry.names()) <= tested, f"kernels with no fast-tier test: {set(registry.names()) - tested}"
    for kernel in registry.names():
        space = set(registry.resolve(kernel).config_space)
        assert space, kernel
        moved = set().union(*(gpu_tiers.knobs_moved(kernel, t["config"]) for t in fast if kernel in t["kernels"]))
        assert space <= moved, f"{kernel}: no fast-tier test moves {sorted(space - moved)} off the default"


def test_fast_tier_runs_run_profile_and_diff_from_the_command_line(gpu_tests):
    fast = [t for t in gpu_tests if "gpu_fast" in t["markers"]]
    assert any({"-m", "kernelscope", "run", "profile", "diff"} <= t["strings"] for t in fast), \
        "no fast-tier test calls `python -m kernelscope` run, profile and diff"


def test_the_readme_parts_split_the_full_tier_exactly(tmp_path_factory, gpu_tests):
    n = _readme_parts()
    full = sorted(t["nodeid"] for t in gpu_tests)
    parts = [[t["nodeid"] for t in collect(tmp_path_factory, "--gpu-part", f"{k}/{n}")] for k in range(1, n + 1)]
    for k, part in enumerate(parts, 1):
        assert part, f"part {k}/{n} is empty"
        assert len(part) == len(set(part)), f"part {k}/{n} repeats a test"
    dealt = sorted(nodeid for part in parts for nodeid in part)
    assert dealt == full, (f"lost: {sorted(set(full) - set(dealt))[:5]}, "
                           f"repeated or extra: {[x for x in set(dealt) if dealt.count(x) > 1 or x not in full][:5]}")
    # Every part holds whole test functions and the deal is even in seconds to within the longest function.
    seconds = {t["nodeid"]: t["seconds"] for t in gpu_tests}
    longest = max(sum(s for x, s in seconds.items() if gpu_tiers.function_of(x) == f)
                  for f in map(gpu_tiers.function_of, full))
    loads = [sum(seconds[x] for x in p) for p in parts]
    assert max(loads) - min(loads) <= longest, loads
    owner = {gpu_tiers.function_of(x): k for k, part in enumerate(parts) for x in part}
    assert all(owner[gpu_tiers.function_of(x)] == k for k, part in enumerate(parts) for x in part)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_deal_partitions_any_list_into_whole_functions(n):
    nodeids = [f"tests/test_{f % 7}.py::test_{f}[{p}]" for f in range(23) for p in range(f % 5 + 1)]
    nodeids.append("tests/test_x.py::test_path[/abs/path/kernel.py:SPEC-torch]")
    parts = gpu_tiers.deal(nodeids, n)
    assert len(parts) == n
    assert sorted(x for p in parts for x in p) == sorted(nodeids)
    assert gpu_tiers.deal(list(reversed(nodeids)), n) != [] and \
        [sorted(p) for p in gpu_tiers.deal(list(reversed(nodeids)), n)] == [sorted(p) for p in parts]


def test_deal_weighs_tests_by_their_seconds():
    """Two long tests of one function go to one part and the many short ones to the other, where
    a deal by count would put the long function with half of the short ones."""
    long = [f"tests/test_a.py::test_long[{p}]" for p in range(4)]
    short = [f"tests/test_b.py::test_short_{f}" for f in range(12)]
    seconds = {x: 30.0 for x in long} | {x: 3.0 for x in short}
    parts = gpu_tiers.deal(long + short, 2, seconds)
    assert sorted(map(sorted, parts), key=len) == [sorted(long), sorted(short)]
    by_count = gpu_tiers.deal(long + short, 2)
    assert any(set(long) <= set(p) and len(p) > len(long) for p in by_count)


def test_unmarked_tests_weigh_seconds_per_test(gpu_tests):
    marked = [t for t in gpu_tests if "gpu_seconds" in t["markers"]]
    assert marked, "no GPU test carries a gpu_seconds marker"
    assert all(t["seconds"] == gpu_tiers.SECONDS_PER_TEST for t in gpu_tests if "gpu_seconds" not in t["markers"])
    assert all(t["seconds"] > gpu_tiers.SECONDS_PER_TEST for t in marked)


@pytest.mark.parametrize("bad", ["0/3", "4/3", "3", "a/b", "1/0"])
def test_a_bad_gpu_part_is_a_usage_error(bad):
    r = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "tests" / "test_gpu_tiers.py"), "-p",
                        "no:cacheprovider", "--collect-only", "--gpu-part", bad],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout[-2000:] + r.stderr[-2000:]
    assert "--gpu-part takes K/N" in r.stderr
