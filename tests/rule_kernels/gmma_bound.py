"""CuTe DSL kernels that spend their time in warpgroup MMA, for the `stall-gmma` rule.

Every CTA (one per SM) copies one A tile (64 rows per warpgroup x 64, bf16) and one B tile
(256 x 64, bf16) into shared memory once, then runs ITERS rounds of the same WGMMAs on those
tiles into one fp32 accumulator per warpgroup (4 HGMMA 64x256x16 per round), and finally writes
the accumulators to global memory: C = ITERS * A @ B^T for every CTA, checked against torch.

The variants differ only in how the warps wait, to show which wait Nsight Compute calls what:
- `gmma_chain`: one warpgroup, `wait_group(0)` after every round: a dependent chain, each
  round waits for the one before (the wait is WARPGROUP.DEPBAR in SASS).
- `gmma_chain_wg2`: the same chain in two warpgroups that share the SM's tensor cores.
- `gmma_in_flight`: one warpgroup keeping up to 4 rounds in flight (`wait_group(4)`).
- `gmma_lagging_warp`: one warpgroup, one round in flight, and its last warp arrives late at
  the warpgroup fence (LAG_FFMAS dependent FFMAs first), so the other three wait there
  (WARPGROUP.ARRIVE) before their HGMMA may issue.

Measured on an H200 (tests/fixtures/h200-rule-gmma.ncu-rep.xz): the two chains are barrier-bound
(WARPGROUP.DEPBAR, 86-92% of stall cycles); `gmma_in_flight` and `gmma_lagging_warp` are
gmma-bound (63% and 74%), the stall sitting on the first HGMMA after WARPGROUP.ARRIVE.

`python gmma_bound.py` (GPU) compiles and warms every variant up, then launches each once in an
NVTX range `rk:<name>` between cudaProfilerStart/Stop (for ncu --profile-from-start off); the
command that made the committed report is in tests/fixtures/README.md.
`python gmma_bound.py --compile-only` builds them for sm_90a without a GPU and prints their
register use and HGMMA count.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import cutlass.utils.hopper_helpers as sm90_utils  # noqa: E402
from cutlass.memory import SmemAllocator  # noqa: E402
from cutlass.tensor_utils import LayoutEnum  # noqa: E402

TILE_N = 256
TILE_K = 64
ITERS = 2048
LAG_FFMAS = 192       # longer than the tensor time of one round: the late warp is the bottleneck
LAG_UNROLL = 8


@dataclass(frozen=True)
class Variant:
    name: str
    warpgroups: int
    in_flight: int     # wait_group depth after each round
    lag_ffmas: int     # dependent FFMAs the last warp of each warpgroup runs before the fence


VARIANTS = [
    Variant("gmma_chain", 1, 0, 0),
    Variant("gmma_chain_wg2", 2, 0, 0),
    Variant("gmma_in_flight", 1, 4, 0),
    Variant("gmma_lagging_warp", 1, 1, LAG_FFMAS),
]


class GmmaRounds:
    def __init__(self, variant: Variant, iters: int = ITERS):
        self.v = variant
        self.iters = iters
        self.tile_m = 64 * variant.warpgroups
        self.threads = 128 * variant.warpgroups

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, mLag: cute.Tensor,
                 lag_trips: cutlass.Int32, ctas: cutlass.Constexpr):
        ab = cutlass.BFloat16
        tile_mnk = (self.tile_m, TILE_N, TILE_K)
        a_layout = LayoutEnum.from_tensor(mA)
        b_layout = LayoutEnum.from_tensor(mB)
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            ab, ab, a_layout.sm90_mma_major_mode(), b_layout.sm90_mma_major_mode(), cutlass.Float32,
            (self.v.warpgroups, 1, 1), tiler_mn=(64, TILE_N))
        sA_layout = sm90_utils.make_smem_layout_a(a_layout, tile_mnk, ab, 1)
        sB_layout = sm90_utils.make_smem_layout_b(b_layout, tile_mnk, ab, 1)

        @cute.struct
        class Storage:
            sA: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sA_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sB_layout)], 1024]

        self.storage = Storage
        self.kernel(tiled_mma, mA, mB, mC, mLag, lag_trips, sA_layout, sB_layout).launch(
            grid=[ctas, 1, 1], block=[self.threads, 1, 1])

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
               mLag: cute.Tensor, lag_trips: cutlass.Int32, sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        storage = SmemAllocator().allocate(self.storage)
        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)   # (tile_m, 64, 1)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)   # (256, 64, 1)

        # The operands are read from global memory once; the speed of this copy does not matter.
        for i in cutlass.range(tidx, self.tile_m * TILE_K, self.threads, unroll=1):
            sA[i // TILE_K, i % TILE_K, 0] = mA[i // TILE_K, i % TILE_K]
        for i in cutlass.range(tidx, TILE_N * TILE_K, self.threads, unroll=1):
            sB[i // TILE_K, i % TILE_K, 0] = mB[i // TILE_K, i % TILE_K]
        # Generic-proxy stores must be visible to the async proxy that WGMMA reads through.
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_threads()

        wg = cute.arch.make_warp_uniform(warp // 4)
        thr_mma = tiled_mma.get_slice(wg * 128)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        gC = cute.local_tile(mC, (self.tile_m, TILE_N), (bidx, 0))
        # The operands are partitioned per warpgroup (descriptors), the accumulator per thread.
        tCgC = tiled_mma.get_slice(tidx).partition_C(gC)
        acc = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
        acc.fill(0.0)
        tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
        k_blocks = cute.size(tCrA, mode=[2])

        # Only the last warp of each warpgroup runs the chain. Its length is a run-time count that
        # is zero in the other warps (a plain `if` on pure arithmetic is speculated into every warp).
        my_trips = cutlass.Int32(0)
        if warp % 4 == 3:
            my_trips = lag_trips
        lag = cutlass.Float32(tidx)
        for _ in cutlass.range(self.iters, unroll=1):
            if cutlass.const_expr(self.v.lag_ffmas > 0):
                for _ in cutlass.range(my_trips, unroll=1):
                    for _ in cutlass.range_constexpr(LAG_UNROLL):
                        lag = lag * cutlass.Float32(0.999) + cutlass.Float32(0.001)
            cute.nvgpu.warpgroup.fence()
            for kb in cutlass.range_constexpr(k_blocks):
                cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, 0)], tCrB[(None, None, kb, 0)], acc)
            cute.nvgpu.warpgroup.commit_group()
            cute.nvgpu.warpgroup.wait_group(self.v.in_flight)
        cute.nvgpu.warpgroup.wait_group(0)
        cute.autovec_copy(acc, tCgC)
        # The late warp's chain is part of the result, so it is not dead code.
        mLag[bidx * self.threads + tidx] = lag


def _fake_operands(variant: Variant, ctas: int):
    tile_m = 64 * variant.warpgroups
    make = cute.runtime.make_fake_compact_tensor
    a = make(cutlass.BFloat16, (tile_m, TILE_K), stride_order=(1, 0), assumed_align=16)
    b = make(cutlass.BFloat16, (TILE_N, TILE_K), stride_order=(1, 0), assumed_align=16)
    c = make(cutlass.Float32, (ctas * tile_m, TILE_N), stride_order=(1, 0), assumed_align=16)
    lag = make(cutlass.Float32, (ctas * 128 * variant.warpgroups,), assumed_align=16)
    return a, b, c, lag


def compile_fake(variant: Variant, ctas: int = 132):
    """Compile one variant for sm_90a from fake tensors (no GPU needed)."""
    # The kept cubin goes to a scratch folder: the DSL's default is the working directory.
    options = f"--keep-cubin --dump-dir={tempfile.mkdtemp(prefix='gmma-bound-')}"
    return cute.compile(GmmaRounds(variant), *_fake_operands(variant, ctas), variant.lag_ffmas // LAG_UNROLL, ctas,
                        options=options)


def _cubin_summary(compiled) -> str:
    import subprocess
    import tempfile

    from kernelscope.toolchain.sass import disassemble_cubin
    from kernelscope.toolchain.tools import find_cuda_tool

    cubin = compiled.__cubin__
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([find_cuda_tool("cuobjdump"), "--dump-resource-usage", f.name],
                           capture_output=True, text=True)
    regs = " ".join(line.strip() for line in r.stdout.splitlines() if "REG" in line)
    sass = disassemble_cubin(cubin) or ""
    hgmma = sum(1 for line in sass.splitlines() if "HGMMA." in line)
    return f"{regs} | HGMMA in SASS: {hgmma}"


def run_on_gpu() -> int:
    import torch
    from profiled_launches import launch_once_each_profiled
    from cutlass.cute.runtime import from_dlpack

    ctas = torch.cuda.get_device_properties(0).multi_processor_count
    g = torch.Generator(device="cpu").manual_seed(0)
    launches = []
    failed = 0
    for v in VARIANTS:
        tile_m = 64 * v.warpgroups
        a = (torch.randn(tile_m, TILE_K, generator=g) * 0.25).to(torch.bfloat16).cuda()
        b = (torch.randn(TILE_N, TILE_K, generator=g) * 0.25).to(torch.bfloat16).cuda()
        c = torch.full((ctas * tile_m, TILE_N), float("nan"), device="cuda")
        lag = torch.empty(ctas * 128 * v.warpgroups, device="cuda")
        args = [from_dlpack(t, assumed_align=16) for t in (a, b, c, lag)]
        trips = v.lag_ffmas // LAG_UNROLL
        compiled = cute.compile(GmmaRounds(v), *args, trips, ctas)
        args.append(trips)
        compiled(*args)
        torch.cuda.synchronize()
        want = (ITERS * (a.float() @ b.float().t())).repeat(ctas, 1)
        # Normwise: ITERS fp32 additions of the same value; an unwritten (NaN) element fails.
        err = ((c - want).abs().max() / want.abs().max()).item()
        ok = err < 1e-3
        failed += not ok
        print(f"{v.name}: max error / max |C| vs torch {err:.3g} ({'ok' if ok else 'WRONG'})")
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        compiled(*args)
        stop.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(stop)
        flops = 2.0 * ctas * tile_m * TILE_N * TILE_K * ITERS
        print(f"{v.name}: {ms:.3f} ms, {flops / ms / 1e9:.1f} TFLOP/s (one timed launch after warm-up)")
        launches.append((v.name, lambda f=compiled, x=args: f(*x)))

    launch_once_each_profiled(torch, launches)
    return 1 if failed else 0


if __name__ == "__main__":
    if "--compile-only" in sys.argv:
        for v in VARIANTS:
            print(f"{v.name:18s} {_cubin_summary(compile_fake(v))}")
    else:
        sys.exit(run_on_gpu())
