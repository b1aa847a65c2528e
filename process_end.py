"""How a kernelscope process that used the GPU ends once its work is written.

A process that used CUDA in-process (torch, CuTe DSL's runtime, CUPTI through
torch.profiler) tears all of it down at interpreter exit, in an order no library
coordinates. After the launch probe's torch.profiler sessions, `kernelscope run rmsnorm
--vs torch.rmsnorm` printed its whole result, wrote its JSON and then died in that teardown
(glibc "double free or corruption", exit 134 or 139) in 14 and 15 of 40 runs, 8 processes
at a time on an H100; 0 of 40 with the probe left out, and 10 of 40 with a CUDA call after
each profiler session (benchmarks/results/exit-teardown-h100.txt.xz). The work was done,
yet a CI job would read a failure. So the program entry points
(the `kernelscope` command, the process ncu profiles) end such a process with
os._exit once their outputs are flushed. The operating system reclaims what teardown
would have freed; nothing kernelscope writes is left to atexit or finalizers (files are
closed by the commands themselves). A library caller is never ended this way: only the
two entry points call `end_now`.

KERNELSCOPE_FULL_TEARDOWN=1 keeps the ordinary interpreter exit (to debug the teardown).
"""

from __future__ import annotations

import os
import sys

FULL_TEARDOWN_ENV = "KERNELSCOPE_FULL_TEARDOWN"


def gpu_used_in_process() -> bool:
    """Whether this process started CUDA through torch (every GPU path of kernelscope does)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:  # a half-imported or broken torch: nothing to skip
        return False


def exit_status(code: object) -> int:
    """The status SystemExit(code) would give the shell; a message is printed as Python does."""
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def end_now(code: object) -> None:
    """Leave the process with `code` without interpreter teardown, if the GPU was used and
    the user did not ask for the full teardown; otherwise return (the caller exits as usual)."""
    if os.environ.get(FULL_TEARDOWN_ENV) == "1" or not gpu_used_in_process():
        return
    status = exit_status(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed or broken pipe: nothing more can be written
            pass
    os._exit(status)
