"""GEMM on the warp-level tensor-core path: ldmatrix.x4 + mma.sync m16n8k16, no WGMMA.

C[M, N] = A[M, K] @ B[K, N], bf16 or fp16 inputs, fp32 accumulation, output in the input dtype
(row-major). A is K-major (row-major M x K); B is N-major (row-major K x N) or K-major.

This is the instruction set of SM80 and of consumer Blackwell (sm_120), which has no WGMMA;
it also runs on Hopper (sm_90a), where it is measured against cuBLAS and against the device's
own mma.sync ceiling (benchmarks/hmma_ceiling.py).

Block = `warps_m x warps_n` MMA warps + 1 load warp.
- Loads: TMA (cp.async.bulk.tensor) on both sm_90a and sm_120a. Both have the copy engine; one
  lane of the load warp moves a whole stage with two instructions, completion is counted in bytes
  on the stage's mbarrier, and the 128-byte swizzle that makes ldmatrix conflict-free is applied
  by the copy itself. cp.async (SM80) would spend every thread on address math and needs a
  commit/wait-group pipeline instead of barriers; it is only needed on parts without TMA.
- Stages: a ring of `stages` A/B buffers with two mbarriers each (full: TMA bytes landed;
  empty: every MMA warp has read the stage). Waiters pass the parity of the phase they expect
  (kernels/sm90_pipeline.py's TmaRing, used with a cluster of one).
- MMA warps: each owns a (tile_m / warps_m) x (tile_n / warps_n) piece of the output. Per 16-deep
  k-block it loads its A and B fragments from shared memory with ldmatrix.x4 (.trans for N-major B)
  and issues mma.sync m16n8k16. Fragment loads run `wk_iters` k-blocks ahead of the MMAs, across
  stage boundaries; with wk_iters = tile_k / 16 every k-iteration of a stage is held in registers
  and the stage goes back to the load warp right after its last ldmatrix, before its MMAs.
- Persistent grid: as many blocks as SMs times the blocks that fit on one SM, computed from the
  compiled kernel's registers, its shared memory and its thread count (one for every shipped
  config); blocks stride over the output tiles in row, column or Morton order
  (kernels/tile_scheduler.py).
- Epilogue: accumulators rounded to the output dtype and stored straight from registers, two
  adjacent columns per store, masked at the M and N edges.
Partial tiles: TMA zero-fills out-of-range loads, so K, M and N need no multiple of the tile; the
contiguous extent of A and B must be a multiple of 8 elements (16-byte TMA strides), N even.
"""


import functools
import os
import tempfile
from dataclasses import asdict, dataclass
from typing import Any, Callable

from kernelscope.kernels import gemm_problem
from kernelscope.kernels.cute_build import (
    artifact_options, artifacts, compiled_kernel, current_stream, cutlass_dtype, dtype_name, fake_gemm_operands,
    fake_stream, gpu_available, to_cute)
from kernelscope.kernels.gemm_problem import (
    make_inputs, problem_dims, reference_fp32, reject_unknown_keys, torch_reference)
from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec

DTYPES = ("bfloat16", "float16")
B_MAJORS = ("n", "k")          # B is K x N: "n" = row-major (N contiguous), "k" = column-major
RASTERS = {"row": "n", "column": "m", "morton": "morton"}
ARCHS = ("sm_90a", "sm_120a")
# Shared memory a block may use (opt-in maximum) per architecture, and per-SM limits used to
# derive how many blocks are resident at once.
SMEM_PER_BLOCK = {"sm_90a": 232448, "sm_120a": 101376}
SMEM_PER_SM = {"sm_90a": 233472, "sm_120a": 102400}
REGISTERS_PER_SM = 65536
THREADS_PER_SM = {"sm_90a": 2048, "sm_120a": 1536}
MAX_BLOCKS_PER_SM = 32
SMEM_RESERVED = 1024           # barrier words and alignment slack beside the operand ring
MMA_K = 16


