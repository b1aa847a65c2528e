"""Run a CuTe DSL pair script of the diagnosis benchmark (benchmarks/diagnosis/cute_pairs*.py) in its
--compile-only mode and read what it prints: per kernel, the opcodes that carry its planted defect.
Shared by the tests of each set."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

OPCODE_LINE = re.compile(r"^(\w+): (\[.*\])$")
DIAGNOSIS = Path(__file__).resolve().parent.parent / "benchmarks" / "diagnosis"


def compiled_opcodes(script: str, workdir: Path) -> dict[str, dict[str, int]]:
    """`{<pair>_<side>: {opcode: count}}` from `script --compile-only` run in `workdir` (skips without
    the DSL or cuobjdump); asserts that the run leaves `workdir` empty (kept cubins go to a scratch
    folder, never into the directory the command runs in)."""
    pytest.importorskip("cutlass")
    from kernelscope.toolchain.tools import which_cuda_tool
    if which_cuda_tool("cuobjdump") is None:
        pytest.skip("cuobjdump is not available")
    done = subprocess.run([sys.executable, str(DIAGNOSIS / script), "--compile-only"], capture_output=True,
                          text=True, timeout=900, cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(workdir.iterdir()) == []
    found = {}
    for line in done.stdout.splitlines():
        # `<pair>_<side>: [(opcode, count), ...]`; a script may print other facts after them
        listed = OPCODE_LINE.match(line)
        if listed:
            found[listed.group(1)] = dict(ast.literal_eval(listed.group(2)))
    return found
