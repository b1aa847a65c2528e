"""The bad-input corpus's building blocks: where the good inputs live, file builders that break
them, and the Case record (tests/test_bad_inputs.py runs the cases, tests/bad_input_corpus.py
lists them)."""

from __future__ import annotations

import copy
import json
import lzma
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
PAIR = "h200-gemm-vs-cublas-2048.quick.ncu-rep"      # a real two-kernel report with its sidecar
XZ = str(FIX / f"{PAIR}.xz")
PYROOT = str(ROOT / ".pyroot") if (ROOT / ".pyroot").is_dir() else None


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()



def _mutated(good: str, mutate: Callable[[dict], Any]) -> Callable[[dict], str]:
    """A file builder: the JSON of the good `good` document ("profile" or "baseline") after `mutate`."""
    def build(g):
        doc = copy.deepcopy(g[good])
        mutate(doc)
        return json.dumps(doc)
    return build


def _profile(mutate: Callable[[dict], Any]) -> Callable[[dict], str]:
    return _mutated("profile", mutate)


def _baseline(mutate: Callable[[dict], Any]) -> Callable[[dict], str]:
    return _mutated("baseline", mutate)


def _parent(doc, path: str):
    """(the node holding the field at `path`, e.g. 'kernels/0/profile/metrics', and the field's key)."""
    *parents, last = path.split("/")
    node = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node, int(last) if isinstance(node, list) else last


def _set(path: str, value) -> Callable[[dict], None]:
    """doc -> doc with the field at `path` replaced."""
    def mutate(doc):
        node, key = _parent(doc, path)
        node[key] = value
    return mutate


def _drop(path: str) -> Callable[[dict], None]:
    def mutate(doc):
        node, key = _parent(doc, path)
        del node[key]
    return mutate


def _report(g) -> bytes:
    return g["report"]


def _truncated(g) -> bytes:
    return g["report"][: len(g["report"]) // 2]


def _corrupt(g) -> bytes:
    raw = bytearray(g["report"])
    raw[200:4000] = b"\xff" * 3800
    return bytes(raw)


def _xz(data: Callable[[dict], bytes]) -> Callable[[dict], bytes]:
    return lambda g: lzma.compress(data(g))


P0 = "kernels/0/profile"
GRID_METRIC = "launch__grid_size"
TIME_METRIC = "gpu__time_duration.sum"
RULE = '''[[rule]]
id = "my-rule"
title = "Mine"
severity = "info"
compares = "reference"
condition = "{target:gpu__time_duration.sum} > 0"
message = "m"
hint = "h"
section = "s"
'''
SUITE_HEAD = '[suite]\nname = "s"\nstatic_only = true\n'


# A user kernel file that is busy for a long time once it has said so: Ctrl-C lands inside it.
SLOW_KERNEL_FILE = """
import pathlib, time
pathlib.Path("ready").write_text("importing")
time.sleep(600)
"""

# ------------------------------------------------------------------------------ the corpus

@dataclass
class Case:
    id: str
    argv: list[str]
    rc: int
    files: dict[str, Any] = field(default_factory=dict)   # name -> str | bytes | builder(good)
    env: dict[str, str] = field(default_factory=dict)
    says: str = ""                 # a word the one line must hold (what was wrong)
    needs_no_gpu: bool = False     # the expected outcome is "no GPU here" (skipped on a GPU machine)
    chmod: dict[str, int] = field(default_factory=dict)
    absent: tuple[str, ...] = ()   # files that must not exist afterwards
    # "cli": in-process; "locked": a process for which file permissions bite (as root, without
    # the capability to override them); "sigint": Ctrl-C once the command is busy; "race": two
    # copies of the command at once.
    mode: str = "cli"


def R(id, name: str, content, says: str) -> Case:
    """`report` of one document that is not what it should be: refused, and no page written."""
    return C(id, f"report {name} -o page.html", files={name: content}, says=says, absent=("page.html",))


def C(id, command: str, rc=2, **kw) -> Case:
    """A case: `command` is the kernelscope command line, split as a shell would (quotes group)."""
    return Case(id, shlex.split(command), rc, **kw)
