"""Planted cheats: rmsnorm targets whose timings lie, one way each (GPU tests use them).

Each is correct on its first call (so the check before timing passes) and cheats after:

- `rmsnorm_early_return`: later calls launch the kernel over the first row only, the way a
  kernel that returns early leaves the rest of its output unwritten;
- `rmsnorm_side_stream`: every call runs on a private stream the caller never waits for;
- `rmsnorm_patched_timer`: binding it replaces torch.cuda.Event.elapsed_time with one that
  reports a fiftieth of the time (call `restore_timer()` afterwards);
- `rmsnorm_cached`: later calls copy the result of the first call into the output instead
  of computing (a cache keyed on the output buffer).

Targets: `tests/timing_cheats.py:rmsnorm_side_stream` and so on, or the SPEC objects.
"""

from __future__ import annotations

import dataclasses

from kernelscope.kernels.rmsnorm import SPEC as RMSNORM

_COMPILED: dict = {}
_REAL_ELAPSED = None


def _compiled(config, shape, dtype, arch):
    key = (tuple(sorted(config.items())), shape["N"], dtype, arch)
    if key not in _COMPILED:
        _COMPILED[key] = RMSNORM.compile(config, shape, dtype, arch)
    return _COMPILED[key]


def _cheat(name: str, make_bind):
    def compile_(config, shape, dtype, arch):
        compiled = _compiled(config, shape, dtype, arch)
        bind = make_bind(compiled)
        return dataclasses.replace(compiled, bind=bind, launch=lambda inputs: (bind(inputs)(), inputs["out"])[1])

    return dataclasses.replace(RMSNORM, name=name, description=f"rmsnorm with a planted cheat ({name})",
                               compile=compile_)


def _early_return(compiled):
    def bind(inputs):
        full = compiled.bound(inputs)
        first_row = compiled.bound({"x": inputs["x"][:1], "w": inputs["w"], "out": inputs["out"][:1]})
        calls = [0]

        def run():
            calls[0] += 1
            return full() if calls[0] == 1 else first_row()

        return run
    return bind


def _side_stream(compiled):
    def bind(inputs):
        import torch

        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            run = compiled.bound(inputs)

        def on_side_stream():
            with torch.cuda.stream(side):
                return run()

        return on_side_stream
    return bind


def fast_elapsed_time(self, end_event):
    """The planted timer: a fiftieth of the real elapsed time."""
    return _REAL_ELAPSED(self, end_event) / 50.0


def restore_timer() -> None:
    global _REAL_ELAPSED
    if _REAL_ELAPSED is not None:
        import torch

        torch.cuda.Event.elapsed_time = _REAL_ELAPSED
        _REAL_ELAPSED = None


def _patched_timer(compiled):
    def bind(inputs):
        global _REAL_ELAPSED
        import torch

        if _REAL_ELAPSED is None:
            _REAL_ELAPSED = torch.cuda.Event.elapsed_time
            torch.cuda.Event.elapsed_time = fast_elapsed_time
        return compiled.bound(inputs)
    return bind


def _cached(compiled):
    def bind(inputs):
        run = compiled.bound(inputs)
        saved = []

        def cached():
            if not saved:
                result = run()
                saved.append(inputs["out"].clone())
                return result
            inputs["out"].copy_(saved[0])
            return inputs["out"]

        return cached
    return bind


def rmsnorm_early_return():
    return _cheat("rmsnorm_early_return", _early_return)


def rmsnorm_side_stream():
    return _cheat("rmsnorm_side_stream", _side_stream)


def rmsnorm_patched_timer():
    return _cheat("rmsnorm_patched_timer", _patched_timer)


def rmsnorm_cached():
    return _cheat("rmsnorm_cached", _cached)