@dataclass(frozen=True)
class MmaGemmConfig:
    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    warps_m: int = 2
    warps_n: int = 4
    wk_iters: int = 1               # k-blocks (16 deep) of fragments held in registers ahead of the MMAs
    stages: int | None = None       # None: as many as shared memory holds (at most 6)
    raster: str = "row"             # "row", "column" or "morton"
    group: int = 8                  # panel width (row/column) or Morton block side, in tiles
    refill_at: int = 0              # k-block of each k-tile at which warp 0 issues the next TMA load

    @classmethod
    def from_mapping(cls, cfg: dict[str, Any] | None) -> "MmaGemmConfig":
        cfg = {k: v for k, v in dict(cfg or {}).items() if k not in ("b_major",)}
        reject_unknown_keys(cfg, cls, "gemm_mma")
        return cls(**cfg)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def mma_warps(self) -> int:
        return self.warps_m * self.warps_n

    @property
    def threads(self) -> int:
        return 32 * self.mma_warps

    @property
    def k_blocks(self) -> int:
        return self.tile_k // MMA_K


@dataclass(frozen=True)
class ResolvedMmaGemm:
    cfg: MmaGemmConfig
    arch: str
    stages: int
    smem_bytes: int


def resolve_config(cfg: MmaGemmConfig, arch: str = "sm_90a") -> ResolvedMmaGemm:
    """Check a config for an architecture and derive the ring depth; ConfigRejected says why not."""
    from kernelscope.kernels.tile_scheduler import SchedulePolicy

    if arch not in ARCHS:
        raise ConfigRejected(f"gemm_mma builds for {', '.join(ARCHS)}, not {arch}")
    if cfg.tile_k != 64:
        raise ConfigRejected(f"tile_k must be 64 (one 128-byte swizzled row of 16-bit data), got {cfg.tile_k}")
    if cfg.warps_m < 1 or cfg.warps_n < 1 or cfg.mma_warps > 16:
        raise ConfigRejected(f"warps_m x warps_n must be 1..16 warps, got {cfg.warps_m}x{cfg.warps_n}")
    # Each warp's piece is whole ldmatrix.x4 loads: 16 rows of A, 16 columns of B.
    if cfg.tile_m % (16 * cfg.warps_m) or cfg.tile_m > 256:
        raise ConfigRejected(f"tile_m={cfg.tile_m} must be a multiple of 16 x warps_m={cfg.warps_m} and at most 256")
    if cfg.tile_n % (16 * cfg.warps_n) or cfg.tile_n > 256 or cfg.tile_n % 64:
        raise ConfigRejected(
            f"tile_n={cfg.tile_n} must be a multiple of 64 and of 16 x warps_n={cfg.warps_n}, at most 256")
    if cfg.wk_iters not in range(1, cfg.k_blocks + 1) or cfg.k_blocks % cfg.wk_iters:
        raise ConfigRejected(
            f"wk_iters={cfg.wk_iters} must divide the {cfg.k_blocks} k-blocks of a {cfg.tile_k}-deep stage")
    # The refill must come no later than the k-block at which the fragment loads wait for the next
    # stage: with two stages that next stage is the one being refilled.
    if cfg.refill_at not in range(cfg.k_blocks - cfg.wk_iters + 1):
        raise ConfigRejected(
            f"refill_at={cfg.refill_at} must be a k-block index no later than k_blocks - wk_iters = "
            f"{cfg.k_blocks - cfg.wk_iters}, where the next stage is waited for")
    if cfg.raster not in RASTERS:
        raise ConfigRejected(f"raster must be one of {sorted(RASTERS)}, got {cfg.raster!r}")
    why = SchedulePolicy((1, 1), RASTERS[cfg.raster], cfg.group).validate()
    if why:
        raise ConfigRejected(why)
    acc_regs = cfg.tile_m * cfg.tile_n // (32 * cfg.mma_warps)
    if acc_regs > 192:
        raise ConfigRejected(
            f"{acc_regs} fp32 accumulators per thread (tile {cfg.tile_m}x{cfg.tile_n} over "
            f"{cfg.mma_warps} warps) leave no registers for fragments; use more warps or a smaller tile")
    stage_bytes = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * 2
    capacity = SMEM_PER_BLOCK[arch]
    fit = (capacity - SMEM_RESERVED) // stage_bytes
    if cfg.stages is None:
        stages = min(fit, 6)
        if stages < 2:
            raise ConfigRejected(
                f"tile {cfg.tile_m}x{cfg.tile_n}x{cfg.tile_k} leaves room for {fit} stage(s) in "
                f"{capacity} bytes of shared memory on {arch}; at least 2 are needed")
    else:
        stages = cfg.stages
        if stages < 2:
            raise ConfigRejected(f"stages must be at least 2, got {stages}")
        if stages > fit:
            raise ConfigRejected(
                f"{stages} stages of {cfg.tile_m}x{cfg.tile_n}x{cfg.tile_k} need "
                f"{stages * stage_bytes + SMEM_RESERVED} bytes of shared memory, {arch} allows "
                f"{capacity} per block (at most {fit} stages fit)")
    return ResolvedMmaGemm(cfg, arch, stages, stages * stage_bytes + SMEM_RESERVED)


