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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cute_pair_runner import Pair, compile_only, run_on_gpu  # noqa: E402

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
def pairs(sm_count: int) -> list[Pair]:
    listed = [
        ("bf16_scalar", bf16_scalar_slow, bf16_scalar_fast, "bfloat16", (BF16_N,), (), 0.0),
        ("smem_transpose", transpose_slow, transpose_fast, "float32", (T_N, T_N), (), 0.0),
        ("local_fragment", fragment_slow, fragment_fast, "float32", (F_N,), (), 0.0),
        ("same_stride_unroll", stride_slow, stride_fast, "float32", (S_N,), (sm_count * 8,), 0.0),
    ]
    # Input uniform in [0, 1) of the pair's dtype; the output of the same shape and dtype.
    return [Pair(name, slow, fast,
                 make_input=lambda torch, g, shape=shape, dtype=dtype:
                     torch.rand(shape, generator=g, dtype=torch.float32).to(getattr(torch, dtype)).cuda(),
                 make_output=lambda torch, x: torch.full_like(x, float("nan")),
                 fake_args=lambda dtype=dtype, shape=shape: [_fake(dtype, shape), _fake(dtype, shape)],
                 extra=extra, rtol=rtol)
            for name, slow, fast, dtype, shape, extra, rtol in listed]


# The opcodes that carry the planted defects (or show that the code is the same).
SHOWN = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "BRA")


def _fake(dtype: str, shape):
    element = {"bfloat16": cutlass.BFloat16, "float32": cutlass.Float32}[dtype]
    order = tuple(range(len(shape) - 1, -1, -1))
    return cute.runtime.make_fake_compact_tensor(element, shape, stride_order=order, assumed_align=16)


if __name__ == "__main__":
    if "--compile-only" in sys.argv:
        sys.exit(compile_only(pairs(132), SHOWN))
    import torch
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name(0)}, {sm_count} SMs")
    sys.exit(run_on_gpu(pairs(sm_count), "cute", "--profile" in sys.argv))
