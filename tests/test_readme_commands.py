"""Every `kernelscope` command shown in README.md runs as written.

Commands that need a GPU (run, profile, sweep, a GPU baseline) are checked where one is
present and skipped elsewhere; the install and test commands are what CI itself runs.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
GPU_COMMANDS = ("run", "profile", "sweep")


def _commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    lines = [line.split(" #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line.startswith("kernelscope ")]


def _needs_gpu(argv: list[str]) -> bool:
    return argv[1] in GPU_COMMANDS or "suites/gpu.toml" in argv


COMMANDS = _commands()


def test_readme_shows_the_two_commands_a_newcomer_needs():
    assert 'pip install torch==2.13.0 && pip install -e ".[test]" && kernelscope demo' in README
    assert "python3 -m pytest -q" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m pytest -q" in ci and "torch==2.13.0" in ci
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command, tmp_path):
    argv = shlex.split(command)
    if _needs_gpu(argv):
        import torch

        if not torch.cuda.is_available():
            pytest.skip("needs a GPU")
    # Outputs the commands write (report.html, gate.md, plots/, ...) land in a scratch folder.
    for i, arg in enumerate(argv):
        if not (ROOT / arg).exists() and re.search(r"\.(html|md|xml|json|sarif)$|/$", arg) and i > 2:
            argv[i] = str(tmp_path / arg)
    proc = subprocess.run([sys.executable, "-m", "kernelscope", *argv[1:]], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "COLUMNS": "160"})
    assert proc.returncode == 0, f"{command}\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip() or any(tmp_path.iterdir()), command
