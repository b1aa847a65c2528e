"""A third held-out set of slow/fast CuTe DSL pairs (after cute_pairs.py and cute_pairs_set2.py), each
slow kernel differing from its fast twin by one planted defect (the cause ids of rules/causes.toml),
plus one pair that should take the same time. Every pair does the same work and writes the same
output; the program checks each pair's outputs against each other.

    python3 cute_pairs_set3.py                 check, then time each pair (median of 20 launches, CUDA events)
    python3 cute_pairs_set3.py --profile       check, then launch each kernel once in an NVTX range
                                               cute3:<pair>_slow / cute3:<pair>_fast between
                                               cudaProfilerStart/Stop (ncu --profile-from-start off --nvtx)
    python3 cute_pairs_set3.py --compile-only  compile every kernel for sm_90a (no GPU) and print the SASS
                                               opcodes that carry each defect, then the facts SASS opcode
                                               counts do not show (FFMA chains, registers, shared memory)

Held out: written and labelled (labels_cute3.part.toml, "cute_pairs_set3.py") before its first GPU run
and before any rule changed for it.
"""

from __future__ import annotations

import os
import re
import sys

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cute_pair_runner import Pair, compile_only, run_on_gpu  # noqa: E402

THREADS = 256


# ---------------------------------------------------------------- dependent-arithmetic: a fragment element by element
# y = x, then y = y * x + 0.25 512 times, for each of 4 M fp32 values, in fragments of 8 contiguous values
# per thread (two LDG.E.128), in a persistent grid of one 256-thread block per SM (8 warps an SM, 2 a
# scheduler, both kernels). The fast kernel runs the recurrence on the whole fragment as TensorSSA
# (frag.load() * x + 0.25): 8 independent FFMA chains interleaved, 16 a scheduler, the FMA pipe issues
# every cycle. The slow one walks the fragment element by element (cutlass.range_constexpr over the 8
# elements around a cutlass.range over the 512 steps), so each of the 8 loops is one FFMA chain: every
# FFMA waits ~4 cycles for the one before, 2 warps a scheduler fill half the issue slots. Same FFMA count,
# same rounding (bitwise-equal). Expected ~1.8x (2x on the math, the fragment loads exposed alike in both).
C_N = 1 << 22
C_VEC = 8
C_STEPS = 512


def _chain_kernel(whole_fragment: bool):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor, blocks: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        vX = cute.zipped_divide(gX, (C_VEC,))
        vY = cute.zipped_divide(gY, (C_VEC,))
        for j in cutlass.range(bidx * THREADS + tidx, C_N // C_VEC, blocks * THREADS, unroll=1):
            frag = cute.make_rmem_tensor((C_VEC,), cutlass.Float32)
            cute.autovec_copy(vX[(None, j)], frag)
            if cutlass.const_expr(whole_fragment):
                # TensorSSA on the whole fragment: one FFMA chain per element, interleaved.
                xs = frag.load()
                ys = xs
                for _ in cutlass.range(C_STEPS, unroll=2):
                    ys = ys * xs + cutlass.Float32(0.25)
                frag.store(ys)
            else:
                for v in cutlass.range_constexpr(C_VEC):
                    x = frag[v]
                    y = x
                    for _ in cutlass.range(C_STEPS, unroll=8):
                        y = y * x + cutlass.Float32(0.25)
                    frag[v] = y
            cute.autovec_copy(frag, vY[(None, j)])
    return kernel


chain_by_element_kernel = _chain_kernel(whole_fragment=False)
chain_whole_fragment_kernel = _chain_kernel(whole_fragment=True)


@cute.jit
def fragment_chain_slow(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    chain_by_element_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1])


@cute.jit
def fragment_chain_fast(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    chain_whole_fragment_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1])