def resident_blocks_per_sm(registers: int, threads: int, smem_bytes: int, arch: str = "sm_90a") -> int:
    """Blocks of this kernel one SM holds at once, from its own resource usage: registers are
    allocated per warp in units of 256, shared memory per block plus 1 KiB the system reserves."""
    warps = -(-threads // 32)
    regs_per_warp = -(-max(registers, 1) * 32 // 256) * 256
    by_regs = REGISTERS_PER_SM // (regs_per_warp * warps)
    by_smem = SMEM_PER_SM[arch] // (smem_bytes + 1024) if smem_bytes else MAX_BLOCKS_PER_SM
    by_threads = THREADS_PER_SM[arch] // (warps * 32)
    return max(0, min(by_regs, by_smem, by_threads, MAX_BLOCKS_PER_SM))


def check_shape(shape: dict[str, int], dtype: str, b_major: str = "n"):
    M, N, K = problem_dims(shape, "gemm_mma")
    if dtype not in DTYPES:
        raise ConfigRejected(f"input dtype must be one of {DTYPES}, got {dtype}")
    if b_major not in B_MAJORS:
        raise ConfigRejected(f"b_major must be one of {B_MAJORS}, got {b_major!r}")
    b_contig = N if b_major == "n" else K
    if K % 8 or b_contig % 8:
        raise ConfigRejected(
            f"TMA needs 16-byte aligned rows: K={K} and the contiguous extent of B ({b_contig}) "
            "must be multiples of 8 elements")
    if N % 2:
        raise ConfigRejected(f"N={N} must be even (the epilogue stores column pairs)")
    return M, N, K


# ---------------------------------------------------------------------------------------------
# The kernel (cutlass is imported lazily: the module stays importable where the DSL is missing).
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _kernel_class():
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import warpgroup
    from cutlass.memory import SmemAllocator

    from kernelscope.kernels.sm90_pipeline import TmaRing, make_tma_load, publish_ring_init
    from kernelscope.kernels.tile_scheduler import SchedulePolicy, TileScheduler

    def smem_layout(dtype, rows: int, depth: int, stages: int, contiguous_rows: bool):
        """Staged (rows, depth, stages) layout in 128-byte swizzled atoms, the layout TMA writes
        with SWIZZLE_128B. contiguous_rows: the row index is the contiguous one (N-major B)."""
        kind = warpgroup.SmemLayoutAtomKind.MN_SW128 if contiguous_rows else warpgroup.SmemLayoutAtomKind.K_SW128
        atom = warpgroup.make_smem_layout_atom(kind, dtype)
        return cute.tile_to_shape(atom, (rows, depth, stages), order=(1, 0, 2) if contiguous_rows else (0, 1, 2))

    class MmaSyncGemm:
        """One compiled variant: (config, dtype, B major, arch). Problem sizes stay dynamic."""

        def __init__(self, resolved: ResolvedMmaGemm, dtype: str, b_major: str):
            cfg = resolved.cfg
            self.cfg = cfg
            self.stages = resolved.stages
            self.dtype = cutlass_dtype(dtype)
            self.b_n_major = b_major == "n"
            self.tile = (cfg.tile_m, cfg.tile_n, cfg.tile_k)
            self.policy = SchedulePolicy((1, 1), RASTERS[cfg.raster], cfg.group)

        @cute.jit
        def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
                     grid_blocks: cutlass.Int32, stream):
            cfg = self.cfg
            bm, bn, bk = self.tile
            op = cute.nvgpu.warp.MmaF16BF16Op(self.dtype, cutlass.Float32, (16, 8, 16))
            # N permuted by 16 per warp: one ldmatrix.x4 of B feeds two n8 MMAs.
            tiled_mma = cute.make_tiled_mma(op, cute.make_layout((cfg.warps_m, cfg.warps_n, 1)),
                                            permutation_mnk=(cfg.warps_m * 16, cfg.warps_n * 16, 16))
            sA_layout = smem_layout(self.dtype, bm, bk, self.stages, False)
            sB_layout = smem_layout(self.dtype, bn, bk, self.stages, self.b_n_major)
            tma_a, tA = make_tma_load(mA, sA_layout, (bm, bk), 1)
            tma_b, tB = make_tma_load(mB, sB_layout, (bn, bk), 1)

            tiles_m = (mC.shape[0] + bm - 1) // bm
            tiles_n = (mC.shape[1] + bn - 1) // bn
            sched = TileScheduler(self.policy, tiles_m, tiles_n)
            blocks = cutlass.max(cutlass.min(sched.num_work, grid_blocks), 1)

            @cute.struct
            class Storage:
                barriers: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
                sA: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024]
                sB: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024]

            self.storage = Storage
            self.kernel(tma_a, tA, tma_b, tB, mC, tiled_mma, sA_layout, sB_layout,
                        tiles_m, tiles_n).launch(
                grid=[blocks, 1, 1], block=[cfg.threads, 1, 1], min_blocks_per_mp=1, stream=stream)

        @cute.kernel
        def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
                   mC: cute.Tensor, tiled_mma: cute.TiledMma,
                   sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
                   tiles_m: cutlass.Int32, tiles_n: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            lane = cute.arch.lane_idx()
            block, _, _ = cute.arch.block_idx()
            num_blocks, _, _ = cute.arch.grid_dim()
            bm, bn, bk = self.tile
            kb = self.cfg.k_blocks
            wk = self.cfg.wk_iters

            if warp_idx == 0:
                cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
                cute.nvgpu.cpasync.prefetch_descriptor(tma_b)

            smem = SmemAllocator()
            storage = smem.allocate(self.storage)
            stage_bytes = (cute.size_in_bytes(self.dtype, cute.slice_(sA_layout, (None, None, 0)))
                           + cute.size_in_bytes(self.dtype, cute.slice_(sB_layout, (None, None, 0))))
            ring = TmaRing(storage.barriers.data_ptr(), self.stages, stage_bytes,
                           consumer_warps=self.cfg.mma_warps, cluster_mn=(1, 1))
            ring.init(warp_idx)
            publish_ring_init(ring)

            sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
            sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)
            gA = cute.local_tile(mA, (bm, bk), (None, None))      # (bm, bk, tiles_m, tiles_k)
            gB = cute.local_tile(mB, (bn, bk), (None, None))      # (bn, bk, tiles_n, tiles_k)
            gC = cute.local_tile(mC, (bm, bn), (None, None))      # (bm, bn, tiles_m, tiles_n)
            k_tiles = cute.size(gA, mode=[3])
            sched = TileScheduler(self.policy, tiles_m, tiles_n)

            tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
                tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
            tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
                tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
            # Warp 0 keeps the ring `ahead` k-tiles in front of the MMA loop (stages - 1, or fewer
            # when K is short, so that loads run at most one work tile ahead): the first ones now.
            ahead = cutlass.min(k_tiles, self.stages - 1)
            if block < sched.num_work:
                tm0, tn0 = sched.tile_of_cta(block, 0, 0)
                for s0 in cutlass.range_constexpr(self.stages - 1):
                    if s0 < ahead:
                        self.start_load(warp_idx, ring, cutlass.Int32(s0), cutlass.Int32(1), tm0, tn0,
                                        cutlass.Int32(s0), tma_a, tAgA, tAsA, tma_b, tBgB, tBsB)

            thr_mma = tiled_mma.get_slice(tidx)
            tCsA = thr_mma.partition_A(sA)                      # (V, MMA_M, MMA_K, stages)
            tCsB = thr_mma.partition_B(sB)
            tCrA = tiled_mma.make_fragment_A(tCsA[None, None, None, 0])   # (V, MMA_M, MMA_K)
            tCrB = tiled_mma.make_fragment_B(tCsB[None, None, None, 0])
            acc = tiled_mma.make_fragment_C(thr_mma.partition_C(gC[(None, None, 0, 0)]))

            ldsm_a = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(False, 4), self.dtype)
            ldsm_b = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(self.b_n_major, 4), self.dtype)
            s2r_a = cute.make_tiled_copy_A(ldsm_a, tiled_mma)
            s2r_b = cute.make_tiled_copy_B(ldsm_b, tiled_mma)
            thr_s2r_a = s2r_a.get_slice(tidx)
            thr_s2r_b = s2r_b.get_slice(tidx)
            tXsA = thr_s2r_a.partition_S(sA)                    # (CPY, CPY_M, CPY_K, stages)
            tXrA = thr_s2r_a.retile(tCrA)
            tXsB = thr_s2r_b.partition_S(sB)
            tXrB = thr_s2r_b.retile(tCrB)

            signals, dst = ring.release_signal(0, lane)
            stage = cutlass.Int32(0)
            phase = cutlass.Int32(0)
            work = block
            while work < sched.num_work:
                # Tile coordinates here, where no accumulator is live: this one (for the epilogue
                # and the loads still in it) and the next one (for loads that run into it).
                tm, tn = sched.tile_of_cta(work, 0, 0)
                next_valid = work + num_blocks < sched.num_work
                tm_next, tn_next = sched.tile_of_cta(work + num_blocks, 0, 0)
                acc.fill(0.0)
                # Prologue: the first wk_iters k-blocks of the tile's first stage.
                ring.consumer_wait(stage, phase)
                for t in cutlass.range_constexpr(wk):
                    self.load_fragments(s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, stage, t)
                    if cutlass.const_expr(t == kb - 1):
                        ring.consumer_release(stage, signals, dst)
                # Every stage but the tile's last: fragment loads run ahead into the next stage.
                for k in range(k_tiles - 1):
                    nxt_stage = stage + 1
                    nxt_phase = phase
                    if nxt_stage == self.stages:
                        nxt_stage = cutlass.Int32(0)
                        nxt_phase ^= 1
                    for j in cutlass.range_constexpr(kb):
                        if cutlass.const_expr(j == self.cfg.refill_at):
                            # Refill the stage consumed one k-tile ago, once every warp released it;
                            # later in the k-tile gives slower warps time to get there first.
                            self.issue_load(warp_idx, ring, k, stage, phase, ahead, k_tiles, tm, tn,
                                            tm_next, tn_next, next_valid, tma_a, tAgA, tAsA, tma_b,
                                            tBgB, tBsB)
                        target = j + wk
                        ahead_stage = stage if target < kb else nxt_stage
                        t = target % kb
                        if cutlass.const_expr(target == kb):
                            ring.consumer_wait(nxt_stage, nxt_phase)
                        if cutlass.const_expr(target - kb == j):
                            # The fragments of k-block j are replaced: multiply first.
                            self.mma(tiled_mma, acc, tCrA, tCrB, j)
                            self.load_fragments(s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, ahead_stage, t)
                        else:
                            self.load_fragments(s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, ahead_stage, t)
                            self.mma(tiled_mma, acc, tCrA, tCrB, j)
                        if cutlass.const_expr(t == kb - 1):
                            ring.consumer_release(ahead_stage, signals, dst)
                    stage = nxt_stage
                    phase = nxt_phase
                # The tile's last stage: no next stage to run ahead into. Its refill is issued after
                # its MMAs, where no fragment is live (the registers are tightest right here).
                for j in cutlass.range_constexpr(kb):
                    target = j + wk
                    if cutlass.const_expr(target < kb):
                        self.load_fragments(s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, stage, target)
                        if cutlass.const_expr(target == kb - 1):
                            ring.consumer_release(stage, signals, dst)
                    self.mma(tiled_mma, acc, tCrA, tCrB, j)
                self.issue_load(warp_idx, ring, k_tiles - 1, stage, phase, ahead, k_tiles, tm, tn,
                                tm_next, tn_next, next_valid, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB)
                stage += 1
                if stage == self.stages:
                    stage = cutlass.Int32(0)
                    phase ^= 1

                self.store_tile(thr_mma, acc, gC[(None, None, tm, tn)],
                                (mC.shape[0] - tm * bm, mC.shape[1] - tn * bn))
                work += num_blocks

        @cute.jit
        def issue_load(self, warp_idx, ring, k, stage, phase, ahead, k_tiles, tm, tn, tm_next, tn_next,
                       next_valid, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB):
            """Warp 0, once per k-tile of the MMA loop at (k, stage, phase): load the k-tile
            `ahead` positions further on, in this work tile or the next one. Its stage and
            barrier parity follow from the MMA loop's, so no load state is carried."""
            if warp_idx == 0:
                load_k = k + ahead
                load_tm = tm
                load_tn = tn
                valid = next_valid | (load_k < k_tiles)
                if load_k >= k_tiles:
                    load_k = load_k - k_tiles
                    load_tm = tm_next
                    load_tn = tn_next
                if valid:
                    load_stage = stage + ahead
                    # The load warp's pass through the ring is one ahead of the MMA loop's
                    # (it starts at parity 1) until the load position wraps around the ring.
                    load_phase = phase ^ 1
                    if load_stage >= self.stages:
                        load_stage = load_stage - self.stages
                        load_phase = phase
                    self.start_load(warp_idx, ring, load_stage, load_phase, load_tm, load_tn, load_k,
                                    tma_a, tAgA, tAsA, tma_b, tBgB, tBsB)

        @cute.jit
        def start_load(self, warp_idx, ring, stage, phase, tm, tn, k, tma_a, tAgA, tAsA,
                       tma_b, tBgB, tBsB):
            """Warp 0: wait until `stage` is free (parity `phase`), then TMA one A and one B k-tile."""
            if warp_idx == 0:
                ring.producer_acquire(stage, phase)
                bar = ring.full_barrier(stage)
                cute.copy(tma_a, tAgA[(None, tm, k)], tAsA[(None, stage)], tma_bar_ptr=bar)
                cute.copy(tma_b, tBgB[(None, tn, k)], tBsB[(None, stage)], tma_bar_ptr=bar)

        @cute.jit
        def load_fragments(self, s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, stage, k_block: cutlass.Constexpr):
            cute.copy(s2r_a, tXsA[None, None, k_block, stage], tXrA[None, None, k_block])
            cute.copy(s2r_b, tXsB[None, None, k_block, stage], tXrB[None, None, k_block])

        @cute.jit
        def mma(self, tiled_mma, acc, tCrA, tCrB, k_block: cutlass.Constexpr):
            cute.gemm(tiled_mma, acc, tCrA[None, None, k_block], tCrB[None, None, k_block], acc)

        @cute.jit
        def store_tile(self, thr_mma, acc, gC_tile, residue_mn):
            """Round and store this thread's accumulators: each pair of adjacent columns (mode 0's
            first sub-mode) is one 32-bit store; rows and columns past the residue are skipped."""
            bm, bn, _ = self.tile
            tCgC = thr_mma.partition_C(gC_tile)
            tCcC = thr_mma.partition_C(cute.make_identity_tensor((bm, bn)))
            pair = cute.make_rmem_tensor(cute.make_layout(2), self.dtype)
            for h in cutlass.range_constexpr(cute.size(acc, mode=[0, 1])):
                for i in cutlass.range_constexpr(cute.size(acc, mode=[1])):
                    for j in cutlass.range_constexpr(cute.size(acc, mode=[2])):
                        if cute.elem_less(tCcC[((0, h), i, j)], residue_mn):
                            pair.store(acc[((None, h), i, j)].load().to(self.dtype))
                            cute.autovec_copy(pair, tCgC[((None, h), i, j)])

    return MmaSyncGemm


