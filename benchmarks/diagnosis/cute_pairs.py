"""Slow/fast pairs of CuTe DSL kernels, each slow kernel differing from its fast twin by one planted
defect (the cause ids of rules/causes.toml), like corpus.cu's CUDA pairs but written in the DSL the
project is for. Every pair does the same work and writes the same output; the program checks each
pair's outputs against each other.

    python3 cute_pairs.py                 check, then time each pair (median of 20 launches, CUDA events)
    python3 cute_pairs.py --profile       check, then launch each kernel once in an NVTX range
                                          cute:<pair>_slow / cute:<pair>_fast between
                                          cudaProfilerStart/Stop (ncu --profile-from-start off --nvtx)
    python3 cute_pairs.py --compile-only  compile every kernel for sm_90a (no GPU) and print the SASS
                                          opcodes that carry each defect

Held out like corpus_set3.cuh and later: written and labelled before its first GPU run and before
any rule changed for it (benchmarks/diagnosis/README.md, "The CuTe DSL set").
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

THREADS = 256


def _element():
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return tidx, bidx, bidx * THREADS + tidx


# ---------------------------------------------------------------- narrow-access (bf16, one per thread)
# y = x * 2 + 1 over 64 M bf16 values. The slow kernel gives each thread one value (2-byte loads and
# stores); the fast one eight contiguous values, copied through a register fragment in one 16-byte
# access each way. Same arithmetic in fp32, same rounding.
BF16_N = 1 << 26
BF16_VEC = 8


@cute.kernel
def bf16_scalar_slow_kernel(gX: cute.Tensor, gY: cute.Tensor):
    _, _, i = _element()
    x = gX[i].to(cutlass.Float32)
    gY[i] = (x * cutlass.Float32(2.0) + cutlass.Float32(1.0)).to(cutlass.BFloat16)


@cute.kernel
def bf16_scalar_fast_kernel(gX: cute.Tensor, gY: cute.Tensor):
    _, _, i = _element()
    tX = cute.zipped_divide(gX, (BF16_VEC,))[(None, i)]
    tY = cute.zipped_divide(gY, (BF16_VEC,))[(None, i)]
    frag = cute.make_rmem_tensor((BF16_VEC,), cutlass.BFloat16)
    cute.autovec_copy(tX, frag)
    x = frag.load().to(cutlass.Float32)
    frag.store((x * cutlass.Float32(2.0) + cutlass.Float32(1.0)).to(cutlass.BFloat16))
    cute.autovec_copy(frag, tY)


@cute.jit
def bf16_scalar_slow(mX: cute.Tensor, mY: cute.Tensor):
    bf16_scalar_slow_kernel(mX, mY).launch(grid=[BF16_N // THREADS, 1, 1], block=[THREADS, 1, 1])


@cute.jit
def bf16_scalar_fast(mX: cute.Tensor, mY: cute.Tensor):
    bf16_scalar_fast_kernel(mX, mY).launch(grid=[BF16_N // BF16_VEC // THREADS, 1, 1], block=[THREADS, 1, 1])


# ---------------------------------------------------------------- bank-conflicts (a transpose tile without padding)
# The transpose of an 8192 x 8192 fp32 matrix through 32 x 32 shared-memory tiles, 32 x 8 threads per
# tile, each thread four rows. The slow tile is 32 x 32 words, so reading a column puts the warp's 32
# lanes on one bank; the fast one pads each row to 33 words. Global reads and writes are the same.
T_N = 8192
TILE = 32
T_ROWS = 8


def _transpose_kernel(padded: bool):
    row_words = TILE + 1 if padded else TILE

    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor):
        tx, ty, _ = cute.arch.thread_idx()
        bx, by, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        tile = smem.allocate_tensor(cutlass.Float32, cute.make_layout((TILE, TILE), stride=(row_words, 1)),
                                    byte_alignment=16)
        for r in cutlass.range_constexpr(TILE // T_ROWS):
            row = ty + r * T_ROWS
            tile[row, tx] = gX[by * TILE + row, bx * TILE + tx]
        cute.arch.sync_threads()
        for r in cutlass.range_constexpr(TILE // T_ROWS):
            row = ty + r * T_ROWS
            gY[bx * TILE + row, by * TILE + tx] = tile[tx, row]
    return kernel


transpose_slow_kernel = _transpose_kernel(padded=False)
transpose_fast_kernel = _transpose_kernel(padded=True)


@cute.jit
def transpose_slow(mX: cute.Tensor, mY: cute.Tensor):
    transpose_slow_kernel(mX, mY).launch(grid=[T_N // TILE, T_N // TILE, 1], block=[TILE, T_ROWS, 1],
                                         smem=TILE * TILE * 4 + 128)


@cute.jit
def transpose_fast(mX: cute.Tensor, mY: cute.Tensor):
    transpose_fast_kernel(mX, mY).launch(grid=[T_N // TILE, T_N // TILE, 1], block=[TILE, T_ROWS, 1],
                                         smem=TILE * (TILE + 1) * 4 + 128)


# ---------------------------------------------------------------- spills-local (a fragment indexed at run time)
# Each thread fills a 16-entry fp32 fragment from its input and reads it back 64 times at indices that
# depend on the running value. A register fragment indexed at run time is placed in local memory
# (the slow kernel); the fast one keeps the same table in shared memory, one column per thread.
F_N = 1 << 24
F_ENTRIES = 16
F_LOOKUPS = 64


def _fragment_kernel(in_shared: bool):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor):
        tidx, _, i = _element()
        x = gX[i]
        if cutlass.const_expr(in_shared):
            smem = cutlass.memory.SmemAllocator()
            table = smem.allocate_tensor(cutlass.Float32, cute.make_layout((F_ENTRIES, THREADS), stride=(THREADS, 1)),
                                         byte_alignment=16)
            for e in cutlass.range_constexpr(F_ENTRIES):
                table[e, tidx] = x * cutlass.Float32(e + 1) - cutlass.Float32(0.5)
        else:
            table = cute.make_rmem_tensor((F_ENTRIES,), cutlass.Float32)
            for e in cutlass.range_constexpr(F_ENTRIES):
                table[e] = x * cutlass.Float32(e + 1) - cutlass.Float32(0.5)
        s = x
        for k in cutlass.range(F_LOOKUPS, unroll=8):
            j = (cutlass.Int32(s * cutlass.Float32(7.0)) + k * 5) & (F_ENTRIES - 1)
            if cutlass.const_expr(in_shared):
                s = s * cutlass.Float32(0.5) + table[j, tidx]
            else:
                s = s * cutlass.Float32(0.5) + table[j]
        gY[i] = s
    return kernel


fragment_slow_kernel = _fragment_kernel(in_shared=False)
fragment_fast_kernel = _fragment_kernel(in_shared=True)


@cute.jit
def fragment_slow(mX: cute.Tensor, mY: cute.Tensor):
    fragment_slow_kernel(mX, mY).launch(grid=[F_N // THREADS, 1, 1], block=[THREADS, 1, 1])


@cute.jit
def fragment_fast(mX: cute.Tensor, mY: cute.Tensor):
    fragment_fast_kernel(mX, mY).launch(grid=[F_N // THREADS, 1, 1], block=[THREADS, 1, 1],
                                        smem=F_ENTRIES * THREADS * 4 + 128)


# ---------------------------------------------------------------- none: a grid-stride loop unrolled or not
# y = x * 1.5 - 0.25 over 32 M fp32 values, four per 16-byte access, in a grid-stride loop of 8 blocks
# per SM (32 KB in flight per SM even one access at a time); the slow kernel leaves the loop rolled,
# the fast one unrolls it by 4. Both wait on DRAM: planted as taking the same time.
S_N = 1 << 25
S_VEC = 4


def _stride_kernel(unroll: int):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor, blocks: cutlass.Int32):
        _, _, i = _element()
        stride = blocks * THREADS
        vX = cute.zipped_divide(gX, (S_VEC,))
        vY = cute.zipped_divide(gY, (S_VEC,))
        for j in cutlass.range(i, S_N // S_VEC, stride, unroll=unroll):
            frag = cute.make_rmem_tensor((S_VEC,), cutlass.Float32)
            cute.autovec_copy(vX[(None, j)], frag)
            frag.store(frag.load() * cutlass.Float32(1.5) - cutlass.Float32(0.25))
            cute.autovec_copy(frag, vY[(None, j)])
    return kernel


stride_slow_kernel = _stride_kernel(1)
stride_fast_kernel = _stride_kernel(4)


@cute.jit
def stride_slow(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    stride_slow_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1])


@cute.jit
def stride_fast(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    stride_fast_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1])


# ---------------------------------------------------------------- the pairs
# (name, slow, fast, input dtype, input shape, extra launch arguments given the SM count, rtol)
def pairs(sm_count: int):
    return [
        ("bf16_scalar", bf16_scalar_slow, bf16_scalar_fast, "bfloat16", (BF16_N,), (), 0.0),
        ("smem_transpose", transpose_slow, transpose_fast, "float32", (T_N, T_N), (), 0.0),
        ("local_fragment", fragment_slow, fragment_fast, "float32", (F_N,), (), 0.0),
        ("same_stride_unroll", stride_slow, stride_fast, "float32", (S_N,), (sm_count * 8,), 0.0),
    ]


def _fake(dtype: str, shape):
    element = {"bfloat16": cutlass.BFloat16, "float32": cutlass.Float32}[dtype]
    order = tuple(range(len(shape) - 1, -1, -1))
    return cute.runtime.make_fake_compact_tensor(element, shape, stride_order=order, assumed_align=16)


def compile_only() -> int:
    """Compile every kernel for sm_90a from fake tensors and print each one's defect-carrying opcodes."""
    from collections import Counter

    from kernelscope.toolchain.sass import dump_sass, sass_opcodes
    import tempfile

    for name, slow, fast, dtype, shape, extra, _ in pairs(132):
        for side, fn in (("slow", slow), ("fast", fast)):
            args = [_fake(dtype, shape), _fake(dtype, shape)] + [cutlass.Int32(e) for e in extra]
            # --dump-dir: the DSL otherwise writes each kept cubin into the working directory.
            with tempfile.TemporaryDirectory(prefix="kernelscope-cute-pairs-") as scratch:
                compiled = cute.compile(fn, *args, options=f"--keep-cubin --dump-dir={scratch}")
                cubin = os.path.join(scratch, "listed.cubin")
                with open(cubin, "wb") as f:
                    f.write(compiled.__cubin__)
                listings = dump_sass(cubin)
            ops = Counter(op for listing in listings.values() for op in sass_opcodes(listing))
            keep = {op: n for op, n in ops.items() if op.split(".")[0] in ("LDG", "STG", "LDS", "STS", "LDL", "STL", "BRA")}
            print(f"{name}_{side}: {sorted(keep.items())}")
    return 0


