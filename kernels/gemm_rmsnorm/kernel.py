"""The fused RMSNorm -> GEMM kernel class (see the package docstring for the design). Imports the
DSL: kernels/gemm_rmsnorm/__init__.py imports this module only when it compiles."""

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import warpgroup
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

from kernelscope.kernels.cute_build import cutlass_dtype
from kernelscope.kernels.gemm_rmsnorm import PINGPONG_TILE_M, TILE_K, TILE_M, ring_stages, row_maps, tile_m_of
from kernelscope.kernels.sm90.barriers import GemmBarrier
from kernelscope.kernels.sm90.epilogue import TmaStoreEpilogue
from kernelscope.kernels.sm90.fragments import check_compact
from kernelscope.kernels.sm90.pingpong import PingPongTurns
from kernelscope.kernels.sm90.pipeline import RingPosition
from kernelscope.kernels.sm90.tile_scheduler import TileScheduler
from kernelscope.kernels.sm90.warp_specialized import WarpSpecializedGemm


class FusedRmsNormGemm(WarpSpecializedGemm):
    CONSUMER_REGS = 232
    CONSUMER_WGS = 2

    def __init__(self, cfg, dtype: str):
        self.cfg = cfg
        self.stages = ring_stages(cfg)
        self.dtype = self.ab_dtype = cutlass_dtype(dtype)
        self.tile_mnk = (tile_m_of(cfg), cfg.tile_n, TILE_K)
        self.cluster_mn = tuple(cfg.cluster)
        self.policy = cfg.schedule_policy()
        self.threads = 128 * (1 + self.CONSUMER_WGS)
        self.consumer_threads = 128 * self.CONSUMER_WGS
        # pingpong: the turn to issue WGMMAs goes back and forth between the two warpgroups
        # (the waiter's 128 threads plus the other's arrival).
        self.turns = PingPongTurns(GemmBarrier.MMA_TURN_WG0, self.CONSUMER_WGS, threads=self.consumer_threads)
        if cfg.pingpong:
            # Warpgroup w (warps 4 + 4w .. 7 + 4w) stores through its own buffers and barrier,
            # so the two warpgroups' epilogues never wait on each other.
            self.wg_epilogues = [
                TmaStoreEpilogue(self.dtype, (PINGPONG_TILE_M, cfg.tile_n), cfg.epi_n, cfg.epi_stages,
                                 consumer_threads=128, store_warp=4 + 4 * wg,
                                 barrier_id=(GemmBarrier.EPILOGUE_WG0, GemmBarrier.EPILOGUE_WG1)[wg])
                for wg in range(self.CONSUMER_WGS)]
            self.epilogue = self.wg_epilogues[0]         # layouts and atoms (the same for both)
        else:
            self.epilogue = TmaStoreEpilogue(self.dtype, (TILE_M, cfg.tile_n), cfg.epi_n, cfg.epi_stages,
                                             consumer_threads=self.consumer_threads, store_warp=4,
                                             barrier_id=GemmBarrier.EPILOGUE)

    @cute.jit
    def __call__(self, mX: cute.Tensor, mW: cute.Tensor, mY: cute.Tensor, eps: cutlass.Float32,
                 max_clusters: cutlass.Int32, stream):
        w_layout = LayoutEnum.from_tensor(mW)
        x_layout = LayoutEnum.from_tensor(mX)
        # Cooperative: the two warpgroups split the 128-row tile; pingpong: one warpgroup
        # computes a whole 64-row tile.
        mma_wgs = 1 if self.cfg.pingpong else self.CONSUMER_WGS
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.dtype, self.dtype, x_layout.sm90_mma_major_mode(), w_layout.sm90_mma_major_mode(),
            cutlass.Float32, (mma_wgs, 1, 1), tiler_mn=(64, self.tile_mnk[1]),
            a_source=warpgroup.OperandSource.RMEM)
        # Which of its two rows each register holds, for the A operand and the accumulators;
        # the row scaling in the epilogue relies on both maps (checked here, at trace time).
        self.a_half, self.c_half = row_maps(tiled_mma, 128 * mma_wgs, self.tile_mnk[0])

        sX_layout, sW_layout = self.make_ab_smem_layouts(x_layout, w_layout)
        sY_layout = self.epilogue.make_smem_layout()
        tma_x, tX, tma_w, tW = self.make_tma_loads(mX, sX_layout, mW, sW_layout)
        tma_y, tY = self.epilogue.make_tma_store(mY, sY_layout)
        tiles_m, tiles_n, clusters = self.persistent_grid(mY, max_clusters)

        # pingpong: one set of epilogue buffers per warpgroup.
        self.storage = self.shared_storage(sX_layout, sW_layout, self.dtype, sY_layout,
                                           c_buffers=self.CONSUMER_WGS if self.cfg.pingpong else 1)
        inv_k = cutlass.Float32(1.0) / cutlass.Float32(mX.shape[1])
        self.launch(self.kernel(tma_x, tX, tma_w, tW, tma_y, tY, tiled_mma, sX_layout, sW_layout, sY_layout,
                                tiles_m, tiles_n, inv_k, eps), clusters, stream)

    @cute.kernel
    def kernel(self, tma_x: cute.CopyAtom, mX: cute.Tensor, tma_w: cute.CopyAtom, mW: cute.Tensor,
               tma_y: cute.CopyAtom, mY: cute.Tensor, tiled_mma: cute.TiledMma,
               sX_layout: cute.ComposedLayout, sW_layout: cute.ComposedLayout,
               sY_layout: cute.ComposedLayout, tiles_m: cutlass.Int32, tiles_n: cutlass.Int32,
               inv_k: cutlass.Float32, eps: cutlass.Float32):
        tidx, warp_idx, lane, cta_m, cta_n, first_work, work_stride, cta_rank = self.thread_coordinates()
        self.prefetch_descriptors(warp_idx, (tma_x, tma_w, tma_y))

        storage = SmemAllocator().allocate(self.storage)
        # pingpong: a stage holds one warpgroup's k-tile, released by its 4 warps
        ring = self.open_ring(storage.barriers.data_ptr(), warp_idx, sX_layout, sW_layout,
                              consumer_warps=4 if self.cfg.pingpong else 4 * self.CONSUMER_WGS)

        sX = storage.sA.get_tensor(sX_layout.outer, swizzle=sX_layout.inner)
        sW = storage.sB.get_tensor(sW_layout.outer, swizzle=sW_layout.inner)
        if cutlass.const_expr(self.cfg.pingpong):
            sY_of_wg = [storage.sC0.get_tensor(sY_layout.outer, swizzle=sY_layout.inner),
                        storage.sC1.get_tensor(sY_layout.outer, swizzle=sY_layout.inner)]
        else:
            sY = storage.sC.get_tensor(sY_layout.outer, swizzle=sY_layout.inner)
        gX, gW, gY, k_tiles = self.global_tiles(mX, mW, mY)
        sched = TileScheduler(self.policy, tiles_m, tiles_n)

        if warp_idx < self.PRODUCER_WARPS:
            self.run_producer(warp_idx, ring, sched, k_tiles, tma_x, sX, gX, tma_w, sW, gW,
                              cta_m, cta_n, first_work, work_stride)
        else:
            cute.arch.setmaxregister_increase(self.CONSUMER_REGS)
            if cutlass.const_expr(self.cfg.pingpong):
                # One copy of the consumer per warpgroup, so that its barrier ids, store warp
                # and epilogue buffers are constants (at any moment one warpgroup runs the
                # main loop and the other the epilogue, so the two copies should need
                # about the instruction cache of one).
                if warp_idx < 8:
                    self.consume_pingpong(0, tiled_mma, tma_y, sX, sW, sY_of_wg[0], gY, ring, sched,
                                          k_tiles, inv_k, eps, tidx - 128, warp_idx, lane, cta_rank,
                                          cta_m, cta_n, first_work, work_stride)
                else:
                    self.consume_pingpong(1, tiled_mma, tma_y, sX, sW, sY_of_wg[1], gY, ring, sched,
                                          k_tiles, inv_k, eps, tidx - 256, warp_idx, lane, cta_rank,
                                          cta_m, cta_n, first_work, work_stride)
            else:
                self.consume(tiled_mma, tma_y, sX, sW, sY, gY, ring, sched, k_tiles, inv_k, eps,
                             tidx - 128, warp_idx, lane, cta_rank, cta_m, cta_n, first_work, work_stride)

    def consumer_operands(self, tiled_mma, sW, sX, tidx):
        """What a consumer thread `tidx` (its index among the threads of the MMA) works with: W'
        fragments over the ring, the A register buffers and their ldmatrix copy from sX, the
        accumulators and the fragment extents."""
        bm, bn, bk = self.tile_mnk
        thr_mma = tiled_mma.get_slice(tidx)
        tCsW = thr_mma.partition_B(sW)
        tCrW = tiled_mma.make_fragment_B(tCsW)
        a_shape = thr_mma.partition_shape_A((bm, bk))
        # A operand registers: one or two k-tiles' worth, indexed only by trace-time buffer
        # numbers (a run-time index would move them to local memory).
        bufs = [tiled_mma.make_fragment_A(a_shape) for _ in range(self.cfg.a_buffers)]
        s2r = cute.make_tiled_copy_A(
            cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(False, 4), self.dtype), tiled_mma)
        thr_s2r = s2r.get_slice(tidx)
        tXsX = thr_s2r.partition_S(sX)                        # (CPY, CPY_M, CPY_K, stage)
        views = [thr_s2r.retile(b) for b in bufs]
        acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((bm, bn)), cutlass.Float32)
        k_blocks = cute.size(bufs[0], mode=[2])
        values_per_block = cute.size(bufs[0], mode=[0])
        rows_per_thread = cute.size(bufs[0], mode=[1])        # 1: the 64-row slice is one atom
        return tCrW, bufs, s2r, tXsX, views, acc, k_blocks, values_per_block, rows_per_thread

    @cute.jit
    def consume(self, tiled_mma, tma_y, sX, sW, sY, gY, ring, sched, k_tiles, inv_k, eps,
                ctidx, warp_idx, lane, cta_rank, cta_m, cta_n, first_work, work_stride):
        tCrW, bufs, s2r, tXsX, views, acc, k_blocks, values_per_block, rows_per_thread = \
            self.consumer_operands(tiled_mma, sW, sX, ctidx)

        signals, dst = ring.release_signal(cta_rank, lane)
        tiled_r2s, thr_r2s = self.epilogue.make_r2s(tiled_mma, ctidx)
        sumsq = cute.make_rmem_tensor((2 * rows_per_thread,), cutlass.Float32)

        position = RingPosition.consumer_start(self.stages)
        work = first_work
        while work < sched.num_work:
            tm, tn = sched.tile_of_cta(work, cta_m, cta_n)
            acc.fill(0.0)
            sumsq.fill(0.0)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            position, prev_stage = self.main_loop(
                tiled_mma, s2r, tXsX, views, bufs, tCrW, acc, sumsq, ring, k_tiles, position,
                signals, dst, k_blocks, values_per_block, rows_per_thread)
            cute.nvgpu.warpgroup.wait_group(0)
            if k_tiles > 0:
                ring.consumer_release(prev_stage, signals, dst)

            self.scale_rows(acc, sumsq, inv_k, eps, rows_per_thread)

            self.epilogue.store_tile(tma_y, tiled_r2s, thr_r2s, acc, sY,
                                     gY[(None, None, tm, tn)], warp_idx)
            work += work_stride
        self.epilogue.drain(warp_idx)

    @cute.jit
    def consume_pingpong(self, wg: cutlass.Constexpr, tiled_mma, tma_y, sX, sW, sY, gY, ring, sched,
                         k_tiles, inv_k, eps, wtidx, warp_idx, lane, cta_rank, cta_m, cta_n,
                         first_work, work_stride):
        """Consumer warpgroup `wg` of the pingpong schedule: the CTA's tiles alternate between
        the two warpgroups (wg 0 takes the 1st, 3rd, ...); each tile's main loop starts when
        the other warpgroup has issued all WGMMAs of its own, and its epilogue then runs
        under the other's main loop. `wtidx` is the thread's index in its warpgroup."""
        tCrW, bufs, s2r, tXsX, views, acc, k_blocks, values_per_block, rows_per_thread = \
            self.consumer_operands(tiled_mma, sW, sX, wtidx)

        signals, dst = ring.release_signal(cta_rank, lane)
        tiled_r2s, thr_r2s = self.wg_epilogues[wg].make_r2s(tiled_mma, wtidx)
        sumsq = cute.make_rmem_tensor((2 * rows_per_thread,), cutlass.Float32)

        position = RingPosition.consumer_start(self.stages)
        if cutlass.const_expr(wg == 1):
            # The CTA's first tile is warpgroup 0's: skip its k-tiles in the ring and give
            # warpgroup 0 the first turn.
            position.advance_by(k_tiles)
            self.turns.hand_over(wg)
        work = first_work + wg * work_stride
        while work < sched.num_work:
            tm, tn = sched.tile_of_cta(work, cta_m, cta_n)
            acc.fill(0.0)
            sumsq.fill(0.0)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            self.turns.wait(wg)
            position, prev_stage = self.main_loop(
                tiled_mma, s2r, tXsX, views, bufs, tCrW, acc, sumsq, ring, k_tiles, position,
                signals, dst, k_blocks, values_per_block, rows_per_thread)
            # Every WGMMA of this tile is issued: the other warpgroup may issue its own,
            # which queue behind these in the tensor pipe.
            self.turns.hand_over(wg)
            cute.nvgpu.warpgroup.wait_group(0)
            if k_tiles > 0:
                ring.consumer_release(prev_stage, signals, dst)
            # The next k-tiles in the ring are the other warpgroup's tile.
            position.advance_by(k_tiles)

            self.scale_rows(acc, sumsq, inv_k, eps, rows_per_thread)

            self.wg_epilogues[wg].store_tile(tma_y, tiled_r2s, thr_r2s, acc, sY, gY[(None, None, tm, tn)],
                                             warp_idx)
            work += 2 * work_stride
        self.wg_epilogues[wg].drain(warp_idx)

    @cute.jit
    def main_loop(self, tiled_mma, s2r, tXsX, views, bufs, tCrW, acc, sumsq, ring, k_tiles,
                  position: RingPosition, signals, dst, k_blocks: cutlass.Constexpr,
                  values_per_block: cutlass.Constexpr, rows_per_thread: cutlass.Constexpr):
        """Every k-tile of one output tile (k_tile each), alternating the A buffers when there
        are two (unrolled by two, so the buffer index is a trace-time constant). Returns the ring
        position after the tile and the stage still to release."""
        prev_stage = position.index
        if cutlass.const_expr(self.cfg.a_buffers == 2):
            k = cutlass.Int32(0)
            while k < k_tiles:
                position, prev_stage = self.k_tile(
                    tiled_mma, s2r, tXsX, views[0], bufs[0], tCrW, acc, sumsq, ring, k,
                    position, prev_stage, signals, dst, k_blocks, values_per_block, rows_per_thread)
                if k + 1 < k_tiles:
                    position, prev_stage = self.k_tile(
                        tiled_mma, s2r, tXsX, views[1], bufs[1], tCrW, acc, sumsq, ring, k + 1,
                        position, prev_stage, signals, dst, k_blocks, values_per_block, rows_per_thread)
                k += 2
        else:
            for k in range(k_tiles):
                # One buffer: the WGMMAs still reading it must finish before it is refilled.
                cute.nvgpu.warpgroup.wait_group(0)
                position, prev_stage = self.k_tile(
                    tiled_mma, s2r, tXsX, views[0], bufs[0], tCrW, acc, sumsq, ring, k,
                    position, prev_stage, signals, dst, k_blocks, values_per_block, rows_per_thread)
        return position, prev_stage

    @cute.jit
    def scale_rows(self, acc, sumsq, inv_k, eps, rows_per_thread: cutlass.Constexpr):
        """rstd per row (the lanes of a quad hold the 4 column slices of the same two rows),
        then every accumulator times its row's rstd."""
        for i in cutlass.range_constexpr(2 * rows_per_thread):
            s = sumsq[i]
            s = s + cute.arch.shuffle_sync_bfly(s, offset=1)
            s = s + cute.arch.shuffle_sync_bfly(s, offset=2)
            sumsq[i] = cute.math.rsqrt(s * inv_k + eps, fastmath=False)
        acc_values = cute.size(acc, mode=[0])
        for m in cutlass.range_constexpr(rows_per_thread):
            for n in cutlass.range_constexpr(cute.size(acc, mode=[2])):
                for v in cutlass.range_constexpr(acc_values):
                    acc[v, m, n] = acc[v, m, n] * sumsq[2 * m + self.c_half[v]]

    @cute.jit
    def k_tile(self, tiled_mma, s2r, tXsX, view, buf, tCrW, acc, sumsq, ring, k,
               position: RingPosition, prev_stage, signals, dst, k_blocks: cutlass.Constexpr,
               values_per_block: cutlass.Constexpr, rows_per_thread: cutlass.Constexpr):
        """One k-tile: X slice smem -> registers, its squares into sumsq, WGMMAs from the
        registers, release of the stage before. Returns the advanced position and the stage to
        release next."""
        stage = position.index
        ring.consumer_wait(stage, position.phase)
        cute.copy(s2r, tXsX[(None, None, None, stage)], view)
        if cutlass.const_expr(self.cfg.square_unpack == "bits" and self.dtype == cutlass.BFloat16):
            self.add_squares_by_words(buf, sumsq, k_blocks, values_per_block, rows_per_thread)
        else:
            for kb in cutlass.range_constexpr(k_blocks):
                for m in cutlass.range_constexpr(rows_per_thread):
                    for v in cutlass.range_constexpr(values_per_block):
                        x = buf[v, m, kb].to(cutlass.Float32)
                        i = 2 * m + self.a_half[v]
                        sumsq[i] = sumsq[i] + x * x
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(tiled_mma, acc, buf[(None, None, kb)], tCrW[(None, None, kb, stage)], acc)
        cute.nvgpu.warpgroup.commit_group()
        # One WGMMA group in flight: the previous one is done with its stage (W' in shared
        # memory) and with its A registers.
        cute.nvgpu.warpgroup.wait_group(1)
        if k > 0:
            ring.consumer_release(prev_stage, signals, dst)
        position.advance()
        return position, stage

    @cute.jit
    def add_squares_by_words(self, buf, sumsq, k_blocks: cutlass.Constexpr, values_per_block: cutlass.Constexpr,
                             rows_per_thread: cutlass.Constexpr):
        """The squares of a k-tile's A registers, two bf16 per 32-bit word: the high value is the
        word with its low half cleared (one LOP3), the low value the word shifted up by 16 (one
        shift): both are then exact fp32. Values 2w and 2w + 1 share a word and a row (a_half)."""
        # The flat word view needs register i to be value i, and both values of a word in one row.
        check_compact(buf)
        if cutlass.const_expr(any(self.a_half[v] != self.a_half[v + 1] for v in range(0, values_per_block, 2))):
            raise AssertionError(f"A fragment values of one 32-bit register sit in two rows: {self.a_half}")
        n = cute.size(buf)
        words = cute.recast_tensor(cute.make_tensor(buf.iterator, cute.make_layout(n)), cutlass.Uint32)
        bits = cute.make_rmem_tensor(cute.make_layout(2), cutlass.Uint32)
        halves = cute.recast_tensor(bits, cutlass.Float32)
        per_block = values_per_block // 2
        for w in cutlass.range_constexpr(n // 2):
            v = 2 * (w % per_block)
            m = (w // per_block) % rows_per_thread
            word = words[w]
            bits[0] = word & cutlass.Uint32(0xFFFF0000)
            bits[1] = word << cutlass.Uint32(16)
            i = 2 * m + self.a_half[v]
            sumsq[i] = sumsq[i] + halves[0] * halves[0]
            sumsq[i] = sumsq[i] + halves[1] * halves[1]