# ---------------------------------------------------------------------------------------------
# Compile / launch
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def _compiled(cfg: MmaGemmConfig, dtype: str, b_major: str, arch: str, use_gpu_tensors: bool):
    """Compile one variant. With a GPU the signature comes from real (dynamic-layout) tensors, so
    the result is directly callable with from_dlpack tensors; without, from fake tensors."""
    import cutlass.cute as cute

    resolved = resolve_config(cfg, arch)
    gemm = _kernel_class()(resolved, dtype, b_major)
    if use_gpu_tensors:
        a, b_nk, c = _example_inputs(dtype, b_major)
        args = [to_cute(a), to_cute(b_nk), to_cute(c)]
        stream = current_stream()
    else:
        args = list(fake_gemm_operands(dtype, dtype, "k", b_major))
        stream = fake_stream()
    compiled = cute.compile(gemm, *args, 1, stream, options=artifact_options("kernelscope-gemm-mma-", arch))
    return compiled, resolved


def _example_inputs(dtype, b_major, M=256, N=256, K=256):
    import torch
    tdt = getattr(torch, dtype)
    a = torch.empty((M, K), dtype=tdt, device="cuda")
    b_nk = torch.empty((K, N), dtype=tdt, device="cuda").t() if b_major == "n" else \
        torch.empty((N, K), dtype=tdt, device="cuda")
    c = torch.empty((M, N), dtype=tdt, device="cuda")
    return a, b_nk, c