def run_on_gpu(profile: bool) -> int:
    import torch
    from cutlass.cute.runtime import from_dlpack

    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name(0)}, {sm_count} SMs")
    failed = 0
    launches = []
    for name, slow, fast, dtype, shape, extra, rtol in pairs(sm_count):
        g = torch.Generator(device="cpu").manual_seed(len(name))
        x = torch.rand(shape, generator=g, dtype=torch.float32).to(getattr(torch, dtype)).cuda()
        outs = {}
        for side, fn in (("slow", slow), ("fast", fast)):
            y = torch.full_like(x, float("nan"))
            tx, ty = from_dlpack(x, assumed_align=16), from_dlpack(y, assumed_align=16)
            args = [tx, ty] + [cutlass.Int32(e) for e in extra]
            compiled = cute.compile(fn, *args)
            compiled(*args)
            outs[side] = (y, lambda c=compiled, a=args: c(*a))
        torch.cuda.synchronize()
        a, b = outs["slow"][0].float(), outs["fast"][0].float()
        ok = bool(torch.isfinite(a).all()) and (torch.equal(a, b) if rtol == 0 else
                                                bool(((a - b).abs() <= rtol * b.abs() + 1e-6).all()))
        failed += not ok
        if profile:
            print(f"{name:24s} {'ok  ' if ok else 'FAIL'}")
            launches += [(f"{name}_slow", outs["slow"][1]), (f"{name}_fast", outs["fast"][1])]
            continue
        times = {side: _median_us(torch, launch) for side, (_, launch) in outs.items()}
        print(f"{name:24s} {'ok  ' if ok else 'FAIL'}  slow {times['slow']:8.1f} us  fast {times['fast']:8.1f} us  "
              f"gap {times['slow'] / times['fast']:5.2f}x")
    if profile:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for label, launch in launches:
            torch.cuda.nvtx.range_push(f"cute:{label}")
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


if __name__ == "__main__":
    if "--compile-only" in sys.argv:
        sys.exit(compile_only())
    sys.exit(run_on_gpu("--profile" in sys.argv))
