"""The Hopper GEMM kernel class (see the package docstring for the design). Imports the DSL:
kernels/gemm/__init__.py imports this module only when it compiles."""

from typing import Optional

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

from kernelscope.kernels.cute_build import cutlass_dtype
from kernelscope.kernels.sm90.barriers import GemmBarrier
from kernelscope.kernels.sm90.epilogue import TmaStoreEpilogue
from kernelscope.kernels.sm90.pipeline import RingPosition
from kernelscope.kernels.sm90.split_k import SplitKExchange, StreamKExchange
from kernelscope.kernels.sm90.tile_scheduler import TileScheduler
from kernelscope.kernels.sm90.warp_specialized import WarpSpecializedGemm


class HopperGemm(WarpSpecializedGemm):
    """One compiled variant: (config, dtypes, majors). Problem sizes stay dynamic."""

    def __init__(self, resolved, ab_dtype: str, c_dtype: str):
        cfg = resolved.cfg
        self.cfg = cfg
        self.stages = resolved.stages
        self.ab_dtype = cutlass_dtype(ab_dtype)
        self.c_dtype = cutlass_dtype(c_dtype)
        self.tile_mnk = (cfg.tile_m, cfg.tile_n, cfg.tile_k)
        self.cluster_mn = tuple(cfg.cluster)
        self.cluster_size = cfg.cluster[0] * cfg.cluster[1]
        self.policy = cfg.schedule_policy()
        self.load_hints = (cfg.a_load_hint, cfg.b_load_hint)
        self.consumer_wgs = cfg.consumer_wgs
        self.threads = 128 * (1 + cfg.consumer_wgs)
        self.consumer_threads = 128 * cfg.consumer_wgs
        self.consumer_regs = 232 if cfg.consumer_wgs == 2 else 240
        # A split-K capable variant: which tiles are split is decided per launch (split_from,
        # slices); other variants compile exactly as before split-K existed.
        self.split_k = (SplitKExchange(self.consumer_threads)
                        if cfg.split_k_capable() and not cfg.stream_k else None)
        # Stream-K capable: which tiles are shared out is decided per launch (split_from).
        self.stream_k = StreamKExchange(self.consumer_threads, self.cluster_size) if cfg.stream_k else None
        self.stream_k_layout = cfg.stream_k_layout if cfg.stream_k else False
        self.epilogue = TmaStoreEpilogue(
            self.c_dtype, (cfg.tile_m, cfg.tile_n), cfg.epi_n, resolved.epi_stages,
            consumer_threads=self.consumer_threads, store_warp=4, barrier_id=GemmBarrier.EPILOGUE,
            epi_m=resolved.epi_m)
        # Each CTA's last tile: stored through the ring's shared memory, which no load needs
        # any more by then, in wider subtiles with a buffer each (config ring_epi_n).
        self.ring_epilogue = (TmaStoreEpilogue(
            self.c_dtype, (cfg.tile_m, cfg.tile_n), cfg.ring_epi_n, resolved.ring_subtiles,
            consumer_threads=self.consumer_threads, store_warp=4, barrier_id=GemmBarrier.EPILOGUE,
            epi_m=resolved.epi_m, buffer_each=True) if resolved.ring_subtiles else None)

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
                 max_clusters: cutlass.Int32, stream,
                 partials: cute.Tensor = None, counters: cute.Tensor = None,
                 split_from: cutlass.Int32 = 0, slices: cutlass.Int32 = 1):
        """partials, counters, split_from, slices: the split-K workspace and plan
        (kernels/sm90/split_k.py, kernels/split_k_plan.py), for split-K capable variants only."""
        a_layout = LayoutEnum.from_tensor(mA)
        b_layout = LayoutEnum.from_tensor(mB)
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, a_layout.sm90_mma_major_mode(),
            b_layout.sm90_mma_major_mode(), cutlass.Float32,
            (self.consumer_wgs, 1, 1), tiler_mn=(64, self.tile_mnk[1]))

        sA_layout, sB_layout = self.make_ab_smem_layouts(a_layout, b_layout)
        sC_layout = self.epilogue.make_smem_layout()
        tma_a, tA, tma_b, tB = self.make_tma_loads(mA, sA_layout, mB, sB_layout)
        tma_c, tC = self.epilogue.make_tma_store(mC, sC_layout)
        tma_cr, tCr, sCr_layout = None, None, None
        if cutlass.const_expr(self.ring_epilogue is not None):
            sCr_layout = self.ring_epilogue.make_smem_layout()
            tma_cr, tCr = self.ring_epilogue.make_tma_store(mC, sCr_layout)
        if cutlass.const_expr(self.split_k is None and self.stream_k is None):
            # Not passed on: the kernel of a variant without split-K has no such parameters.
            split_from, slices = None, None
        tiles_m, tiles_n, clusters = self.persistent_grid(mC, max_clusters, split_from, slices,
                                                          stream_k=self.stream_k_layout)

        self.storage = self.shared_storage(sA_layout, sB_layout, self.c_dtype, sC_layout)
        self.launch(self.kernel(tma_a, tA, tma_b, tB, tma_c, tC, tiled_mma,
                                sA_layout, sB_layout, sC_layout, tiles_m, tiles_n,
                                partials, counters, split_from, slices, tma_cr, tCr, sCr_layout),
                    clusters, stream)

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
               tma_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma,
               sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
               sC_layout: cute.ComposedLayout, tiles_m: cutlass.Int32, tiles_n: cutlass.Int32,
               partials: cute.Tensor, counters: cute.Tensor, split_from: Optional[cutlass.Int32],
               slices: Optional[cutlass.Int32], tma_cr: Optional[cute.CopyAtom],
               mCr: Optional[cute.Tensor], sCr_layout: Optional[cute.ComposedLayout]):
        tidx, warp_idx, lane, cta_x, cta_y, cluster_id, num_clusters, cta_rank = self.thread_coordinates()
        self.prefetch_descriptors(warp_idx, (tma_a, tma_b, tma_c))
        if cutlass.const_expr(self.ring_epilogue is not None):
            self.prefetch_descriptors(warp_idx, (tma_cr,))

        storage = SmemAllocator().allocate(self.storage)
        ring = self.open_ring(storage.barriers.data_ptr(), warp_idx, sA_layout, sB_layout,
                              consumer_warps=4 * self.consumer_wgs)

        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)
        sC = storage.sC.get_tensor(sC_layout.outer, swizzle=sC_layout.inner)
        gA, gB, gC, k_tiles = self.global_tiles(mA, mB, mC)
        ring_store = None
        if cutlass.const_expr(self.ring_epilogue is not None):
            # At the ring's base: sB follows sA with no gap (both 1024-aligned, whole 1024-byte
            # stages), and resolve_config checked that the tile fits in both.
            sCr = storage.sA.get_tensor(sCr_layout.outer, swizzle=sCr_layout.inner, dtype=self.c_dtype)
            ring_store = (tma_cr, sCr, cute.local_tile(mCr, self.tile_mnk[:2], (None, None)))
        sched = TileScheduler(self.policy, tiles_m, tiles_n, split_from, slices,
                              stream_k=self.stream_k_layout)

        if warp_idx < self.PRODUCER_WARPS:
            # A multicasts to the CTAs of this cluster row (same cta_x), B to its column.
            self.run_producer(warp_idx, ring, sched, k_tiles, tma_a, sA, gA, tma_b, sB, gB,
                              cta_x, cta_y, cluster_id, num_clusters)
        else:
            cute.arch.setmaxregister_increase(self.consumer_regs)
            self.consume(tiled_mma, tma_c, sA, sB, sC, gC, ring, sched, k_tiles, tidx - 128, warp_idx,
                         lane, cta_rank, cta_x, cta_y, cluster_id, num_clusters,
                         tiles_m, tiles_n, partials, counters, ring_store)

    @cute.jit
    def consume(self, tiled_mma, tma_c, sA, sB, sC, gC, ring, sched, k_tiles, ctidx, warp_idx, lane,
                cta_rank, cta_x, cta_y, cluster_id, num_clusters, tiles_m, tiles_n, partials, counters,
                ring_store=None):
        """A consumer warpgroup: WGMMAs from shared memory over the ring, then the epilogue.
        ring_store: (TMA atom, staged buffers in the ring, gC) of the last tile's store, or None."""
        # Warp-uniform, so the WGMMA descriptors of A stay on the uniform datapath.
        wg = cute.arch.make_warp_uniform(ctidx // 128)
        thr_mma = tiled_mma.get_slice(wg * 128)
        tCsA = thr_mma.partition_A(sA)
        tCsB = thr_mma.partition_B(sB)
        tCrA = tiled_mma.make_fragment_A(tCsA)
        tCrB = tiled_mma.make_fragment_B(tCsB)
        acc_shape = thr_mma.partition_C(gC[(None, None, 0, 0)]).shape
        acc = cute.make_rmem_tensor(acc_shape, cutlass.Float32)

        signals, dst = ring.release_signal(cta_rank, lane)
        tiled_r2s, thr_r2s = self.epilogue.make_r2s(tiled_mma, ctidx)

        # Accumulate always (acc is zeroed per tile); set once, outside every loop, so that no
        # loop body rebinds the MMA's state.
        tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
        position = RingPosition.consumer_start(self.stages)
        work = cluster_id
        while work < sched.num_work:
            tm, tn = sched.tile_of_cta(work, cta_x, cta_y)
            _, k_count = sched.k_slice(work, k_tiles)
            position = self.accumulate(tiled_mma, acc, tCrA, tCrB, ring, position, k_count, signals, dst)

            if cutlass.const_expr(self.split_k is not None):
                tile_work, split, tile_slices = sched.split_unit(work)
                # CTAs of an edge cluster past the output have no tile and no counters.
                if tile_slices > 1 and tm < tiles_m and tn < tiles_n:
                    split_tile = (tile_work - sched.split_from) * self.cluster_size + cta_rank
                    self.split_k.exchange(acc, partials, counters, split_tile, split, tile_slices,
                                          ctidx, lane)
                if split == tile_slices - 1:
                    self.epilogue.store_tile(tma_c, tiled_r2s, thr_r2s, acc, sC,
                                             gC[(None, None, tm, tn)], warp_idx)
            elif cutlass.const_expr(ring_store is not None):
                if work + num_clusters >= sched.num_work:
                    tma_cr, sCr, gCr = ring_store
                    # No warpgroup writes the ring before the other's last WGMMAs have read it.
                    cute.arch.barrier(barrier_id=int(GemmBarrier.EPILOGUE),
                                      number_of_threads=self.consumer_threads)
                    self.ring_epilogue.store_tile(tma_cr, tiled_r2s, thr_r2s, acc, sCr,
                                                  gCr[(None, None, tm, tn)], warp_idx)
                else:
                    self.epilogue.store_tile(tma_c, tiled_r2s, thr_r2s, acc, sC,
                                             gC[(None, None, tm, tn)], warp_idx)
            else:
                self.epilogue.store_tile(tma_c, tiled_r2s, thr_r2s, acc, sC,
                                         gC[(None, None, tm, tn)], warp_idx)
            work += num_clusters
        if cutlass.const_expr(self.stream_k is not None):
            # This cluster's run over the shared tiles (kernels/sm90/tile_scheduler.py), piece by
            # piece: a piece from its tile's first k-tile reduces the tile and stores it, any other
            # piece is written for that reducer.
            pos, end = sched.shared_run(cluster_id, num_clusters, k_tiles)
            while pos < end:
                piece, k_first, k_count = sched.shared_segment(cluster_id, num_clusters, pos, end, k_tiles)
                tm, tn = sched.tile_of_cta(piece, cta_x, cta_y)
                position = self.accumulate(tiled_mma, acc, tCrA, tCrB, ring, position, k_count,
                                           signals, dst)
                # CTAs of an edge cluster past the output have nothing to hand on or add.
                if k_first > 0:
                    if tm < tiles_m and tn < tiles_n:
                        reducer, slot = sched.piece_writer(cluster_id, num_clusters, piece, k_tiles)
                        self.stream_k.write(acc, partials, counters, slot, reducer, cta_rank, ctidx, lane)
                else:
                    if k_count < k_tiles and tm < tiles_m and tn < tiles_n:
                        first_slot, writers = sched.tile_writers(piece, num_clusters, k_tiles)
                        self.stream_k.reduce(acc, partials, counters, cluster_id, first_slot, writers,
                                             cta_rank, ctidx, lane)
                    self.epilogue.store_tile(tma_c, tiled_r2s, thr_r2s, acc, sC,
                                             gC[(None, None, tm, tn)], warp_idx)
                pos += k_count
        self.epilogue.drain(warp_idx)

    @cute.jit
    def accumulate(self, tiled_mma, acc, tCrA, tCrB, ring, position, k_count, signals, dst):
        """acc = the sum over the next k_count ring stages of their WGMMAs; returns the ring
        position after them."""
        k_blocks = cute.size(tCrA, mode=[2])
        acc.fill(0.0)
        prev_stage = position.index
        for k in range(k_count):
            stage = position.index
            ring.consumer_wait(stage, position.phase)
            cute.nvgpu.warpgroup.fence()
            for kb in cutlass.range_constexpr(k_blocks):
                cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, stage)],
                          tCrB[(None, None, kb, stage)], acc)
            cute.nvgpu.warpgroup.commit_group()
            # Keep one WGMMA group in flight; the one before it has finished reading its
            # stage, which can go back to the producer.
            cute.nvgpu.warpgroup.wait_group(1)
            if k > 0:
                ring.consumer_release(prev_stage, signals, dst)
            prev_stage = stage
            position.advance()
        cute.nvgpu.warpgroup.wait_group(0)
        if k_count > 0:
            ring.consumer_release(prev_stage, signals, dst)
        return position