def kernel_resources(cfg: MmaGemmConfig, dtype: str = "bfloat16", b_major: str = "n",
                     arch: str = "sm_90a", compiled=None) -> dict[str, int]:
    """Registers per thread, shared memory per block and the resident blocks per SM that follow,
    read from the compiled cubin (cuobjdump's resource report)."""
    resolved = resolve_config(cfg, arch)
    if compiled is None:
        compiled, _ = _compiled(cfg, dtype, b_major, arch, False)
    cubin, _ = artifacts(compiled)
    return _resources_of(cubin, cfg.threads, resolved.smem_bytes, arch)


@functools.lru_cache(maxsize=64)
def _resources_of(cubin: bytes, threads: int, ring_bytes: int, arch: str) -> dict[str, int]:
    from kernelscope.toolchain.cubin import function_resources

    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        resources, _ = function_resources(f.name)
    fn = next(r for r in resources.values() if r.registers is not None)
    # The ring is dynamic shared memory: the cubin's static figure does not include it.
    smem = ring_bytes + (fn.shared_bytes or 0)
    blocks = resident_blocks_per_sm(fn.registers, threads, smem, arch)
    return {"registers": fn.registers, "threads": threads, "smem_bytes": smem,
            "local_bytes": fn.local_bytes or 0, "stack_bytes": fn.stack_bytes or 0,
            "resident_blocks_per_sm": blocks}


