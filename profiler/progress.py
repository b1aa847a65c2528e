"""Saying that a slow step is running (a cold CuTe DSL compile takes 5-25 s).

On a terminal: a transient rich spinner with the elapsed time, gone when the step ends.
Piped output or CI (CI=true): one plain line on stderr when the step starts, so logs
show where the time went without control characters.
"""

from __future__ import annotations

import contextlib
import os
import sys


def interactive() -> bool:
    return sys.stderr.isatty() and os.environ.get("CI", "").lower() not in ("1", "true", "yes")


@contextlib.contextmanager
def slow_step(message: str):
    """`message` names the step, e.g. "compiling gemm for sm_90a"."""
    if not interactive():
        print(f"kernelscope: {message} ...", file=sys.stderr, flush=True)
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        progress.add_task(message, total=None)
        yield
