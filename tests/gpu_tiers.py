"""The GPU test tiers, as collected items: the full tier is every test marked `gpu`, dealt into
`--gpu-part K/N` parts; the fast tier is the tests also marked `gpu_fast`.

Parts are dealt by test function (all parametrizations of one function land in one part, so
they share the kernels one process compiles), the longest function first to the part with the
fewest seconds so far. A test's seconds are its `gpu_seconds(s)` marker where it has one (tests
far slower than the rest, timed on an H200), else SECONDS_PER_TEST. The deal depends only on the
node ids and those markers, never on the machine: parametrizations that embed an absolute path
fall under the function they belong to.

Which kernels and knobs a test exercises is read from the test itself: the registered kernel
packages its module imports, and the `config` it is parametrized with.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
import types
from collections.abc import Mapping, Sequence

PART = re.compile(r"^(\d+)/(\d+)$")

# The mean of a GPU test without a `gpu_seconds` marker: parts 1-3 of the full tier at 213 tests
# took 190.5, 190.2 and 153.1 s for 54, 53 and 53 tests on an H200 with a cold compile cache
# (benchmarks/results/gpu-tiers-h200.txt.xz).
SECONDS_PER_TEST = 3.5


def parse_part(text: str) -> tuple[int, int]:
    """"K/N" -> (K, N) with 1 <= K <= N; ValueError otherwise."""
    m = PART.match(text.strip())
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--gpu-part takes K/N with 1 <= K <= N (e.g. 2/3), got {text!r}")
    return int(m.group(1)), int(m.group(2))


def function_of(nodeid: str) -> str:
    """tests/test_x.py::test_f[param] -> tests/test_x.py::test_f"""
    return nodeid.split("[", 1)[0]


def seconds_of(item) -> float:
    """A collected test's expected seconds: its `gpu_seconds(s)` marker, else SECONDS_PER_TEST."""
    marker = item.get_closest_marker("gpu_seconds")
    return float(marker.args[0]) if marker is not None else SECONDS_PER_TEST


def deal(nodeids: Sequence[str], parts: int, seconds: Mapping[str, float] | None = None) -> list[list[str]]:
    """The node ids split into `parts` lists: whole test functions, the longest first (its tests'
    `seconds`, SECONDS_PER_TEST each where not given), each to the part with the fewest seconds
    so far (ties: the lower part, the earlier name)."""
    seconds = seconds or {}
    groups: dict[str, list[str]] = {}
    for nodeid in nodeids:
        groups.setdefault(function_of(nodeid), []).append(nodeid)
    length = {g: sum(seconds.get(x, SECONDS_PER_TEST) for x in ids) for g, ids in groups.items()}
    dealt: list[list[str]] = [[] for _ in range(parts)]
    load = [0.0] * parts
    for name in sorted(groups, key=lambda g: (-length[g], g)):
        lightest = min(range(parts), key=lambda i: (load[i], i))
        dealt[lightest] += groups[name]
        load[lightest] += length[name]
    return dealt


def kernels_imported(module: types.ModuleType | None) -> set[str]:
    """Registered kernels whose package the test module imports at top level."""
    from kernelscope.kernels import registry

    packages = {registry.REGISTERED[name].split(":", 1)[0]: name for name in registry.names()}
    return {packages[v.__name__] for v in vars(module or types.ModuleType("none")).values()
            if isinstance(v, types.ModuleType) and v.__name__ in packages}


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def knobs_moved(kernel: str, config: Mapping) -> set[str]:
    """Keys of the kernel's config space that `config` sets to something other than the default."""
    from kernelscope.kernels import registry

    spec = registry.resolve(kernel)
    return {k for k, v in config.items()
            if k in spec.config_space and _plain(v) != _plain(spec.default_config.get(k))}


def item_config(item) -> Mapping | None:
    callspec = getattr(item, "callspec", None)
    config = callspec.params.get("config") if callspec is not None else None
    return config if isinstance(config, Mapping) else None


def strings_in(function) -> set[str]:
    """The string constants in a test function's source (what it passes on a command line)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return set()
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def item_record(item) -> dict:
    """What the tier checks need of one collected test, as JSON values."""
    return {
        "nodeid": item.nodeid,
        "markers": sorted({m.name for m in item.iter_markers()}),
        "seconds": seconds_of(item),
        "kernels": sorted(kernels_imported(getattr(item, "module", None))),
        "config": {k: _plain(v) for k, v in (item_config(item) or {}).items()},
        "strings": sorted(strings_in(getattr(item, "function", None))),
    }


class RecordCollection:
    """pytest plugin: after collection, writes item_record of every collected test to `path`
    (a JSON list). The collection runs in a process of its own: it imports every test module, and
    with them native modules (torch, the DSL) that cannot be imported twice in one process."""

    def __init__(self, path: str):
        self.path = path

    def pytest_collection_finish(self, session):
        with open(self.path, "w") as f:
            json.dump([item_record(i) for i in session.items], f)
