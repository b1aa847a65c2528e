"""Guards around a timed loop: the timer is torch's own, and no L2 line persists.

Timer: the code under test runs in our process and can replace `torch.cuda.Event`,
its `record` / `elapsed_time`, or `torch.cuda.synchronize`. The timing loop never calls
those Python-level names: it records and reads events through the C base class, which
Python code cannot patch. This module also reports every replacement it finds, before
and after the timed loop, naming the module that made it: a target that touches the
timer is not trusted even though its numbers were taken with the real one.

Persisting L2: a kernel (or its launcher) may set an access-policy window that marks its
inputs "persisting"; such lines survive the flush that precedes every sample. Before the
loop the persisting carve-out is set to 0 bytes and persisting lines are reset (driver
API, through ctypes: no extra dependency); before each sample they are reset again; after
the loop the carve-out the target may have raised is reported and the previous one restored.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from kernelscope.profiler import timing_checks as tc

_CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


# ----------------------------------------------------------------------------- timer

def _primitives(torch) -> dict[str, Any]:
    """The Python-level names a patched timer would replace, as currently bound."""
    event = torch.cuda.Event
    return {
        "torch.cuda.Event": event,
        "torch.cuda.Event.record": getattr(event, "record", None),
        "torch.cuda.Event.elapsed_time": getattr(event, "elapsed_time", None),
        "torch.cuda.Event.synchronize": getattr(event, "synchronize", None),
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.streams.Event": torch.cuda.streams.Event,
    }


def _origin(obj: Any) -> str | None:
    """The source file defining obj (functions and classes); None for C objects."""
    code = getattr(obj, "__code__", None)
    if code is not None:
        return code.co_filename
    func = getattr(obj, "__func__", None)
    if func is not None and getattr(func, "__code__", None) is not None:
        return func.__code__.co_filename
    module = getattr(obj, "__module__", None)
    if isinstance(obj, type) and module:
        import sys

        mod = sys.modules.get(module)
        return getattr(mod, "__file__", None)
    return None


def _owner(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or "?"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    return f"{module}.{name}"


class TimerGuard:
    """Snapshot of the timer primitives; `check()` names those not torch's own or changed."""

    def __init__(self, torch) -> None:
        self.torch = torch
        self.torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
        self.before = _primitives(torch)

    def foreign(self, prims: dict[str, Any]) -> list[str]:
        out = []
        for name, obj in prims.items():
            origin = _origin(obj)
            if origin is not None and not os.path.abspath(origin).startswith(self.torch_dir):
                out.append(f"{name} is {_owner(obj)} ({os.path.basename(origin)})")
        return out

    def check(self) -> tc.Check:
        now = _primitives(self.torch)
        problems = self.foreign(now)
        for name, obj in now.items():
            if obj is not self.before.get(name) and not any(p.startswith(name + " ") for p in problems):
                problems.append(f"{name} was replaced during timing by {_owner(obj)}")
        if problems:
            return tc.failed(tc.TIMER, "timer replaced: " + "; ".join(problems)
                             + " (the samples were taken with torch's C event methods)")
        return tc.passed(tc.TIMER, "torch.cuda.Event, its record/elapsed_time and torch.cuda.synchronize are torch's own")


def event_pair(torch):
    """Two timing events made by torch's own class (not the possibly patched re-export)."""
    cls = torch.cuda.streams.Event
    return cls(enable_timing=True), cls(enable_timing=True)


def record(torch, event, stream) -> None:
    torch._C._CudaEventBase.record(event, stream)


def wait(torch, event) -> None:
    torch._C._CudaEventBase.synchronize(event)


def elapsed_ms(torch, start, end) -> float:
    return float(torch._C._CudaEventBase.elapsed_time(start, end))


def completed(torch, event) -> bool:
    return bool(torch._C._CudaEventBase.query(event))


# ----------------------------------------------------------------------------- persisting L2

class PersistingL2:
    """Carve-out to 0 and persisting lines reset around a timed loop (a no-op where the
    driver library or the limit is unavailable; `check()` then says it did not run)."""

    def __init__(self) -> None:
        self.lib = None
        self.previous: int | None = None
        self.raised_to: int | None = None
        self.resets = 0
        self.error: str | None = None
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            self.error = f"libcuda not loadable: {e}"

    def _limit(self) -> int | None:
        value = ctypes.c_size_t(0)
        rc = self.lib.cuCtxGetLimit(ctypes.byref(value), _CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
        return int(value.value) if rc == 0 else None

    def begin(self) -> None:
        if self.lib is None:
            return
        self.previous = self._limit()
        if self.previous is None:
            self.error, self.lib = "cuCtxGetLimit(PERSISTING_L2_CACHE_SIZE) failed", None
            return
        rc = self.lib.cuCtxSetLimit(_CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
        if rc != 0:
            self.error, self.lib = f"cuCtxSetLimit(PERSISTING_L2_CACHE_SIZE, 0) returned {rc}", None
            return
        self._reset()

    def _reset(self) -> bool:
        if self.lib is None:
            return False
        rc = self.lib.cuCtxResetPersistingL2Cache()
        if rc != 0:
            self.error, self.lib = f"cuCtxResetPersistingL2Cache returned {rc}", None
            return False
        return True

    def reset(self) -> None:
        """Before one sample."""
        if self._reset():
            self.resets += 1

    def end(self) -> None:
        if self.lib is None:
            return
        now = self._limit()
        if now:
            self.raised_to = now
        self._reset()
        if self.previous is not None and self.lib is not None:
            self.lib.cuCtxSetLimit(_CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(self.previous))

    def check(self) -> tc.Check:
        if self.error is not None and self.resets == 0:
            return tc.skipped(tc.PERSISTING_L2, self.error)
        if self.raised_to:
            return tc.failed(tc.PERSISTING_L2, f"the target raised the persisting-L2 carve-out to {self.raised_to} bytes "
                                               "during timing (lines were reset before each sample)")
        detail = f"carve-out 0 bytes, persisting lines reset before each of {self.resets} samples"
        if self.error:
            detail += f" (then: {self.error})"
        return tc.passed(tc.PERSISTING_L2, detail)