def persistent_grid(cfg: MmaGemmConfig, dtype: str, b_major: str, compiled=None) -> tuple[int, dict[str, int]]:
    """Blocks to launch: the SM count times the blocks one SM holds (one for the shipped configs),
    from the kernel's own registers, shared memory and threads."""
    import torch
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    arch = _device_arch()
    res = kernel_resources(cfg, dtype, b_major, arch, compiled)
    if res["resident_blocks_per_sm"] < 1:
        raise ConfigRejected(f"gemm_mma {cfg}: no block fits on an SM ({res})")
    return props.multi_processor_count * res["resident_blocks_per_sm"], res


def compile_gemm_mma(config: dict[str, Any] | MmaGemmConfig | None, shape: dict[str, int] | None = None,
                     dtype: str = "bfloat16", arch: str = "sm_90a", *, b_major: str = "n") -> CompiledKernel:
    """KernelSpec.compile: builds without a GPU (launch=None then) for sm_90a or sm_120a."""
    if arch not in ARCHS:
        raise ConfigRejected(f"gemm_mma builds for {', '.join(ARCHS)}, not {arch}")
    os.environ.setdefault("CUTE_DSL_ARCH", arch)
    extra = dict(config) if isinstance(config, dict) else {}
    b_major = extra.get("b_major", b_major)
    cfg = config if isinstance(config, MmaGemmConfig) else MmaGemmConfig.from_mapping(extra)
    if shape is not None:
        check_shape(shape, dtype, b_major)
    resolve_config(cfg, arch)
    compiled, _ = _compiled(cfg, dtype, b_major, arch, False)
    runs_here = gpu_available() and arch == _device_arch()
    return compiled_kernel(compiled, (lambda inputs: bind_gemm_mma(cfg, inputs)) if runs_here else None)


