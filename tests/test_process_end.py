"""A kernelscope process that used the GPU ends without interpreter teardown once its work is
written (kernelscope.process_end): the output is complete, the exit code the command's, and
nothing registered for teardown runs. Without the GPU, or with KERNELSCOPE_FULL_TEARDOWN=1,
the process exits the usual way. The GPU use is simulated: torch reports CUDA as started."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from kernelscope.process_end import exit_status

_TEARDOWN_MARK = "TEARDOWN-RAN"


def _run_program(argv: list[str], *, gpu_used: bool, full_teardown: bool = False,
                 entry: str = "cli") -> subprocess.CompletedProcess:
    """Run kernelscope's program entry in a child, with an atexit hook that prints a mark."""
    pretend = "import torch; torch.cuda.is_initialized = lambda: True" if gpu_used else ""
    if entry == "cli":
        call = f"import sys; sys.argv = ['kernelscope', *{argv!r}]\nfrom kernelscope.cli.main import main\nmain()"
    else:   # the process ncu profiles, given arguments it rejects before touching the GPU
        call = (f"import runpy, sys; sys.argv = ['worker', *{argv!r}]\n"
                "runpy.run_module('kernelscope.profiler.worker', run_name='__main__')")
    code = textwrap.dedent(f"""
        import atexit
        atexit.register(lambda: print("{_TEARDOWN_MARK}", flush=True))
        {pretend}
    """) + call
    env = dict(os.environ)
    env.pop("KERNELSCOPE_FULL_TEARDOWN", None)
    if full_teardown:
        env["KERNELSCOPE_FULL_TEARDOWN"] = "1"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def test_a_gpu_process_ends_with_its_output_and_code_and_no_teardown():
    r = _run_program(["rules", "list"], gpu_used=True)
    assert r.returncode == 0, r.stderr
    assert "dram" in r.stdout.lower() and len(r.stdout.splitlines()) > 10   # the whole listing, flushed
    assert _TEARDOWN_MARK not in r.stdout


def test_a_user_error_keeps_its_one_line_and_exit_code():
    r = _run_program(["show", "/nonexistent/report.ncu-rep"], gpu_used=True)
    assert r.returncode == 2
    assert r.stderr.strip().startswith("kernelscope: error:") and len(r.stderr.strip().splitlines()) == 1
    assert _TEARDOWN_MARK not in r.stdout


@pytest.mark.parametrize("gpu_used, full_teardown", [(False, False), (True, True)])
def test_otherwise_the_usual_exit_runs_teardown(gpu_used, full_teardown):
    r = _run_program(["rules", "list"], gpu_used=gpu_used, full_teardown=full_teardown)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().endswith(_TEARDOWN_MARK)


def test_a_call_from_python_is_never_ended():
    code = textwrap.dedent("""
        import torch; torch.cuda.is_initialized = lambda: True
        from kernelscope.cli.main import main
        try:
            main(["rules", "list"])
        except SystemExit as e:
            print("RETURNED", e.code)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "RETURNED 0" in r.stdout, r.stderr


def test_the_profiled_worker_keeps_its_exit_code():
    # Arguments argparse rejects (exit 2), then a user error (no GPU here, or no such kernel): exit 2.
    r = _run_program(["--no-such-flag"], gpu_used=True, entry="worker")
    assert r.returncode == 2 and "usage" in r.stderr
    done = _run_program(["--target", "no_such_kernel", "--shape", "{}", "--dtype", "bf16", "--config", "{}"],
                        gpu_used=True, entry="worker")
    assert done.returncode == 2 and "kernelscope worker:" in done.stderr     # a user error: EXIT_USER_ERROR
    assert _TEARDOWN_MARK not in done.stdout


def test_exit_status_follows_python():
    assert exit_status(None) == 0
    assert exit_status(3) == 3
    assert exit_status(256 + 4) == 4
    assert exit_status(True) == 1
