"""A second held-out set of slow/fast CuTe DSL pairs (after cute_pairs.py), each slow kernel differing
from its fast twin by one planted defect (the cause ids of rules/causes.toml), plus one pair that
should take the same time. Every pair does the same work and writes the same output; the program
checks each pair's outputs against each other.

    python3 cute_pairs_set2.py                 check, then time each pair (median of 20 launches, CUDA events)
    python3 cute_pairs_set2.py --profile       check, then launch each kernel once in an NVTX range
                                               cute2:<pair>_slow / cute2:<pair>_fast between
                                               cudaProfilerStart/Stop (ncu --profile-from-start off --nvtx)
    python3 cute_pairs_set2.py --compile-only  compile every kernel for sm_90a (no GPU) and print the SASS
                                               opcodes that carry each defect

Held out: written and labelled (labels.toml, "cute_pairs_set2.py") before its first GPU run and
before any rule changed for it.
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


# ---------------------------------------------------------------- uncoalesced-access / none: the thread layout's order
# y = x * 0.75 + 0.125 over an 8192 x 8192 row-major fp32 matrix in 64 x 64 tiles, the tile split over
# 256 threads by a thread layout through cute.local_partition (16 elements a thread). make_layout's
# default is column-major, so a (32, 8) thread layout without strides puts consecutive threads down a
# column: a warp's load touches 32 rows, one 4-byte word each (32 sectors for 128 bytes). With
# stride (8, 1) consecutive threads step along the row: 4 rows of 32 contiguous bytes (4 full sectors).
# A (8, 32) row-major layout gives each warp one 128-byte row segment: also full sectors, the same time.
E_N = 8192
E_TILE = 64


def _elementwise_kernel(thread_layout_shape, thread_layout_stride):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bx, by, _ = cute.arch.block_idx()
        if cutlass.const_expr(thread_layout_stride is None):
            threads = cute.make_layout(thread_layout_shape)
        else:
            threads = cute.make_layout(thread_layout_shape, stride=thread_layout_stride)
        tX = cute.local_partition(cute.local_tile(gX, (E_TILE, E_TILE), (by, bx)), threads, tidx)
        tY = cute.local_partition(cute.local_tile(gY, (E_TILE, E_TILE), (by, bx)), threads, tidx)
        frag = cute.make_rmem_tensor(tX.shape, cutlass.Float32)
        cute.autovec_copy(tX, frag)
        frag.store(frag.load() * cutlass.Float32(0.75) + cutlass.Float32(0.125))
        cute.autovec_copy(frag, tY)
    return kernel


column_threads_kernel = _elementwise_kernel((32, 8), None)        # the default: threads down the columns
row_threads_kernel = _elementwise_kernel((32, 8), (8, 1))         # threads along the rows, 32-byte runs
row_threads_wide_kernel = _elementwise_kernel((8, 32), (32, 1))   # threads along the rows, 128-byte runs


def _elementwise_launcher(kernel):
    @cute.jit
    def launch(mX: cute.Tensor, mY: cute.Tensor):
        kernel(mX, mY).launch(grid=[E_N // E_TILE, E_N // E_TILE, 1], block=[THREADS, 1, 1])
    return launch


layout_order_slow = _elementwise_launcher(column_threads_kernel)
layout_order_fast = _elementwise_launcher(row_threads_kernel)
same_layout_rows_slow = _elementwise_launcher(row_threads_kernel)
same_layout_rows_fast = _elementwise_launcher(row_threads_wide_kernel)


# ---------------------------------------------------------------- exposed-latency: a row sum with one load in flight
# Row sums of a 32768 x 2048 fp32 matrix, one warp a row, each lane 16 loads of 16 bytes, then a
# butterfly of shuffles. A persistent grid of one 256-thread block per SM (8 warps an SM, both kernels).
# The slow kernel's lane loop is kept rolled, so each load is consumed before the next is issued
# (8 warps x 32 lanes x 16 bytes = 4 KB in flight per SM); the fast one unrolls it by 8 (32 KB),
# adding in the same order: bitwise-equal sums.
R_ROWS = 32768
R_COLS = 2048
R_VEC = 4
R_PER_LANE = R_COLS // R_VEC // 32


def _row_sum_kernel(unroll: int):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor, blocks: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp, lane = tidx // 32, tidx % 32
        warps = blocks * (THREADS // 32)
        for row in cutlass.range(bidx * (THREADS // 32) + warp, R_ROWS, warps, unroll=1):
            vRow = cute.zipped_divide(gX[row, None], (R_VEC,))
            acc = cutlass.Float32(0.0)
            for k in cutlass.range(R_PER_LANE, unroll=unroll):
                frag = cute.make_rmem_tensor((R_VEC,), cutlass.Float32)
                cute.autovec_copy(vRow[(None, k * 32 + lane)], frag)
                for v in cutlass.range_constexpr(R_VEC):
                    acc = acc + frag[v]
            for offset in cutlass.range_constexpr(5):
                acc = acc + cute.arch.shuffle_sync_bfly(acc, offset=1 << offset)
            if lane == 0:
                gY[row] = acc
    return kernel


row_sum_rolled_kernel = _row_sum_kernel(1)
row_sum_unrolled_kernel = _row_sum_kernel(8)


@cute.jit
def row_sum_slow(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    row_sum_rolled_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1])


@cute.jit
def row_sum_fast(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    row_sum_unrolled_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1])


# ---------------------------------------------------------------- divergence: which thread takes which half
# A (2, 16 M) fp32 tensor whose first row goes through a 256-term polynomial (Horner, one FFMA a term)
# and whose second through a 192-term alternating one: both FMA-bound, one element a thread, tiles of
# (2, 128) a block. The thread layout picks the element: the slow kernel's (2, 128) default column-major
# layout alternates the rows from lane to lane, so every warp runs both polynomials with half its lanes;
# the fast one's stride (128, 1) gives warps 0-3 the first row and 4-7 the second. A warp's loads cover
# full sectors in both (two 64-byte runs against one 128-byte run), same bytes.
D_COLS = 1 << 24
D_TILE = 128
D_TERMS_FIRST = 256
D_TERMS_SECOND = 192


def _halves_kernel(thread_layout_stride):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        if cutlass.const_expr(thread_layout_stride is None):
            threads = cute.make_layout((2, D_TILE))
        else:
            threads = cute.make_layout((2, D_TILE), stride=thread_layout_stride)
        half, j = threads.get_hier_coord(tidx)
        col = bidx * D_TILE + j
        x = gX[half, col]
        y = x
        c = cutlass.Float32(1.0)
        # Loops, not unrolled straight-line code: the compiler would compute both straight-line
        # polynomials in every thread and select one, which no thread layout could make diverge.
        if half == 0:
            for _ in cutlass.range(D_TERMS_FIRST, unroll=8):
                y = y * x + c
                c = c * cutlass.Float32(0.96875)
        else:
            for _ in cutlass.range(D_TERMS_SECOND, unroll=8):
                y = c - y * x
                c = c * cutlass.Float32(0.9375) + cutlass.Float32(0.03125)
        gY[half, col] = y
    return kernel


halves_interleaved_kernel = _halves_kernel(None)     # the default: lanes alternate between the rows
halves_by_warp_kernel = _halves_kernel((D_TILE, 1))  # a warp stays in one row


@cute.jit
def halves_slow(mX: cute.Tensor, mY: cute.Tensor):
    halves_interleaved_kernel(mX, mY).launch(grid=[D_COLS // D_TILE, 1, 1], block=[THREADS, 1, 1])


@cute.jit
def halves_fast(mX: cute.Tensor, mY: cute.Tensor):
    halves_by_warp_kernel(mX, mY).launch(grid=[D_COLS // D_TILE, 1, 1], block=[THREADS, 1, 1])


# ---------------------------------------------------------------- the pairs
# (name, slow, fast, input shape, output shape, extra launch arguments given the SM count, rtol);
# all fp32, inputs uniform in [0, 1).
def pairs(sm_count: int) -> list[Pair]:
    listed = [
        ("thread_layout_order", layout_order_slow, layout_order_fast, (E_N, E_N), (E_N, E_N), (), 0.0),
        ("row_sum_in_flight", row_sum_slow, row_sum_fast, (R_ROWS, R_COLS), (R_ROWS,), (sm_count,), 0.0),
        ("halves_by_lane", halves_slow, halves_fast, (2, D_COLS), (2, D_COLS), (), 0.0),
        ("same_layout_rows", same_layout_rows_slow, same_layout_rows_fast, (E_N, E_N), (E_N, E_N), (), 0.0),
    ]
    return [Pair(name, slow, fast,
                 make_input=lambda torch, g, shape=in_shape: torch.rand(shape, generator=g, dtype=torch.float32).cuda(),
                 make_output=lambda torch, x, shape=out_shape: torch.full(shape, float("nan"), dtype=torch.float32, device="cuda"),
                 fake_args=lambda a=in_shape, b=out_shape: [_fake(a), _fake(b)],
                 extra=extra, rtol=rtol)
            for name, slow, fast, in_shape, out_shape, extra, rtol in listed]


# The opcodes that carry the planted defects (or show that the code is the same).
SHOWN = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "BRA", "BSSY", "FFMA", "SHFL")


def _fake(shape):
    order = tuple(range(len(shape) - 1, -1, -1))
    return cute.runtime.make_fake_compact_tensor(cutlass.Float32, shape, stride_order=order, assumed_align=16)


if __name__ == "__main__":
    if "--compile-only" in sys.argv:
        sys.exit(compile_only(pairs(132), SHOWN))
    import torch
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name(0)}, {sm_count} SMs")
    sys.exit(run_on_gpu(pairs(sm_count), "cute2", "--profile" in sys.argv))