def bind_gemm_mma(cfg: MmaGemmConfig, inputs) -> Callable[[], Any]:
    """Zero-argument launcher for {"a": (M, K), "b": (K, N), "out": (M, N)} (GPU only); the
    variant follows the tensors (dtype, B major), compiled once and cached."""
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    dtype = dtype_name(a.dtype)
    if b.dtype != a.dtype or out.dtype != a.dtype:
        raise ConfigRejected(f"A, B and out must share a dtype, got {a.dtype}, {b.dtype}, {out.dtype}")
    if a.stride(1) != 1:
        raise ConfigRejected("gemm_mma needs A row-major (K contiguous)")
    if out.stride(1) != 1:
        raise ConfigRejected("the output must be row-major")
    b_major = "n" if b.stride(1) == 1 else "k"
    M, K = a.shape
    K2, N = b.shape
    if K2 != K or tuple(out.shape) != (M, N):
        raise ConfigRejected(f"shapes do not chain: A {tuple(a.shape)}, B {tuple(b.shape)}, out {tuple(out.shape)}")
    check_shape({"M": M, "N": N, "K": K}, dtype, b_major)
    arch = _device_arch()
    resolve_config(cfg, arch)
    compiled, _ = _compiled(cfg, dtype, b_major, arch, True)
    blocks, _ = persistent_grid(cfg, dtype, b_major, compiled)
    args = (to_cute(a), to_cute(b.t()), to_cute(out), blocks, current_stream())
    return lambda: compiled(*args)


