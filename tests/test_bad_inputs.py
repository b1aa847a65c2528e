"""The promise to a user who gets something wrong, over a corpus of bad inputs.

Every case runs one command on one bad input and asserts: the documented exit code (2 usage
or input, 3 environment, 130 Ctrl-C), exactly one line on stderr, no traceback anywhere,
and every file that existed before the command byte-for-byte the same after it.

Cases run in-process through click's CliRunner; only those that need a real process (a
signal, another user's permissions, two commands at once) start one.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kernelscope.cli.main import _register, cli

_register()

from bad_input_builders import PAIR, PYROOT, ROOT, XZ, Case, cuda_available
from bad_input_corpus import CORPUS
from terminal_signals import sigint_as_at_a_terminal


# ------------------------------------------------------------------------------ inputs

@pytest.fixture(scope="session")
def good(tmp_path_factory) -> dict[str, Any]:
    """Good inputs the cases break: a profile JSON (two kernels), a plain report, a baseline."""
    folder = tmp_path_factory.mktemp("good")
    plain = folder / PAIR
    with lzma.open(XZ) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    result = CliRunner().invoke(cli, ["show", str(plain), "--format", "json"])
    assert result.exit_code == 0, result.output
    return {"profile": json.loads(result.stdout), "report": plain.read_bytes(),
            "baseline": json.loads((ROOT / "baselines" / "static-sm90a.json").read_text())}


def _materialise(case: Case, folder: Path, good: dict) -> None:
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        value = content(good) if callable(content) else content
        if isinstance(value, str):
            path.write_text(value)
        else:
            path.write_bytes(value)


def _snapshot(paths: list[Path]) -> dict[str, str]:
    out = {}
    for root in paths:
        if root.is_file():
            out[str(root)] = hashlib.sha256(root.read_bytes()).hexdigest()
        elif root.is_dir():
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def check_promise(rc: int, expected_rc: int, stdout: str, stderr: str, says: str = "") -> None:
    assert "Traceback" not in stdout + stderr, stdout + stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"stderr must be one line, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("kernelscope: "), lines[0]
    assert rc == expected_rc, f"exit {rc}, expected {expected_rc}: {lines[0]}"
    if says:
        assert says.lower() in lines[0].lower(), f"{says!r} not in: {lines[0]}"


# Root reads and writes past file permissions through two capabilities; without them (and
# for any other user as is) permissions bite.
PERMISSIONS_BITE = os.geteuid() != 0 or shutil.which("setpriv") is not None
NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def _process_env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "120", "KERNELSCOPE_CACHE_DIR": str(tmp_path / ".." / f"{tmp_path.name}-cache"),
           **extra}
    if PYROOT:
        env["PYTHONPATH"] = PYROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _command(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "kernelscope", *argv]


def _run_process(case: Case, tmp_path: Path, env: dict[str, str]) -> tuple[int, str, str]:
    env = _process_env(tmp_path, env)
    if case.mode == "locked":
        for name, mode in case.chmod.items():
            os.chmod(tmp_path / name, mode)
        try:
            p = subprocess.run(NO_OVERRIDE + _command(case.argv), cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=300)
        finally:
            for name in case.chmod:
                os.chmod(tmp_path / name, 0o755 if (tmp_path / name).is_dir() else 0o644)
        return p.returncode, p.stdout, p.stderr
    if case.mode == "sigint":
        p = subprocess.Popen(_command(case.argv), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_at_a_terminal)
        deadline = time.monotonic() + 240
        while not (tmp_path / "ready").exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.poll() is None, f"the command ended before it was busy: {p.communicate()}"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        (tmp_path / "ready").unlink()
        return p.returncode, out, err
    if case.mode == "race":
        procs = [subprocess.Popen(_command(case.argv), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [(p, *p.communicate(timeout=300)) for p in procs]
        winners = [r for r in results if r[0].returncode == 0]
        losers = [r for r in results if r[0].returncode != 0]
        assert len(winners) == 1, [(p.returncode, err) for p, _, err in results]
        p, out, err = losers[0]
        return p.returncode, out, err
    raise AssertionError(f"unknown mode {case.mode}")


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_bad_input(case: Case, tmp_path, good, monkeypatch):
    if case.needs_no_gpu and cuda_available():
        pytest.skip("the case is about a machine without a GPU")
    if case.mode == "locked" and not PERMISSIONS_BITE:
        pytest.skip("running as root without setpriv: file permissions cannot bite")
    _materialise(case, tmp_path, good)
    monkeypatch.chdir(tmp_path)
    env = {k: v.replace("{T}", str(tmp_path)) for k, v in case.env.items()}
    inputs = [Path(a) for a in case.argv if os.path.isabs(a) and os.path.exists(a)]
    before = _snapshot([tmp_path, *inputs])
    if case.mode == "cli":
        result = CliRunner().invoke(cli, case.argv, env={"COLUMNS": "120", **env})
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"uncaught {type(result.exception).__name__}: {result.exception}") \
                from result.exception
        rc, stdout, stderr = result.exit_code, result.stdout, result.stderr
    else:
        rc, stdout, stderr = _run_process(case, tmp_path, env)
    check_promise(rc, case.rc, stdout, stderr, case.says)
    after = _snapshot([tmp_path, *inputs])
    changed = [p for p in before if after.get(p) != before[p]]
    assert not changed, f"files changed or removed: {changed}"
    for name in case.absent:
        assert not (tmp_path / name).exists(), f"{name} was written"
    leftovers = [p for p in after if p not in before and Path(p).name.startswith(".")]
    assert not leftovers, f"temporary files left behind: {leftovers}"


def test_corpus_is_large_and_covers_every_command():
    assert len(CORPUS) >= 120
    ids = [c.id for c in CORPUS]
    assert len(ids) == len(set(ids))
    commands = {c.argv[0] for c in CORPUS}
    assert {"show", "diff", "views", "rules", "inspect", "run", "profile", "sweep", "gate", "baseline", "report",
            "demo"} <= commands
    assert {"cli", "locked", "sigint", "race"} == {c.mode for c in CORPUS}