# ---------------------------------------------------------------- grid-too-small / none: the CTA tile
# y = x, then y = y * x + 0.25 256 times, for each of 8 M fp32 values (FMA-bound: 2.1 G FFMA against 64 MB
# moved), one CTA of 512 threads per tile of cute.local_tile(gX, (TILE,), (bidx,)), each thread looping
# over 4-value vectors of its tile (LDG.E.128, 4 independent FFMA chains). The slow kernel's tile is
# 128 K values: 64 CTAs for 132 SMs, 68 SMs idle the whole kernel (each busy one holds a single CTA,
# 16 warps with 4 chains each, enough to issue every cycle). The fast one's tile is 2 K values: 4096
# CTAs, 7.8 waves of 4 resident CTAs per SM. Same per-thread code, same FFMA per value (bitwise-equal).
# Expected ~2-2.5x (132 / 64 SMs busy, and each busy SM's single CTA waits out its loads with no other
# CTA to overlap them).
# The none pair: tiles of 8 K values (1024 CTAs, 7.8 per SM) against 2 K (4096): both fill every SM
# many times over, the last wave's share alike (~3%); the same time, ~1.00x.
G_N = 1 << 23
G_THREADS = 512
G_VEC = 4
G_STEPS = 256
G_TILE_SLOW = 1 << 17
G_TILE_FAST = 1 << 11
G_TILE_MID = 1 << 13


