"""What the CuTe DSL pair scripts (cute_pairs.py, cute_pairs_set2.py, cute_pairs_set3.py) share: compiling a kernel for
its SASS opcodes without a GPU, and on the GPU checking each pair's outputs against each other, then
timing both kernels or launching each once in an NVTX range for ncu.

A pair is a `Pair`: its name, the slow and fast @cute.jit functions, how to make its input and an
output buffer for it (torch on the GPU, fake tensors for a compile), the extra Int32 launch arguments
and the relative tolerance of the check (0: bitwise).
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import cutlass
import cutlass.cute as cute


@dataclass(frozen=True)
class Pair:
    name: str
    slow: Callable
    fast: Callable
    make_input: Callable[[Any, Any], Any]        # (torch, generator) -> input tensor on the GPU
    make_output: Callable[[Any, Any], Any]       # (torch, input) -> output tensor filled with NaN
    fake_args: Callable[[], list]                # fake input and output tensors, for a compile
    extra: Sequence[int] = ()
    rtol: float = 0.0


def read_compiled(fn: Callable, args: list, read: Callable[[str], Any]) -> Any:
    """Compile `fn` for the arch in CUTE_DSL_ARCH to a cubin in a scratch folder and return
    `read(cubin path)`."""
    # --dump-dir: the DSL otherwise writes each kept cubin into the working directory.
    with tempfile.TemporaryDirectory(prefix="kernelscope-cute-pairs-") as scratch:
        compiled = cute.compile(fn, *args, options=f"--keep-cubin --dump-dir={scratch}")
        cubin = os.path.join(scratch, "listed.cubin")
        with open(cubin, "wb") as f:
            f.write(compiled.__cubin__)
        return read(cubin)


def listed_opcodes(listings: dict[str, str], shown: Sequence[str]) -> dict[str, int]:
    """The SASS opcodes of `listings` (function -> SASS text) whose base is in `shown`, counted."""
    from kernelscope.toolchain.sass import sass_opcodes

    ops = Counter(op for listing in listings.values() for op in sass_opcodes(listing))
    return {op: n for op, n in ops.items() if op.split(".")[0] in shown}


def compile_only(pairs: Sequence[Pair], shown: Sequence[str],
                 facts: Callable[[Pair, str, str], str] | None = None) -> int:
    """Print each kernel's defect-carrying opcodes as `<pair>_<side>: [(opcode, count), ...]`; then,
    given `facts(pair, side, cubin path) -> text`, a line `<pair>_<side>: text` each, read from the
    same compile."""
    from kernelscope.toolchain.sass import dump_sass

    fact_lines = []
    for pair in pairs:
        for side, fn in (("slow", pair.slow), ("fast", pair.fast)):
            args = pair.fake_args() + [cutlass.Int32(e) for e in pair.extra]
            ops, fact = read_compiled(fn, args, lambda cubin: (listed_opcodes(dump_sass(cubin), shown),
                                                               facts(pair, side, cubin) if facts else None))
            print(f"{pair.name}_{side}: {sorted(ops.items())}")
            if fact is not None:
                fact_lines.append(f"{pair.name}_{side}: {fact}")
    for line in fact_lines:
        print(line)
    return 0


def run_on_gpu(pairs: Sequence[Pair], nvtx_prefix: str, profile: bool) -> int:
    """Check every pair; then time both kernels (median of 20 launches after 3, CUDA events), or with
    `profile` launch each once in NVTX range `<nvtx_prefix>:<pair>_<side>` between
    cudaProfilerStart/Stop. Exit status 1 if any pair's outputs disagree."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    failed = 0
    launches = []
    for pair in pairs:
        g = torch.Generator(device="cpu").manual_seed(len(pair.name))
        x = pair.make_input(torch, g)
        outs = {}
        for side, fn in (("slow", pair.slow), ("fast", pair.fast)):
            y = pair.make_output(torch, x)
            tx, ty = from_dlpack(x, assumed_align=16), from_dlpack(y, assumed_align=16)
            args = [tx, ty] + [cutlass.Int32(e) for e in pair.extra]
            compiled = cute.compile(fn, *args)
            compiled(*args)
            outs[side] = (y, lambda c=compiled, a=args: c(*a))
        torch.cuda.synchronize()
        a, b = outs["slow"][0].float(), outs["fast"][0].float()
        ok = bool(torch.isfinite(a).all()) and (torch.equal(a, b) if pair.rtol == 0 else
                                                bool(((a - b).abs() <= pair.rtol * b.abs() + 1e-6).all()))
        failed += not ok
        if profile:
            print(f"{pair.name:24s} {'ok  ' if ok else 'FAIL'}")
            launches += [(f"{pair.name}_slow", outs["slow"][1]), (f"{pair.name}_fast", outs["fast"][1])]
            continue
        times = {side: _median_us(torch, launch) for side, (_, launch) in outs.items()}
        print(f"{pair.name:24s} {'ok  ' if ok else 'FAIL'}  slow {times['slow']:8.1f} us  fast {times['fast']:8.1f} us  "
              f"gap {times['slow'] / times['fast']:5.2f}x")
    if profile:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for label, launch in launches:
            torch.cuda.nvtx.range_push(f"{nvtx_prefix}:{label}")
            launch()
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 1 if failed else 0


def _median_us(torch, launch) -> float:
    times = []
    for rep in range(23):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        if rep >= 3:
            times.append(start.elapsed_time(stop) * 1000.0)
    times.sort()
    return times[len(times) // 2]