def _device_arch() -> str:
    import torch
    return "sm_120a" if torch.cuda.get_device_properties(torch.cuda.current_device()).major == 12 else "sm_90a"


# ---------------------------------------------------------------------------------------------
# KernelSpec
# ---------------------------------------------------------------------------------------------

def _make_spec() -> KernelSpec:
    return KernelSpec(
        name="gemm_mma",
        description="ldmatrix.x4 + mma.sync m16n8k16 GEMM (the SM80/SM120 path): TMA stage ring, "
                    "persistent grid, row/column/Morton raster",
        references=["cublas"],
        default_shapes=[dict(s) for s in gemm_problem.SUITE],
        default_config=MmaGemmConfig().to_dict(),
        dtypes=list(DTYPES),
        make_inputs=make_inputs,
        compile=compile_gemm_mma,
        reference_fp32=reference_fp32,
        flops=gemm_problem.flops,
        bytes_moved=gemm_problem.bytes_moved,          # the output has the input dtype
        tolerance={"bfloat16": (1e-2, 1e-2), "float16": (5e-3, 5e-3)},
        config_space={
            "tile_n": [128, 256],
            "warps_n": [2, 4],
            "wk_iters": [1, 2, 4],
            "stages": [None, 3, 4],
            "raster": ["row", "column", "morton"],
            "group": [4, 8, 16],
            "refill_at": [0, 1, 2],
        },
        expected_sass=["HMMA", "LDSM", "UTMALDG"],
        archs=list(ARCHS),
        output_dims=("row", "col"),
        tile=(128, 256),
        torch_reference=torch_reference,
        output="out",
    )


GEMM_MMA_SPEC = _make_spec()
