"""Deliberately flawed CuTe DSL kernels that make the built-in rules fire on real reports.

Each kernel has one flaw a rule should name; `scale_good` is the well-behaved elementwise
kernel the flawed ones are compared with. `python bad_kernels.py` (GPU) compiles and warms
every kernel up outside the profiled region, then launches each once inside an NVTX range
`rk:<name>` between cudaProfilerStart/Stop, so ncu with `--profile-from-start off` captures
exactly one launch per kernel. The command that made the committed report is in
tests/fixtures/README.md. `python bad_kernels.py --compile-only` builds them for sm_90a
without a GPU and prints their register and local-memory use.
"""

from __future__ import annotations

import os
import sys
import traceback

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

from kernelscope.kernels.cute_build import artifact_options  # noqa: E402

N = 1 << 24              # elements of the elementwise kernels (64 MiB of fp32)
THREADS = 256


def _thread_element(per_block: int):
    """(thread, block, element) indices of the calling thread, one element per thread:
    element = block * per_block + thread. Traced inline into each kernel."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return tidx, bidx, bidx * per_block + tidx


# ------------------------------------------------------------------ the well-behaved baseline
@cute.kernel
def scale_good_kernel(gX: cute.Tensor, gY: cute.Tensor):
    _, _, i = _thread_element(THREADS)
    gY[i] = gX[i] * cutlass.Float32(2.0)


@cute.jit
def scale_good(mX: cute.Tensor, mY: cute.Tensor):
    scale_good_kernel(mX, mY).launch(grid=[N // THREADS, 1, 1], block=[THREADS, 1, 1])


# ------------------------------------------------------------------ branchy: data-dependent trip counts
@cute.kernel
def branchy_kernel(gX: cute.Tensor, gY: cute.Tensor):
    _, _, i = _thread_element(THREADS)
    v = gX[i]
    # Each thread loops a different number of times: a branch per iteration, divergent warps.
    trips = cutlass.Int32(i % 13)
    for _ in cutlass.range(trips, unroll=1):
        v = v * cutlass.Float32(0.5) + cutlass.Float32(1.0)
    gY[i] = v


@cute.jit
def branchy(mX: cute.Tensor, mY: cute.Tensor):
    branchy_kernel(mX, mY).launch(grid=[N // THREADS, 1, 1], block=[THREADS, 1, 1])


# ------------------------------------------------------------------ local array indexed at run time
LOCAL_ELEMS = 64


@cute.kernel
def local_array_kernel(gX: cute.Tensor, gY: cute.Tensor):
    tidx, bidx, i = _thread_element(THREADS)
    v = gX[i]
    keep = cute.make_rmem_tensor((LOCAL_ELEMS,), cutlass.Float32)
    for j in cutlass.range_constexpr(LOCAL_ELEMS):
        keep[j] = v + cutlass.Float32(j)
    # Indices known only at run time: the array cannot stay in registers.
    keep[(tidx * 7) % LOCAL_ELEMS] = v * v
    gY[i] = keep[(bidx + tidx) % LOCAL_ELEMS]


@cute.jit
def local_array(mX: cute.Tensor, mY: cute.Tensor):
    local_array_kernel(mX, mY).launch(grid=[N // THREADS, 1, 1], block=[THREADS, 1, 1])


# ------------------------------------------------------------------ shared memory read down columns
ROWS = 32
SMEM_ITERS = 256


@cute.kernel
def bank_conflict_kernel(gX: cute.Tensor, gY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    warp = tidx // 32
    lane = tidx % 32
    smem = cutlass.memory.SmemAllocator()
    # One 32x32 fp32 tile per warp, no padding: a column read puts all 32 lanes on one bank.
    tile = smem.allocate_tensor(cutlass.Float32, cute.make_layout((THREADS // 32, ROWS, 32), stride=(ROWS * 32, 32, 1)),
                                byte_alignment=16)
    i = bidx * THREADS + tidx
    v = gX[i]
    for r in cutlass.range_constexpr(ROWS):
        tile[warp, r, lane] = v + cutlass.Float32(r)
    cute.arch.sync_threads()
    acc = cutlass.Float32(0.0)
    for k in cutlass.range(SMEM_ITERS, unroll=4):
        acc = acc + tile[warp, lane, k % 32]
    gY[i] = acc


@cute.jit
def bank_conflict(mX: cute.Tensor, mY: cute.Tensor):
    bank_conflict_kernel(mX, mY).launch(grid=[N // THREADS // 16, 1, 1], block=[THREADS, 1, 1],
                                        smem=THREADS // 32 * ROWS * 32 * 4 + 128)


# ------------------------------------------------------------------ dependent FFMA chain, one warp per block
CHAIN = 4096


@cute.kernel
def fma_chain_kernel(gX: cute.Tensor, gY: cute.Tensor):
    _, _, i = _thread_element(32)
    v = gX[i]
    # Every FFMA needs the previous result: the warp waits out the pipeline latency each time.
    for _ in cutlass.range(CHAIN, unroll=8):
        v = v * cutlass.Float32(0.999) + cutlass.Float32(0.001)
    gY[i] = v


@cute.jit
def fma_chain(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Constexpr):
    fma_chain_kernel(mX, mY).launch(grid=[blocks, 1, 1], block=[32, 1, 1])


# ------------------------------------------------------------------ a grid of 1.1 waves
TAIL_WORK = 2048


@cute.kernel
def tail_wave_kernel(gX: cute.Tensor, gY: cute.Tensor):
    _, _, i = _thread_element(THREADS)
    v = gX[i]
    a = v
    b = v + cutlass.Float32(1.0)
    for _ in cutlass.range(TAIL_WORK, unroll=8):
        a = a * cutlass.Float32(0.999) + b
        b = b * cutlass.Float32(0.998) + a
    gY[i] = a + b


@cute.jit
def tail_wave(mX: cute.Tensor, mY: cute.Tensor, blocks: cutlass.Constexpr):
    tail_wave_kernel(mX, mY).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1])


# ------------------------------------------------------------------ many live values: registers at the limit
LIVE = 232


@cute.kernel
def register_heavy_kernel(gX: cute.Tensor, gY: cute.Tensor):
    _, _, i = _thread_element(THREADS)
    v = gX[i]
    vals = cute.make_rmem_tensor((LIVE,), cutlass.Float32)
    for j in cutlass.range_constexpr(LIVE):
        vals[j] = v * cutlass.Float32(j + 1)
    # Every value is updated from its neighbour each round, so all of them stay live.
    for _ in cutlass.range(8, unroll=1):
        for j in cutlass.range_constexpr(LIVE):
            vals[j] = vals[j] * vals[(j + 1) % LIVE] + cutlass.Float32(0.5)
    acc = cutlass.Float32(0.0)
    for j in cutlass.range_constexpr(LIVE):
        acc = acc + vals[j]
    gY[i] = acc


@cute.jit
def register_heavy(mX: cute.Tensor, mY: cute.Tensor):
    register_heavy_kernel(mX, mY).launch(grid=[N // THREADS // 16, 1, 1], block=[THREADS, 1, 1])


# ------------------------------------------------------------------ loop-carried rotation: register moves
SHUFFLE_ITERS = 256


@cute.kernel
def register_shuffle_kernel(gX: cute.Tensor, gY: cute.Tensor):
    _, _, i = _thread_element(THREADS)
    x = gX[i]
    v0, v1, v2, v3 = x, x + cutlass.Float32(1.0), x + cutlass.Float32(2.0), x + cutlass.Float32(3.0)
    v4, v5, v6, v7 = x + cutlass.Float32(4.0), x + cutlass.Float32(5.0), x + cutlass.Float32(6.0), x + cutlass.Float32(7.0)
    # Not unrolled, the rotation cannot be renamed away: eight MOVs per iteration around one FMUL.
    for _ in cutlass.range(SHUFFLE_ITERS, unroll=1):
        v0, v1, v2, v3, v4, v5, v6, v7 = v1, v2, v3, v4, v5, v6, v7, v0 * cutlass.Float32(0.5)
    gY[i] = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7


@cute.jit
def register_shuffle(mX: cute.Tensor, mY: cute.Tensor):
    register_shuffle_kernel(mX, mY).launch(grid=[N // THREADS // 16, 1, 1], block=[THREADS, 1, 1])


# ------------------------------------------------------------------ mma.sync on Hopper (no wgmma)
MMA_M, MMA_N, MMA_K = 16, 8, 16


@cute.kernel
def warp_mma_kernel(tiled_mma: cute.TiledMma, gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bm, bn, _ = cute.arch.block_idx()
    # One warp per 16x8 output tile; operands straight from global memory into registers.
    cta_a = cute.local_tile(gA, (MMA_M, MMA_K), (bm, None))
    cta_b = cute.local_tile(gB, (MMA_N, MMA_K), (bn, None))
    cta_c = cute.local_tile(gC, (MMA_M, MMA_N), (bm, bn))
    thr = tiled_mma.get_slice(tidx)
    tCgA = thr.partition_A(cta_a)
    tCgB = thr.partition_B(cta_b)
    tCgC = thr.partition_C(cta_c)
    tCrA = tiled_mma.make_fragment_A(tCgA[None, None, None, 0])
    tCrB = tiled_mma.make_fragment_B(tCgB[None, None, None, 0])
    tCrC = tiled_mma.make_fragment_C(tCgC)
    tCrC.fill(0.0)
    for k in cutlass.range(cute.size(cta_a, mode=[2]), unroll=1):
        cute.autovec_copy(tCgA[None, None, None, k], tCrA)
        cute.autovec_copy(tCgB[None, None, None, k], tCrB)
        cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)
    cute.autovec_copy(tCrC, tCgC)


@cute.jit
def warp_mma(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    op = cute.nvgpu.warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (MMA_M, MMA_N, MMA_K))
    tiled_mma = cute.make_tiled_mma(op)
    m, n = mC.shape
    warp_mma_kernel(tiled_mma, mA, mB, mC).launch(grid=[m // MMA_M, n // MMA_N, 1], block=[32, 1, 1])


GEMM_M, GEMM_N, GEMM_K = 1024, 1024, 1024


# ------------------------------------------------------------------ building and launching
def _fake_vector(n: int):
    return cute.runtime.make_fake_compact_tensor(cutlass.Float32, (n,), assumed_align=16)


def compile_all_fake() -> dict[str, object]:
    """Compile every kernel for sm_90a from fake tensors (no GPU needed)."""
    x, y = _fake_vector(N), _fake_vector(N)
    out = {}
    for name, fn, extra in _KERNELS(sm_count=132):
        out[name] = cute.compile(fn, x, y, *extra, options=artifact_options("kernelscope-rule-kernels-"))
    a = cute.runtime.make_fake_compact_tensor(cutlass.Float16, (GEMM_M, GEMM_K), stride_order=(1, 0), assumed_align=16)
    b = cute.runtime.make_fake_compact_tensor(cutlass.Float16, (GEMM_N, GEMM_K), stride_order=(1, 0), assumed_align=16)
    c = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (GEMM_M, GEMM_N), stride_order=(1, 0), assumed_align=16)
    out["warp_mma"] = cute.compile(warp_mma, a, b, c, options=artifact_options("kernelscope-rule-kernels-"))
    return out


def _KERNELS(sm_count: int):
    # The tail grid: 1.1 times the blocks one wave holds (8 blocks of 256 threads per SM).
    return [
        ("scale_good", scale_good, ()),
        ("branchy", branchy, ()),
        ("local_array", local_array, ()),
        ("bank_conflict", bank_conflict, ()),
        ("fma_chain", fma_chain, (sm_count,)),
        ("tail_wave", tail_wave, (int(sm_count * 8 * 1.1),)),
        ("register_heavy", register_heavy, ()),
        ("register_shuffle", register_shuffle, ()),
    ]


def _resource_usage(compiled) -> str:
    import subprocess
    import tempfile

    from kernelscope.toolchain.tools import find_cuda_tool

    cubin = getattr(compiled, "__cubin__", None)
    if not isinstance(cubin, bytes):
        return "no cubin"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([find_cuda_tool("cuobjdump"), "--dump-resource-usage", f.name], capture_output=True, text=True)
    return " ".join(line.strip() for line in r.stdout.splitlines() if "REG" in line)


def run_on_gpu() -> int:
    import torch
    from profiled_launches import launch_once_each_profiled
    from cutlass.cute.runtime import from_dlpack

    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    x = torch.randn(N, device="cuda")
    y = torch.empty_like(x)
    tx, ty = from_dlpack(x, assumed_align=16), from_dlpack(y, assumed_align=16)
    launches = []
    for name, fn, extra in _KERNELS(sm_count):
        try:
            compiled = cute.compile(fn, tx, ty, *extra)
            launches.append((name, lambda c=compiled: c(tx, ty)))
        except Exception:
            traceback.print_exc()
            print(f"rule kernel {name}: compile failed", file=sys.stderr)
    try:
        a = torch.randn(GEMM_M, GEMM_K, device="cuda", dtype=torch.float16)
        b = torch.randn(GEMM_N, GEMM_K, device="cuda", dtype=torch.float16)
        c = torch.empty(GEMM_M, GEMM_N, device="cuda", dtype=torch.float32)
        ta, tb, tc = (from_dlpack(t, assumed_align=16) for t in (a, b, c))
        compiled_mma = cute.compile(warp_mma, ta, tb, tc)
        compiled_mma(ta, tb, tc)
        torch.cuda.synchronize()
        err = (c - a.float() @ b.float().t()).abs().max().item()
        print(f"warp_mma max abs error vs torch: {err:.3g}")
        launches.append(("warp_mma", lambda: compiled_mma(ta, tb, tc)))
    except Exception:
        traceback.print_exc()
        print("rule kernel warp_mma: failed", file=sys.stderr)

    # The project's WGMMA GEMM in three shapes of its tile, and cuBLAS on the same problem.
    try:
        from kernelscope.kernels.gemm import GEMM_SPEC

        shape = {"M": 2048, "N": 2048, "K": 8192}
        inputs = GEMM_SPEC.make_inputs(shape, "bfloat16", 0, "cuda")
        launches.append(("cublas", lambda: torch.matmul(inputs["a"], inputs["b"])))
        variants = {"gemm_default": {}, "gemm_wg1": {"consumer_wgs": 1, "tile_m": 64},
                    "gemm_wg1_n128": {"consumer_wgs": 1, "tile_m": 64, "tile_n": 128}}
        for name, overrides in variants.items():
            try:
                config = {**GEMM_SPEC.default_config, **overrides}
                launches.append((name, GEMM_SPEC.compile(config, shape, "bfloat16", "sm_90a").bound(inputs)))
            except Exception:
                traceback.print_exc()
                print(f"rule kernel {name}: failed", file=sys.stderr)
    except Exception:
        traceback.print_exc()
        print("rule kernel gemm: failed", file=sys.stderr)

    for _, launch in launches:   # warm-up outside the profiled region
        launch()
    launch_once_each_profiled(torch, launches)
    return 0


if __name__ == "__main__":
    if "--compile-only" in sys.argv:
        for name, compiled in compile_all_fake().items():
            print(f"{name:16s} {_resource_usage(compiled)}")
    else:
        sys.exit(run_on_gpu())