def _tile_kernel(tile: int):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        vX = cute.zipped_divide(cute.local_tile(gX, (tile,), (bidx,)), (G_VEC,))
        vY = cute.zipped_divide(cute.local_tile(gY, (tile,), (bidx,)), (G_VEC,))
        for k in cutlass.range(tile // (G_THREADS * G_VEC), unroll=1):
            v = k * G_THREADS + tidx
            frag = cute.make_rmem_tensor((G_VEC,), cutlass.Float32)
            cute.autovec_copy(vX[(None, v)], frag)
            xs = frag.load()
            ys = xs
            for _ in cutlass.range(G_STEPS, unroll=4):
                ys = ys * xs + cutlass.Float32(0.25)
            frag.store(ys)
            cute.autovec_copy(frag, vY[(None, v)])
    return kernel


tile_128k_kernel = _tile_kernel(G_TILE_SLOW)
tile_8k_kernel = _tile_kernel(G_TILE_MID)
tile_2k_kernel = _tile_kernel(G_TILE_FAST)


def _tile_launcher(kernel, tile: int):
    @cute.jit
    def launch(mX: cute.Tensor, mY: cute.Tensor):
        kernel(mX, mY).launch(grid=[G_N // tile, 1, 1], block=[G_THREADS, 1, 1])
    return launch


cta_tile_count_slow = _tile_launcher(tile_128k_kernel, G_TILE_SLOW)
cta_tile_count_fast = _tile_launcher(tile_2k_kernel, G_TILE_FAST)
same_tile_waves_slow = _tile_launcher(tile_8k_kernel, G_TILE_MID)
same_tile_waves_fast = _tile_launcher(tile_2k_kernel, G_TILE_FAST)


# ---------------------------------------------------------------- occupancy-shared-memory: smem reserved for 32 stages
# Reverse every 1024-value chunk of 32 M fp32 values (y[i] = 0.5 * x[chunk end - i] + 1), one 256-thread
# CTA a chunk (32 K CTAs): each thread's 16-byte vector goes global -> shared (LDG.E.128, STS.128), one
# barrier, and back from the mirrored vector (LDS.128, STG.E.128). Both kernels allocate their staging
# buffer with SmemAllocator as a (STAGES, 1024) fp32 tensor and use stage 0 only; the slow one's STAGES is
# 32 (the launch reserves 128 KB: one CTA per SM, 8 warps, ~4 KB of loads in flight per SM), the fast
# one's 1 (4 KB: 8 CTAs per SM by the thread limit, 64 warps, ~32 KB in flight). Same code, registers
# and bytes (128 MB each way); only the shared memory reserved differs. DRAM-bound; expected ~2.5x (2-3x):
# cute2_row_sum_in_flight's 4 KB against 32 KB in flight per SM, plus a CTA relaunch per 4 KB here.
O_N = 1 << 25
O_TILE = 1024
O_VEC = 4
O_STAGES_SLOW = 32
O_STAGES_FAST = 1


def _smem_bytes(stages: int) -> int:
    return stages * O_TILE * 4 + 128


def _staged_kernel(stages: int):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        ring = smem.allocate_tensor(cutlass.Float32, cute.make_layout((stages, O_TILE), stride=(O_TILE, 1)),
                                    byte_alignment=16)
        sV = cute.zipped_divide(ring[0, None], (O_VEC,))
        vX = cute.zipped_divide(cute.local_tile(gX, (O_TILE,), (bidx,)), (O_VEC,))
        vY = cute.zipped_divide(cute.local_tile(gY, (O_TILE,), (bidx,)), (O_VEC,))
        frag = cute.make_rmem_tensor((O_VEC,), cutlass.Float32)
        cute.autovec_copy(vX[(None, tidx)], frag)
        cute.autovec_copy(frag, sV[(None, tidx)])
        cute.arch.sync_threads()
        mirrored = cute.make_rmem_tensor((O_VEC,), cutlass.Float32)
        cute.autovec_copy(sV[(None, THREADS - 1 - tidx)], mirrored)
        for e in cutlass.range_constexpr(O_VEC):
            frag[e] = mirrored[O_VEC - 1 - e] * cutlass.Float32(0.5) + cutlass.Float32(1.0)
        cute.autovec_copy(frag, vY[(None, tidx)])
    return kernel


staged_32_kernel = _staged_kernel(O_STAGES_SLOW)
staged_1_kernel = _staged_kernel(O_STAGES_FAST)


@cute.jit
def smem_reserve_slow(mX: cute.Tensor, mY: cute.Tensor):
    staged_32_kernel(mX, mY).launch(grid=[O_N // O_TILE, 1, 1], block=[THREADS, 1, 1],
                                    smem=_smem_bytes(O_STAGES_SLOW))


@cute.jit
def smem_reserve_fast(mX: cute.Tensor, mY: cute.Tensor):
    staged_1_kernel(mX, mY).launch(grid=[O_N // O_TILE, 1, 1], block=[THREADS, 1, 1],
                                   smem=_smem_bytes(O_STAGES_FAST))


# ---------------------------------------------------------------- excess-synchronization: a barrier every step
# Each 1024-value tile of 4 M fp32 values goes through a polynomial whose 512 coefficients are the tile's
# own first 512 values: the tile is staged in shared memory (LDG.E.128, STS.128, one barrier), then each
# thread runs Horner on its 4 values, y = y * x + c[k], reading c[k] from shared memory (a broadcast),
# 4 independent FFMA chains. A persistent grid of one 256-thread CTA per SM (8 warps, 2 a scheduler,
# both kernels) loops over the 4096 tiles, with a second barrier before the next tile overwrites the
# buffer. The slow kernel also calls cute.arch.sync_threads() after every step (512 more BAR.SYNC per
# tile, none needed: the coefficients do not change). ptxas keeps the order of barriers and LDS (one LDS
# between each two BAR.SYNC) and sinks the FFMA below them, so each unrolled 8 steps pay 8 barrier round
# trips in a row, then one LDS latency, with the FMA pipe idle, before their 64 FFMA issue cycles a
# scheduler; the fast one's unrolled loop reads its coefficients ahead (the compiler merges 4 of them into
# one LDS.128, which the barriers forbid: a consequence, not a second planted change). Same FFMA, same
# coefficient values read, same rounding (bitwise-equal). Expected ~2.5x (2-3.5x, with ~10-20 cycles a
# barrier: ~64 + 8 x 15 + 30 cycles per 8 steps against ~80).
B_N = 1 << 22
B_THREADS = THREADS
B_VEC = 4
B_TILE = B_THREADS * B_VEC
B_COEFFS = 512


def _coeff_kernel(barrier_per_step: bool):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor, blocks: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        sTile = smem.allocate_tensor(cutlass.Float32, cute.make_layout((B_TILE,)), byte_alignment=16)
        sV = cute.zipped_divide(sTile, (B_VEC,))
        vX = cute.zipped_divide(gX, (B_VEC,))
        vY = cute.zipped_divide(gY, (B_VEC,))
        for t in cutlass.range(bidx, B_N // B_TILE, blocks, unroll=1):
            v = t * B_THREADS + tidx
            frag = cute.make_rmem_tensor((B_VEC,), cutlass.Float32)
            cute.autovec_copy(vX[(None, v)], frag)
            cute.autovec_copy(frag, sV[(None, tidx)])
            cute.arch.sync_threads()
            xs = frag.load()
            ys = xs
            for k in cutlass.range(B_COEFFS, unroll=8):
                ys = ys * xs + sTile[k]
                if cutlass.const_expr(barrier_per_step):
                    cute.arch.sync_threads()
            frag.store(ys)
            cute.autovec_copy(frag, vY[(None, v)])
            cute.arch.sync_threads()
    return kernel


coeff_barrier_kernel = _coeff_kernel(barrier_per_step=True)
coeff_no_barrier_kernel = _coeff_kernel(barrier_per_step=False)


@cute.jit
def barrier_per_step_slow(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    coeff_barrier_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[B_THREADS, 1, 1],
                                                smem=B_TILE * 4 + 128)


@cute.jit
def barrier_per_step_fast(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    coeff_no_barrier_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[B_THREADS, 1, 1],
                                                   smem=B_TILE * 4 + 128)


# ---------------------------------------------------------------- load-imbalance: a persistent grid's contiguous split
# A (2048, 2048) fp32 matrix whose row r goes through r + 1 steps of y = y * x + 0.25 (a triangular
# cost, like a causal mask: 4.3 G FFMA in all), one 512-thread CTA a row at a time, 4 values a thread
# (LDG.E.128, 4 independent FFMA chains), in a persistent grid of one CTA per SM. The slow kernel's
# scheduler gives CTA b the contiguous rows [16 b, 16 b + 16) (ceil(2048 / 132) = 16 a CTA; CTAs 128-131
# get none): the last CTA's rows cost 2.05x the average CTA's. The fast one's is CUTLASS's static
# persistent order, rows b, b + 132, b + 264, ...: the busiest CTA 1.07x the average. Same rows, same
# per-row code (bitwise-equal). FMA-bound; expected ~1.8x (32.6 K against 16.9 K row-steps on the
# busiest SM, the row loads exposed alike).
L_ROWS = 2048
L_COLS = 2048
L_THREADS = 512
L_VEC = 4


def _triangle_kernel(contiguous: bool):
    @cute.kernel
    def kernel(gX: cute.Tensor, gY: cute.Tensor, blocks: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        if cutlass.const_expr(contiguous):
            per = (L_ROWS + blocks - 1) // blocks
            first, step = bidx * per, 1
            last = cutlass.min(first + per, L_ROWS)
        else:
            first, last, step = bidx, L_ROWS, blocks
        for row in cutlass.range(first, last, step, unroll=1):
            vX = cute.zipped_divide(gX[row, None], (L_VEC,))
            vY = cute.zipped_divide(gY[row, None], (L_VEC,))
            frag = cute.make_rmem_tensor((L_VEC,), cutlass.Float32)
            cute.autovec_copy(vX[(None, tidx)], frag)
            xs = frag.load()
            ys = xs
            for _ in cutlass.range(row + 1, unroll=4):
                ys = ys * xs + cutlass.Float32(0.25)
            frag.store(ys)
            cute.autovec_copy(frag, vY[(None, tidx)])
    return kernel


triangle_contiguous_kernel = _triangle_kernel(contiguous=True)
triangle_round_robin_kernel = _triangle_kernel(contiguous=False)


@cute.jit
def persistent_split_slow(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    triangle_contiguous_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[L_THREADS, 1, 1])


@cute.jit
def persistent_split_fast(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Int32):
    triangle_round_robin_kernel(mX, mY, blocks).launch(grid=[blocks, 1, 1], block=[L_THREADS, 1, 1])


# ---------------------------------------------------------------- the pairs
# (name, slow, fast, input shape, output shape, extra launch arguments given the SM count, rtol);
# all fp32, inputs uniform in [0, 1).
def pairs(sm_count: int) -> list[Pair]:
    listed = [
        ("fragment_chain", fragment_chain_slow, fragment_chain_fast, (C_N,), (C_N,), (sm_count,), 0.0),
        ("cta_tile_count", cta_tile_count_slow, cta_tile_count_fast, (G_N,), (G_N,), (), 0.0),
        ("smem_reserve", smem_reserve_slow, smem_reserve_fast, (O_N,), (O_N,), (), 0.0),
        ("barrier_per_step", barrier_per_step_slow, barrier_per_step_fast, (B_N,), (B_N,), (sm_count,), 0.0),
        ("persistent_split", persistent_split_slow, persistent_split_fast, (L_ROWS, L_COLS), (L_ROWS, L_COLS),
         (sm_count,), 0.0),
        ("same_tile_waves", same_tile_waves_slow, same_tile_waves_fast, (G_N,), (G_N,), (), 0.0),
    ]
    return [Pair(name, slow, fast,
                 make_input=lambda torch, g, shape=in_shape: torch.rand(shape, generator=g, dtype=torch.float32).cuda(),
                 make_output=lambda torch, x, shape=out_shape: torch.full(shape, float("nan"), dtype=torch.float32, device="cuda"),
                 fake_args=lambda a=in_shape, b=out_shape: [_fake(a), _fake(b)],
                 extra=extra, rtol=rtol)
            for name, slow, fast, in_shape, out_shape, extra, rtol in listed]


# The opcodes that carry the planted defects (or show that the code is the same).
SHOWN = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "BAR", "BRA", "FFMA")

# Shared memory each launch reserves (not in the cubin: a launch argument), per pair and side.
LAUNCH_SMEM = {
    "smem_reserve": (_smem_bytes(O_STAGES_SLOW), _smem_bytes(O_STAGES_FAST)),
    "barrier_per_step": (B_TILE * 4 + 128, B_TILE * 4 + 128),
}

_FFMA = re.compile(r"\bFFMA\s+(R\d+)\s*,\s*([^;]*);")


def _dependent_ffma(listing: str) -> tuple[int, int]:
    """(FFMA that read the register the FFMA just before them wrote, all FFMA) in listing order: a
    straight dependent chain is nearly all of them, interleaved chains nearly none."""
    previous, dependent, total = None, 0, 0
    for m in map(_FFMA.search, listing.splitlines()):
        if not m:
            continue
        total += 1
        sources = re.findall(r"R\d+", m.group(2))
        dependent += previous is not None and previous in sources
        previous = m.group(1)
    return dependent, total


def kernel_facts(pair: Pair, side: str, cubin: str) -> str:
    """Registers per thread (cuobjdump), back-to-back dependent FFMA, and the shared memory the launch
    reserves: what decides the chains, occupancy and the smem limit, which opcode counts miss."""
    from kernelscope.toolchain.cubin import function_resources
    from kernelscope.toolchain.sass import dump_sass

    resources, _ = function_resources(cubin)
    registers = sorted({r.registers for r in resources.values() if r.registers is not None})
    dependent, total = _dependent_ffma("\n".join(dump_sass(cubin).values()))
    smem = LAUNCH_SMEM.get(pair.name, (0, 0))[("slow", "fast").index(side)]
    return f"registers {registers}, FFMA after the FFMA they depend on {dependent}/{total}, launch smem {smem} B"


def _fake(shape):
    order = tuple(range(len(shape) - 1, -1, -1))
    return cute.runtime.make_fake_compact_tensor(cutlass.Float32, shape, stride_order=order, assumed_align=16)


if __name__ == "__main__":
    if "--compile-only" in sys.argv:
        sys.exit(compile_only(pairs(132), SHOWN, kernel_facts))
    import torch
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name(0)}, {sm_count} SMs")
    sys.exit(run_on_gpu(pairs(sm_count), "cute3", "--profile" in sys.argv))
