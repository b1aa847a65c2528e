"""The mma.sync GEMM kernel class (see the package docstring for the design). Imports the DSL:
kernels/gemm_mma/__init__.py imports this module only when it compiles."""

from typing import Optional

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warpgroup
from cutlass.memory import SmemAllocator

from kernelscope.kernels.cute_build import cutlass_dtype
from kernelscope.kernels.gemm_mma import ResolvedMmaGemm
from kernelscope.kernels.gemm_problem import RASTERS
from kernelscope.kernels.sm90.pipeline import RingPosition, TmaRing, make_tma_load, publish_ring_init
from kernelscope.kernels.sm90.split_k import StreamKExchange
from kernelscope.kernels.sm90.tile_scheduler import SchedulePolicy, TileScheduler


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
        self.cluster_mn = tuple(cfg.cluster)
        self.cluster_size = cfg.cluster_size
        self.policy = SchedulePolicy(self.cluster_mn, RASTERS[cfg.raster], cfg.group)
        # Stream-K capable: which tiles are shared out is decided per launch (split_from).
        # Partial sums four at a time: a quarter of the instructions. One fp32 an access stalled the
        # stores in lg_throttle; the ratio moved by under 0.3 % (NOTES.md, v4).
        self.stream_k = StreamKExchange(cfg.threads, 1, vector=4) if cfg.stream_k else None

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
                 grid_blocks: cutlass.Int32, stream, partials: cute.Tensor = None,
                 counters: cute.Tensor = None, split_from: cutlass.Int32 = 0):
        """partials, counters, split_from: the stream-K workspace and plan (kernels/sm90/split_k.py,
        kernels/split_k_plan.py), for stream-K variants only."""
        cfg = self.cfg
        bm, bn, bk = self.tile
        op = cute.nvgpu.warp.MmaF16BF16Op(self.dtype, cutlass.Float32, (16, 8, 16))
        # N permuted by 16 per warp: one ldmatrix.x4 of B feeds two n8 MMAs.
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout((cfg.warps_m, cfg.warps_n, 1)),
                                        permutation_mnk=(cfg.warps_m * 16, cfg.warps_n * 16, 16))
        sA_layout = smem_layout(self.dtype, bm, bk, self.stages, False)
        sB_layout = smem_layout(self.dtype, bn, bk, self.stages, self.b_n_major)
        cm, cn = self.cluster_mn
        # With a cluster, A multicasts across the cn blocks of a cluster row, B across the cm of a column.
        tma_a, tA = make_tma_load(mA, sA_layout, (bm, bk), cn)
        tma_b, tB = make_tma_load(mB, sB_layout, (bn, bk), cm)

        tiles_m = (mC.shape[0] + bm - 1) // bm
        tiles_n = (mC.shape[1] + bn - 1) // bn
        if cutlass.const_expr(self.stream_k is None):
            # Not passed on: the kernel of a variant without stream-K has no such parameters.
            split_from = None
        sched = TileScheduler(self.policy, tiles_m, tiles_n, split_from, 1, stream_k=self.stream_k is not None)
        blocks = cutlass.max(cutlass.min(sched.num_work, grid_blocks), 1)
        if cutlass.const_expr(self.stream_k is not None):
            # With tiles to share out, every resident block: the runs are cut for that many.
            blocks = cutlass.Int32(cutlass.select_(sched.shared_tiles > 0, grid_blocks, blocks))

        @cute.struct
        class Storage:
            barriers: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            sA: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024]

        self.storage = Storage
        kernel = self.kernel(tma_a, tA, tma_b, tB, mC, tiled_mma, sA_layout, sB_layout,
                             tiles_m, tiles_n, partials, counters, split_from)
        if cutlass.const_expr(self.cluster_size == 1):
            kernel.launch(grid=[blocks, 1, 1], block=[cfg.threads, 1, 1], min_blocks_per_mp=1, stream=stream)
        else:
            # (cluster m, cluster n, persistent clusters); the work items are cluster tiles.
            clusters = cutlass.max(cutlass.min(sched.num_work, grid_blocks // self.cluster_size), 1)
            kernel.launch(grid=[cm, cn, clusters], block=[cfg.threads, 1, 1], cluster=[cm, cn, 1],
                          min_blocks_per_mp=1, stream=stream)

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
               mC: cute.Tensor, tiled_mma: cute.TiledMma,
               sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
               tiles_m: cutlass.Int32, tiles_n: cutlass.Int32, partials: Optional[cute.Tensor],
               counters: Optional[cute.Tensor], split_from: Optional[cutlass.Int32]):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        cm, cn = self.cluster_mn
        # `block` and `num_blocks`: this block's first work item and the stride over them (with a
        # cluster, its cluster's and the cluster count).
        if cutlass.const_expr(self.cluster_size == 1):
            block, _, _ = cute.arch.block_idx()
            num_blocks, _, _ = cute.arch.grid_dim()
            cta_m = 0
            cta_n = 0
            cta_rank = 0
            mcast = (None, None)
        else:
            cta_m, cta_n, block = cute.arch.block_idx()
            _, _, num_blocks = cute.arch.grid_dim()
            cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
            # Multicast masks by CTA rank in the cluster (m + cm * n): an A box goes to this
            # cluster row, a B box to this cluster column.
            a_mask = None
            b_mask = None
            if cutlass.const_expr(cn > 1):
                a_mask = cutlass.Int16(sum(1 << (cm * j) for j in range(cn))) << cutlass.Int16(cta_m)
            if cutlass.const_expr(cm > 1):
                b_mask = cutlass.Int16((1 << cm) - 1) << cutlass.Int16(cta_n * cm)
            mcast = (a_mask, b_mask)
        bm, bn, bk = self.tile

        if warp_idx == 0:
            cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_b)

        smem = SmemAllocator()
        storage = smem.allocate(self.storage)
        stage_bytes = (cute.size_in_bytes(self.dtype, cute.slice_(sA_layout, (None, None, 0)))
                       + cute.size_in_bytes(self.dtype, cute.slice_(sB_layout, (None, None, 0))))
        ring = TmaRing(storage.barriers.data_ptr(), self.stages, stage_bytes,
                       consumer_warps=self.cfg.mma_warps, cluster_mn=self.cluster_mn)
        ring.init(warp_idx)
        publish_ring_init(ring)

        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)
        gA = cute.local_tile(mA, (bm, bk), (None, None))      # (bm, bk, tiles_m, tiles_k)
        gB = cute.local_tile(mB, (bn, bk), (None, None))      # (bn, bk, tiles_n, tiles_k)
        gC = cute.local_tile(mC, (bm, bn), (None, None))      # (bm, bn, tiles_m, tiles_n)
        k_tiles = cute.size(gA, mode=[3])
        sched = TileScheduler(self.policy, tiles_m, tiles_n, split_from, 1, stream_k=self.stream_k is not None)

        # With multicast each block loads its 1/cn (A) or 1/cm (B) share of the box.
        tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
            tma_a, cta_n, cute.make_layout(cn), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
            tma_b, cta_m, cute.make_layout(cm), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
        # Warp 0 keeps the ring `ahead` k-tiles in front of the MMA loop (stages - 1, or fewer
        # when K is short, so that loads run at most one work tile ahead): the first ones now.
        ahead = cutlass.min(k_tiles, self.stages - 1)
        if block < sched.num_work:
            tm0, tn0 = sched.tile_of_cta(block, cta_m, cta_n)
            for s0 in cutlass.range_constexpr(self.stages - 1):
                if s0 < ahead:
                    self.start_load(warp_idx, ring, cutlass.Int32(s0), cutlass.Int32(1), tm0, tn0,
                                    cutlass.Int32(s0), tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, mcast)

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

        signals, dst = ring.release_signal(cta_rank, lane)
        position = RingPosition.consumer_start(self.stages)
        work = block
        if cutlass.const_expr(self.stream_k is None):
            while work < sched.num_work:
                # Tile coordinates here, where no accumulator is live: this one (for the epilogue
                # and the loads still in it) and the next one (for loads that run into it).
                tm, tn = sched.tile_of_cta(work, cta_m, cta_n)
                next_valid = work + num_blocks < sched.num_work
                tm_next, tn_next = sched.tile_of_cta(work + num_blocks, cta_m, cta_n)
                position = self.accumulate(tiled_mma, acc, tCrA, tCrB, s2r_a, s2r_b, tXsA, tXsB, tXrA,
                                           tXrB, ring, position, signals, dst, warp_idx, 0, k_tiles, ahead,
                                           tm, tn, tm_next, tn_next, next_valid, 0,
                                           tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, mcast)
                self.store_tile(thr_mma, acc, gC[(None, None, tm, tn)],
                                (mC.shape[0] - tm * bm, mC.shape[1] - tn * bn))
                work += num_blocks
            if cutlass.const_expr(self.cluster_size > 1):
                # Before exit: every stage released by the MMA warps of both blocks, so no peer
                # arrives on this block's barriers after it is gone (a producer's parity at a slot
                # is the consumers' there, flipped).
                if warp_idx == 0:
                    ring.producer_drain(RingPosition(self.stages, cutlass.Int32(0), position.index,
                                                     position.phase ^ 1))
        else:
            # The whole tiles, then this block's run over the shared tiles
            # (kernels/sm90/tile_scheduler.py), piece by piece. Loads run on from one item into
            # the next (the last whole tile into the first piece, a piece into the following one)
            # where the next holds at least as many k-tiles as the loads run ahead; otherwise the
            # next piece fills the ring itself. `carried`: the k-tiles of the current item
            # already in flight (0: none).
            pos, end = sched.shared_run(block, num_blocks, k_tiles)
            piece, k_first, k_count = sched.shared_segment(block, num_blocks, pos, end, k_tiles)
            first_tm, first_tn = sched.tile_of_cta(piece, 0, 0)
            into_first = (pos < end) & (k_count >= ahead)
            while work < sched.num_work:
                tm, tn = sched.tile_of_cta(work, 0, 0)
                last = work + num_blocks >= sched.num_work
                tm_next, tn_next = sched.tile_of_cta(work + num_blocks, 0, 0)
                tm_next = cutlass.Int32(cutlass.select_(last, first_tm, tm_next))
                tn_next = cutlass.Int32(cutlass.select_(last, first_tn, tn_next))
                k_first_next = cutlass.Int32(cutlass.select_(last, k_first, 0))
                position = self.accumulate(tiled_mma, acc, tCrA, tCrB, s2r_a, s2r_b, tXsA, tXsB, tXrA,
                                           tXrB, ring, position, signals, dst, warp_idx, 0, k_tiles, ahead,
                                           tm, tn, tm_next, tn_next, (~last) | into_first, k_first_next,
                                           tma_a, tAgA, tAsA, tma_b, tBgB, tBsB)
                self.store_tile(thr_mma, acc, gC[(None, None, tm, tn)],
                                (mC.shape[0] - tm * bm, mC.shape[1] - tn * bn))
                work += num_blocks
            carried = cutlass.Int32(cutlass.select_((block < sched.num_work) & into_first, ahead, 0))
            # A piece from its tile's first k-tile reduces the tile and stores it, any other
            # piece is written for that reducer.
            while pos < end:
                piece, k_first, k_count = sched.shared_segment(block, num_blocks, pos, end, k_tiles)
                tm, tn = sched.tile_of_cta(piece, 0, 0)
                piece_ahead = cutlass.Int32(cutlass.select_(carried > 0, carried,
                                                            cutlass.min(k_count, self.stages - 1)))
                for s0 in cutlass.range_constexpr(self.stages - 1):
                    if (carried == 0) & (s0 < piece_ahead):
                        self.load_ahead(warp_idx, ring, position, s0, tm, tn, k_first + s0,
                                        tma_a, tAgA, tAsA, tma_b, tBgB, tBsB)
                following, next_first, next_count = sched.shared_segment(
                    block, num_blocks, pos + k_count, end, k_tiles)
                tm_next, tn_next = sched.tile_of_cta(following, 0, 0)
                into_next = (pos + k_count < end) & (next_count >= piece_ahead)
                position = self.accumulate(tiled_mma, acc, tCrA, tCrB, s2r_a, s2r_b, tXsA, tXsB, tXrA,
                                           tXrB, ring, position, signals, dst, warp_idx, k_first, k_count,
                                           piece_ahead, tm, tn, tm_next, tn_next, into_next, next_first,
                                           tma_a, tAgA, tAsA, tma_b, tBgB, tBsB)
                carried = cutlass.Int32(cutlass.select_(into_next, piece_ahead, 0))
                if k_first > 0:
                    reducer, slot = sched.piece_writer(block, num_blocks, piece, k_tiles)
                    self.stream_k.write(acc, partials, counters, slot, reducer, 0, tidx, lane)
                else:
                    if k_count < k_tiles:
                        first_slot, writers = sched.tile_writers(piece, num_blocks, k_tiles)
                        self.stream_k.reduce(acc, partials, counters, block, first_slot, writers,
                                             0, tidx, lane)
                    self.store_tile(thr_mma, acc, gC[(None, None, tm, tn)],
                                    (mC.shape[0] - tm * bm, mC.shape[1] - tn * bn))
                pos += k_count

    @cute.jit
    def accumulate(self, tiled_mma, acc, tCrA, tCrB, s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, ring,
                   position: RingPosition, signals, dst, warp_idx, k_first, k_count, ahead, tm, tn,
                   tm_next, tn_next, next_valid, k_first_next, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB,
                   mcast=(None, None)):
        """acc = the product over k-tiles k_first .. k_first + k_count - 1 of tile (tm, tn), read
        from the ring at `position`, whose first `ahead` stages are loaded or in flight; warp 0
        keeps the ring `ahead` k-tiles in front, into the next item (tile (tm_next, tn_next) from
        k-tile k_first_next) where next_valid. Returns the ring position after them."""
        kb = self.cfg.k_blocks
        wk = self.cfg.wk_iters
        acc.fill(0.0)
        # Prologue: the first wk_iters k-blocks of the item's first stage.
        ring.consumer_wait(position.index, position.phase)
        for t in cutlass.range_constexpr(wk):
            self.load_fragments(s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, position.index, t)
            if cutlass.const_expr(t == kb - 1):
                ring.consumer_release(position.index, signals, dst)
        # Every stage but the item's last: fragment loads run ahead into the next stage.
        for k in range(k_count - 1):
            following = position.next()
            for j in cutlass.range_constexpr(kb):
                if cutlass.const_expr(j == self.cfg.refill_at):
                    # Refill the stage consumed one k-tile ago, once every warp released it;
                    # later in the k-tile gives slower warps time to get there first.
                    self.issue_load(warp_idx, ring, k, position, ahead, k_first, k_count, tm, tn,
                                    tm_next, tn_next, next_valid, k_first_next, tma_a, tAgA, tAsA,
                                    tma_b, tBgB, tBsB, mcast)
                target = j + wk
                ahead_stage = position.index if target < kb else following.index
                t = target % kb
                if cutlass.const_expr(target == kb):
                    ring.consumer_wait(following.index, following.phase)
                if cutlass.const_expr(target - kb == j):
                    # The fragments of k-block j are replaced: multiply first.
                    self.mma(tiled_mma, acc, tCrA, tCrB, j)
                    self.load_fragments(s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, ahead_stage, t)
                else:
                    self.load_fragments(s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, ahead_stage, t)
                    self.mma(tiled_mma, acc, tCrA, tCrB, j)
                if cutlass.const_expr(t == kb - 1):
                    ring.consumer_release(ahead_stage, signals, dst)
            position = following
        # The item's last stage: no next stage to run ahead into. Its refill is issued after
        # its MMAs, where no fragment is live (the registers are tightest right here).
        for j in cutlass.range_constexpr(kb):
            target = j + wk
            if cutlass.const_expr(target < kb):
                self.load_fragments(s2r_a, s2r_b, tXsA, tXsB, tXrA, tXrB, position.index, target)
                if cutlass.const_expr(target == kb - 1):
                    ring.consumer_release(position.index, signals, dst)
            self.mma(tiled_mma, acc, tCrA, tCrB, j)
        self.issue_load(warp_idx, ring, k_count - 1, position, ahead, k_first, k_count, tm, tn,
                        tm_next, tn_next, next_valid, k_first_next, tma_a, tAgA, tAsA, tma_b, tBgB,
                        tBsB, mcast)
        return position.next()

    @cute.jit
    def issue_load(self, warp_idx, ring, k, position: RingPosition, ahead, k_first, k_count, tm, tn,
                   tm_next, tn_next, next_valid, k_first_next, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB,
                   mcast=(None, None)):
        """Warp 0, once per k-tile of the MMA loop at (k, position) over k-tiles k_first ..
        k_first + k_count - 1: load the k-tile `ahead` positions further on, in this item or the
        next one (from its k-tile k_first_next). Its stage and barrier parity follow from the MMA
        loop's, so no load state is carried."""
        if warp_idx == 0:
            load_k = k + ahead
            load_tm = tm
            load_tn = tn
            valid = next_valid | (load_k < k_count)
            if load_k >= k_count:
                load_k = load_k - k_count + k_first_next
                load_tm = tm_next
                load_tn = tn_next
            else:
                load_k = load_k + k_first
            if valid:
                self.load_ahead(warp_idx, ring, position, ahead, load_tm, load_tn, load_k,
                                tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, mcast)

    @cute.jit
    def load_ahead(self, warp_idx, ring, position: RingPosition, offset, tm, tn, k, tma_a, tAgA, tAsA,
                   tma_b, tBgB, tBsB, mcast=(None, None)):
        """Warp 0: load k-tile k of tile (tm, tn) into the stage `offset` (< stages) slots after
        the MMA loop's `position`."""
        load_stage = position.index + offset
        # The load warp's pass through the ring is one ahead of the MMA loop's (it starts at
        # parity 1) until the load position wraps around the ring.
        load_phase = position.phase ^ 1
        if load_stage >= self.stages:
            load_stage = load_stage - self.stages
            load_phase = position.phase
        self.start_load(warp_idx, ring, load_stage, load_phase, tm, tn, k, tma_a, tAgA, tAsA,
                        tma_b, tBgB, tBsB, mcast)

    @cute.jit
    def start_load(self, warp_idx, ring, stage, phase, tm, tn, k, tma_a, tAgA, tAsA,
                   tma_b, tBgB, tBsB, mcast=(None, None)):
        """Warp 0: wait until `stage` is free (parity `phase`; with a cluster, free in every block
        its loads multicast into), then TMA one A and one B k-tile (with a cluster, this block's
        share of each, multicast by the masks in `mcast`)."""
        if warp_idx == 0:
            ring.producer_acquire(stage, phase)
            bar = ring.full_barrier(stage)
            if cutlass.const_expr(self.cluster_size == 1):
                cute.copy(tma_a, tAgA[(None, tm, k)], tAsA[(None, stage)], tma_bar_ptr=bar)
                cute.copy(tma_b, tBgB[(None, tn, k)], tBsB[(None, stage)], tma_bar_ptr=bar)
            else:
                cute.copy(tma_a, tAgA[(None, tm, k)], tAsA[(None, stage)], tma_bar_ptr=bar, mcast_mask=mcast[0])
                cute.copy(tma_b, tBgB[(None, tn, k)], tBsB[(None, stage)], tma_bar_ptr=bar, mcast_mask=mcast[1])

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

