"""The FlashAttention-3 style kernel class (see the package docstring for the design). Imports
the DSL: kernels/flash_attn/__init__.py imports this module only when it compiles."""

from typing import Optional

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass._mlir.dialects import llvm
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import T
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

from kernelscope.kernels.cute_build import cutlass_dtype
from kernelscope.kernels.flash_attn import (
    EPI_N, FRAGMENT_ROW_MAPS, REGISTER_SPLIT, FlashAttnConfig, check_fragments, epi_stages,
    math_warpgroups, tail_state_values, validate)
from kernelscope.kernels.sm90.barriers import AttentionBarrier
from kernelscope.kernels.sm90.epilogue import TmaStoreEpilogue
from kernelscope.kernels.sm90.fragments import check_compact
from kernelscope.kernels.sm90.pingpong import PingPongTurns
from kernelscope.kernels.sm90.pipeline import RingPosition, TmaRing, make_tma_load, publish_ring_init
from kernelscope.kernels.sm90.shared_storage import shared_storage
from kernelscope.kernels.sm90.softmax import OnlineSoftmax
from kernelscope.kernels.sm90.split_k import SplitStateExchange
from kernelscope.kernels.sm90.work_queue import BARRIER_WORDS as WORK_BARRIER_WORDS
from kernelscope.kernels.sm90.work_queue import SLOTS as WORK_SLOTS
from kernelscope.kernels.sm90.work_queue import WorkQueue


def pack_16bit(lo, hi, ptx_type: str):
    """Two fp32 values -> one 32-bit register of two 16-bit values (round to nearest), as
    one inline-asm cvt. Why not the DSL's conversion: LLVM folds the two conversions that
    feed P (before the loop and at the end of each iteration) into one conversion of a
    loop-carried S, which then keeps 64 fp32 registers alive across the next Q K^T; at
    head dim 128 that exceeds the registers of the overlapped loop and ptxas serializes
    the WGMMAs (C7512). An asm statement is not folded through the loop's phi."""
    return cutlass.Int32(llvm.inline_asm(
        T.i32(), [cutlass.Float32(hi).ir_value(), cutlass.Float32(lo).ir_value()],
        f"cvt.rn.{ptx_type}x2.f32 $0, $1, $2;", "=r,f,f",
        has_side_effects=False, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT))



class FlashAttentionSm90:
    """One compiled variant: (config, dtype, head dim, causal). B, H, S stay dynamic."""

    def __init__(self, cfg: FlashAttnConfig, dtype: str, head_dim: int, causal: bool):
        validate(cfg, head_dim, causal)
        self.cfg = cfg
        self.dtype = cutlass_dtype(dtype)
        self.head_dim = head_dim
        self.causal = causal
        self.tile_m, self.tile_n = cfg.qk_mn
        self.stages = cfg.num_stages
        # cluster_size_m=2: a cluster runs two query tiles of one head; each CTA loads half of a
        # K or V block and multicasts it to both.
        self.cluster_m = cfg.cluster_size_m
        self.math_wgs = math_warpgroups(cfg)
        self.math_threads = 128 * self.math_wgs
        self.threads = 128 + self.math_threads
        if cfg.wg_epilogue:
            # One epilogue group per math warpgroup: its 64 rows, its first warp stores.
            self.epilogue = TmaStoreEpilogue(
                self.dtype, (64, head_dim), EPI_N, epi_stages(head_dim), consumer_threads=128,
                store_warp=4, barrier_id=AttentionBarrier.EPILOGUE_WG0, groups=self.math_wgs)
        else:
            self.epilogue = TmaStoreEpilogue(
                self.dtype, (self.tile_m, head_dim), EPI_N, epi_stages(head_dim),
                consumer_threads=self.math_threads, store_warp=4, barrier_id=AttentionBarrier.EPILOGUE)
        # pingpong: the math warpgroups take turns issuing WGMMAs (the waiting warpgroup's 128
        # threads plus the 128 of the one handing over).
        self.turns = PingPongTurns(AttentionBarrier.TURN_WG0, self.math_wgs, threads=256,
                                   enabled=cfg.pingpong)
        # tail_parts: the last wave's tiles split along the keys, their parts' states merged.
        self.tail_split = cfg.tail_parts >= 2
        self.exchange = SplitStateExchange(self.math_threads, tail_state_values(head_dim)) if self.tail_split else None

    @cute.jit
    def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
                 mCounter: cute.Tensor, scale_log2: cutlass.Float32, max_ctas: cutlass.Int32,
                 section_heads: cutlass.Int32, stream, partials: cute.Tensor = None,
                 counters: cute.Tensor = None, split_from: cutlass.Int32 = 0, ranges: cutlass.Int32 = 1):
        """partials, counters, split_from, ranges: the tail split's workspace and plan
        (tail_plan in __init__.py), for variants with tail_parts only."""
        D = self.head_dim
        tm, tn = self.tile_m, self.tile_n
        # (B, S, H, D) -> (S, D, H, B): rows and the contiguous head dim first, as TMA tiles them;
        # V as V^T (D, S, H, B), the MN-major B operand of P V.
        q = cute.make_tensor(mQ.iterator, cute.select(mQ.layout, mode=[1, 3, 2, 0]))
        k = cute.make_tensor(mK.iterator, cute.select(mK.layout, mode=[1, 3, 2, 0]))
        vt = cute.make_tensor(mV.iterator, cute.select(mV.layout, mode=[3, 1, 2, 0]))
        o = cute.make_tensor(mO.iterator, cute.select(mO.layout, mode=[1, 3, 2, 0]))

        K_MAJOR = warpgroup.OperandMajorMode.K
        tiled_mma_qk = sm90_utils.make_trivial_tiled_mma(
            self.dtype, self.dtype, K_MAJOR, K_MAJOR, cutlass.Float32,
            (self.math_wgs, 1, 1), tiler_mn=(64, tn))
        tiled_mma_pv = sm90_utils.make_trivial_tiled_mma(
            self.dtype, self.dtype, K_MAJOR, warpgroup.OperandMajorMode.MN, cutlass.Float32,
            (self.math_wgs, 1, 1), tiler_mn=(64, D), a_source=warpgroup.OperandSource.RMEM)
        # The epilogue's register -> shared map: per warpgroup (its 64 rows) with wg_epilogue.
        tiled_mma_o = tiled_mma_pv
        if cutlass.const_expr(self.cfg.wg_epilogue):
            tiled_mma_o = sm90_utils.make_trivial_tiled_mma(
                self.dtype, self.dtype, K_MAJOR, warpgroup.OperandMajorMode.MN, cutlass.Float32,
                (1, 1, 1), tiler_mn=(64, D), a_source=warpgroup.OperandSource.RMEM)
        tv_p = tiled_mma_pv.tv_layout_A_tiled
        maps = FRAGMENT_ROW_MAPS[(self.dtype.width, D, tn)] = check_fragments(
            tiled_mma_qk.tv_layout_C_tiled, tiled_mma_pv.tv_layout_C_tiled, tv_p,
            self.math_threads, tm, tn * 64 // 128, D * 64 // 128,
            cute.size(tv_p, mode=[1]), 16)
        self.s_half, self.o_half, self.s_cols = maps

        sQ_layout = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (tm, tn, D), self.dtype, 1)
        sK_layout = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (tm, tn, D), self.dtype,
                                                  self.stages)
        sV_layout = sm90_utils.make_smem_layout_b(LayoutEnum.COL_MAJOR, (tm, D, tn), self.dtype,
                                                  self.stages)
        sO_layout = self.epilogue.make_smem_layout()

        g2s = cpasync.CopyBulkTensorTileG2SOp()
        tma_q, tQ = cpasync.make_tiled_tma_atom(g2s, q, cute.slice_(sQ_layout, (None, None, 0)), (tm, D))
        tma_k, tK = make_tma_load(k, sK_layout, (tn, D), self.cluster_m)
        tma_v, tV = make_tma_load(vt, sV_layout, (D, tn), self.cluster_m)
        tma_o, tO = self.epilogue.make_tma_store(o, sO_layout)

        seqlen = q.shape[0]
        heads = q.shape[2]
        batch = q.shape[3]
        m_blocks = (seqlen + tm - 1) // tm
        # A work item is a query tile, or with a cluster a pair of them (see work_tile).
        num_work = ((m_blocks + self.cluster_m - 1) // self.cluster_m) * heads * batch
        items = num_work
        tail_blocks = None
        if cutlass.const_expr(self.tail_split):
            # Items: the tiles before split_from, then one per range of the split tiles' keys.
            # Work (what the loops walk): a tile, or piece j of range c, split_from + 2 c + j.
            tail_blocks = (num_work - split_from) * ((seqlen + tn - 1) // tn)
            items = split_from + ranges
            num_work = split_from + 2 * ranges
        else:
            # Not passed on: the kernel of a variant without the tail split has no such parameters.
            split_from, ranges = None, None
        # max_ctas: the work takers resident at once (CTAs, or clusters with cluster_m > 1).
        ctas = cutlass.max(cutlass.min(items, max_ctas), 1) * self.cluster_m

        buffers = [("sQ", self.dtype, sQ_layout), ("sK", self.dtype, sK_layout), ("sV", self.dtype, sV_layout)]
        if cutlass.const_expr(self.cfg.o_reuses_q):
            # O's staging buffers must fit in Q's: true for every head dim (tile_m x D each).
            assert cute.cosize(sO_layout) <= cute.cosize(sQ_layout), "O staging larger than Q"
        else:
            buffers.append(("sO", self.dtype, sO_layout))
        if cutlass.const_expr(self.cfg.dynamic_schedule):
            buffers.append(("work", cutlass.Int32, cute.make_layout(WORK_SLOTS)))
        # Barriers: the K and V rings (full and empty per stage), Q's full and empty, then the
        # work queue's.
        self.storage = shared_storage(
            4 * self.stages + 2 + (WORK_BARRIER_WORDS if self.cfg.dynamic_schedule else 0), buffers)
        self.kernel(tma_q, tQ, tma_k, tK, tma_v, tV, tma_o, tO, tiled_mma_qk, tiled_mma_pv, tiled_mma_o,
                    sQ_layout, sK_layout, sV_layout, sO_layout, seqlen, heads, m_blocks, num_work,
                    scale_log2, section_heads, mCounter, partials, counters, split_from, ranges,
                    tail_blocks).launch(
            grid=[ctas, 1, 1], block=[self.threads, 1, 1], cluster=[self.cluster_m, 1, 1],
            min_blocks_per_mp=1, stream=stream)

    @cute.kernel
    def kernel(self, tma_q: cute.CopyAtom, tQ: cute.Tensor, tma_k: cute.CopyAtom, tK: cute.Tensor,
               tma_v: cute.CopyAtom, tV: cute.Tensor, tma_o: cute.CopyAtom, tO: cute.Tensor,
               tiled_mma_qk: cute.TiledMma, tiled_mma_pv: cute.TiledMma, tiled_mma_o: cute.TiledMma,
               sQ_layout: cute.ComposedLayout, sK_layout: cute.ComposedLayout,
               sV_layout: cute.ComposedLayout, sO_layout: cute.ComposedLayout,
               seqlen: cutlass.Int32, heads: cutlass.Int32, m_blocks: cutlass.Int32,
               num_work: cutlass.Int32, scale_log2: cutlass.Float32, section_heads: cutlass.Int32,
               mCounter: cute.Tensor, partials: cute.Tensor, counters: cute.Tensor,
               split_from: Optional[cutlass.Int32], ranges: Optional[cutlass.Int32],
               tail_blocks: Optional[cutlass.Int32]):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        first_work, _, _ = cute.arch.block_idx()
        work_stride, _, _ = cute.arch.grid_dim()
        cta_rank = cutlass.Int32(0)
        if cutlass.const_expr(self.cluster_m > 1):
            # Clusters take the work items; a cluster's CTAs are consecutive in x.
            cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
            first_work = first_work // self.cluster_m
            work_stride = work_stride // self.cluster_m

        if warp_idx == 0:
            cpasync.prefetch_descriptor(tma_q)
            cpasync.prefetch_descriptor(tma_k)
            cpasync.prefetch_descriptor(tma_v)
            cpasync.prefetch_descriptor(tma_o)

        smem = SmemAllocator()
        storage = smem.allocate(self.storage)
        bars = storage.barriers.data_ptr()
        k_bytes = cute.size_in_bytes(self.dtype, cute.slice_(sK_layout, (None, None, 0)))
        v_bytes = cute.size_in_bytes(self.dtype, cute.slice_(sV_layout, (None, None, 0)))
        q_bytes = cute.size_in_bytes(self.dtype, cute.slice_(sQ_layout, (None, None, 0)))
        math_warps = self.math_threads // 32
        k_ring = TmaRing(bars, self.stages, k_bytes, consumer_warps=math_warps,
                         cluster_mn=(self.cluster_m, 1))
        v_ring = TmaRing(bars + 2 * self.stages, self.stages, v_bytes, consumer_warps=math_warps,
                         cluster_mn=(self.cluster_m, 1))
        q_full = bars + 4 * self.stages
        q_empty = q_full + 1
        k_ring.init(warp_idx)
        v_ring.init(warp_idx)
        queue = None
        if cutlass.const_expr(self.cfg.dynamic_schedule):
            queue = WorkQueue(mCounter.iterator, storage.work.get_tensor(cute.make_layout(WORK_SLOTS)),
                              q_empty + 1, math_warps)
            queue.init(warp_idx)
        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(q_full, 1)
                # Q is free when every math warp is past its last Q K^T, or, when O is
                # staged in Q's buffer, when the store warp has seen O's stores read it.
                cute.arch.mbarrier_init(q_empty, 1 if self.cfg.o_reuses_q else math_warps)
            cute.arch.mbarrier_init_fence()
        # With a cluster the peer must see the rings' barriers before it multicasts or arrives.
        publish_ring_init(k_ring)

        sQ = storage.sQ.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
        sK = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)
        sV = storage.sV.get_tensor(sV_layout.outer, swizzle=sV_layout.inner)
        if cutlass.const_expr(self.cfg.o_reuses_q):
            sO = storage.sQ.get_tensor(sO_layout.outer, swizzle=sO_layout.inner)
        else:
            sO = storage.sO.get_tensor(sO_layout.outer, swizzle=sO_layout.inner)

        if warp_idx < 4:
            cute.arch.setmaxregister_decrease(REGISTER_SPLIT[self.math_wgs][0])
            if warp_idx == 0:
                self.produce(tma_q, tQ, tma_k, tK, tma_v, tV, sQ, sK, sV, k_ring, v_ring,
                             q_full, q_empty, q_bytes, seqlen, heads, m_blocks, num_work,
                             first_work, work_stride, section_heads, cta_rank, split_from, ranges,
                             tail_blocks, queue)
        else:
            cute.arch.setmaxregister_increase(REGISTER_SPLIT[self.math_wgs][1])
            self.consume(tiled_mma_qk, tiled_mma_pv, tiled_mma_o, tma_o, tO, sQ, sK, sV, sO, k_ring, v_ring,
                         q_full, q_empty, seqlen, heads, m_blocks, num_work, first_work,
                         work_stride, scale_log2, tidx - 128, warp_idx, section_heads, cta_rank,
                         partials, counters, split_from, ranges, tail_blocks, queue)

    # -- schedule ---------------------------------------------------------------------------
    @cute.jit
    def work_tile(self, work, heads, m_blocks, num_work, section_heads, cta_rank):
        """Work index -> (query tile, head, batch).
        Not causal: the query tiles of one head in a row (its K and V stay in L2). With a
        cluster of two, work w is a pair of consecutive tiles of one head; CTA r takes the
        pair's tile r (with an odd tile count the last pair's second CTA repeats the last tile:
        it must still load and release its halves of K and V, and it writes the same O).
        Causal (tiles of very different lengths): the (batch, head) pairs are cut into
        sections of `section_heads` whose K and V fit in L2 together; inside a section the
        tiles go longest first across its heads (tile rank major, head minor), which with the
        snake assignment of `nth_work` balances the CTAs' work."""
        m_block = work
        bh = work
        if cutlass.const_expr(not self.causal and self.cluster_m > 1):
            pairs = (m_blocks + 1) // 2
            bh = work // pairs
            m_block = cutlass.min(2 * (work - bh * pairs) + cta_rank, m_blocks - 1)
        elif cutlass.const_expr(not self.causal):
            bh = work // m_blocks
            m_block = work - bh * m_blocks
        else:
            pairs = num_work // m_blocks
            per_section = section_heads * m_blocks
            sec = work // per_section
            first_bh = sec * section_heads
            size = cutlass.min(section_heads, pairs - first_bh)
            rem = work - sec * per_section
            rank = rem // size
            bh = first_bh + (rem - rank * size)
            m_block = m_blocks - 1 - rank
        batch = bh // heads
        head = bh - batch * heads
        return m_block, head, batch

    @cute.jit
    def work_blocks(self, work, heads, m_blocks, num_work, section_heads, seqlen, cta_rank):
        """work_tile's (query tile, head, batch) and the number of key blocks the tile visits."""
        m_block, head, batch = self.work_tile(work, heads, m_blocks, num_work, section_heads, cta_rank)
        return m_block, head, batch, self.kv_blocks(m_block, seqlen)

    @cute.jit
    def work_item(self, work, heads, m_blocks, num_work, section_heads, seqlen, cta_rank, split_from, ranges,
                  tail_blocks):
        """(query tile, head, batch, first key block, key blocks, range, split tile, reducer, first
        writer range, follow) of work `work`. With the tail split, work split_from + 2 c + j is piece
        j of range c, which covers blocks [c L / R, (c + 1) L / R) of the split tiles' keys laid end
        to end (L blocks, R ranges). A range inside one tile is piece 0 alone; one that crosses a
        tile boundary is piece 0, the later tile's start (a writer), then piece 1, the earlier
        tile's end (`follow` says piece 1 comes next, in the same CTA). The piece holding a tile's
        last block is its reducer: it merges the states of ranges first_writer .. range - 1 (their
        pieces in this tile, each its range's piece 0). tail_pieces in __init__.py is the same
        arithmetic on the host, where the tests check it."""
        if cutlass.const_expr(not self.tail_split):
            m_block, head, batch, n_blocks = self.work_blocks(work, heads, m_blocks, num_work, section_heads,
                                                              seqlen, cta_rank)
            return m_block, head, batch, 0, n_blocks, 0, 0, True, 0, False
        in_tail = work >= split_from
        t = cutlass.max(work - split_from, 0)
        c = t // 2
        j = t - 2 * c
        n = (seqlen + self.tile_n - 1) // self.tile_n   # not causal: every tile's key blocks
        total = cutlass.max(tail_blocks, 1)
        r = cutlass.max(ranges, 1)
        b0 = c * tail_blocks // r
        b1 = (c + 1) * tail_blocks // r
        a = b0 // n
        boundary = (a + 1) * n
        later = (j == 0) & (b1 > boundary)
        split_tile = cutlass.select_(later, a + 1, a)
        start = cutlass.select_(later, boundary, b0)
        end = cutlass.select_(j == 0, b1, boundary)
        tile = cutlass.select_(in_tail, split_from + split_tile, work)
        m_block, head, batch, n_blocks = self.work_blocks(tile, heads, m_blocks, num_work, section_heads,
                                                          seqlen, cta_rank)
        tile_first = split_tile * n
        n_first = cutlass.select_(in_tail, start - tile_first, 0)
        n_count = cutlass.select_(in_tail, end - start, n_blocks)
        reducer = end == tile_first + n
        first_writer = ((tile_first + 1) * r + total - 1) // total - 1
        return m_block, head, batch, n_first, n_count, c, split_tile, reducer, first_writer, in_tail & later

    @cute.jit
    def piece_of_item(self, item, split_from, ranges, num_work):
        """Work item -> its first piece of work: a tile before split_from, range c's piece 0
        after; num_work (the loops' end) past the last range."""
        if cutlass.const_expr(not self.tail_split):
            return item
        piece = cutlass.select_(item < split_from, item, split_from + 2 * (item - split_from))
        return cutlass.select_(item >= split_from + ranges, num_work, piece)

    @cute.jit
    def next_fixed_work(self, work, follow, item_wave, first_work, work_stride, split_from, ranges, num_work):
        """The fixed stride with the tail split: (next work, items taken). A range's second piece
        follows its first in the same CTA; otherwise the CTA's next item in the stride."""
        following = work + 1
        taken = item_wave
        if not follow:
            taken = item_wave + 1
            following = self.piece_of_item(self.nth_work(taken, first_work, work_stride), split_from, ranges,
                                           num_work)
        return following, taken

    @cute.jit
    def nth_work(self, wave, first_work, work_stride):
        """This CTA's work in wave `wave` of the persistent grid. Causal: a snake (the order
        of the CTAs reverses every wave), so a CTA that took one of the longest tiles of a
        wave takes one of the shortest of the next."""
        work = wave * work_stride + first_work
        if cutlass.const_expr(self.causal):
            if wave % 2 == 1:
                work = wave * work_stride + (work_stride - 1 - first_work)
        return work

    @cute.jit
    def kv_blocks(self, m_block, seqlen):
        n_blocks = (seqlen + self.tile_n - 1) // self.tile_n
        if cutlass.const_expr(self.causal):
            # Square tiles: keys up to the diagonal block of this query tile.
            n_blocks = cutlass.min(n_blocks, m_block + 1)
        return n_blocks

    # -- producer (warp 0) ------------------------------------------------------------------
    @cute.jit
    def produce(self, tma_q, tQ, tma_k, tK, tma_v, tV, sQ, sK, sV, k_ring, v_ring, q_full,
                q_empty, q_bytes, seqlen, heads, m_blocks, num_work, first_work, work_stride,
                section_heads, cta_rank, split_from, ranges, tail_blocks, queue=None):
        D = self.head_dim
        lane = cute.arch.lane_idx()
        # With a cluster this CTA loads its half of each K and V block into both CTAs.
        cm = self.cluster_m
        kv_mask = None
        kv_rank = 0
        if cutlass.const_expr(cm > 1):
            kv_mask = cutlass.Int16((1 << cm) - 1)
            kv_rank = cta_rank
        position = RingPosition.producer_start(self.stages)
        q_phase = cutlass.Int32(1)
        wave = cutlass.Int32(0)     # tiles this CTA has taken: its wave (fixed stride), its queue slot
        item_wave = cutlass.Int32(0)    # with the tail split and the fixed stride: items taken
        work = self.piece_of_item(first_work, split_from, ranges, num_work)
        if cutlass.const_expr(queue is not None):
            queue.publish(work, wave, lane)
        while work < num_work:
            m_block, head, batch, n_first, n_blocks, _, _, _, _, follow = self.work_item(
                work, heads, m_blocks, num_work, section_heads, seqlen, cta_rank, split_from, ranges,
                tail_blocks)
            n_last = n_first + n_blocks - 1
            gQ = cute.local_tile(tQ[(None, None, head, batch)], (self.tile_m, D), (None, 0))
            gK = cute.local_tile(tK[(None, None, head, batch)], (self.tile_n, D), (None, 0))
            gV = cute.local_tile(tV[(None, None, head, batch)], (D, self.tile_n), (0, None))
            tQs, tQg = cpasync.tma_partition(tma_q, 0, cute.make_layout(1),
                                             cute.group_modes(sQ, 0, 2), cute.group_modes(gQ, 0, 2))
            tKs, tKg = cpasync.tma_partition(tma_k, kv_rank, cute.make_layout(cm),
                                             cute.group_modes(sK, 0, 2), cute.group_modes(gK, 0, 2))
            tVs, tVg = cpasync.tma_partition(tma_v, kv_rank, cute.make_layout(cm),
                                             cute.group_modes(sV, 0, 2), cute.group_modes(gV, 0, 2))
            # Blocks are visited from the last (the one that may need masking) down to 0.
            # First K, then Q (its buffer frees when the previous tile's last Q K^T is done),
            # then V: the first Q K^T needs only Q and K.
            n = n_last
            k_ring.producer_acquire(position.index, position.phase)
            cute.copy(tma_k, tKg[(None, n)], tKs[(None, position.index)],
                      tma_bar_ptr=k_ring.full_barrier(position.index), mcast_mask=kv_mask)
            cute.arch.mbarrier_wait(q_empty, q_phase)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(q_full, q_bytes)
            cute.copy(tma_q, tQg[(None, m_block)], tQs[(None, 0)], tma_bar_ptr=q_full)
            q_phase ^= 1
            v_ring.producer_acquire(position.index, position.phase)
            cute.copy(tma_v, tVg[(None, n)], tVs[(None, position.index)],
                      tma_bar_ptr=v_ring.full_barrier(position.index), mcast_mask=kv_mask)
            position = position.next()
            for j in range(1, n_blocks):
                n = n_last - j
                k_ring.producer_acquire(position.index, position.phase)
                cute.copy(tma_k, tKg[(None, n)], tKs[(None, position.index)],
                          tma_bar_ptr=k_ring.full_barrier(position.index), mcast_mask=kv_mask)
                v_ring.producer_acquire(position.index, position.phase)
                cute.copy(tma_v, tVg[(None, n)], tVs[(None, position.index)],
                          tma_bar_ptr=v_ring.full_barrier(position.index), mcast_mask=kv_mask)
                position = position.next()
            wave += 1
            if cutlass.const_expr(queue is not None):
                if cutlass.const_expr(self.tail_split):
                    # A range's second piece is this CTA's next work, without taking an item.
                    following = work + 1
                    if not follow:
                        following = self.piece_of_item(queue.take(lane, work_stride), split_from, ranges,
                                                       num_work)
                    work = following
                else:
                    work = queue.take(lane, work_stride)
                queue.publish(work, wave, lane)
            elif cutlass.const_expr(self.tail_split):
                work, item_wave = self.next_fixed_work(work, follow, item_wave, first_work, work_stride,
                                                       split_from, ranges, num_work)
            else:
                work = self.nth_work(wave, first_work, work_stride)
        if cutlass.const_expr(queue is not None):
            queue.finish(lane, work_stride)
        k_ring.producer_drain(position)
        v_ring.producer_drain(position)

    # -- math warpgroups --------------------------------------------------------------------
    @cute.jit
    def consume(self, tiled_mma_qk, tiled_mma_pv, tiled_mma_o, tma_o, tO, sQ, sK, sV, sO, k_ring, v_ring,
                q_full, q_empty, seqlen, heads, m_blocks, num_work, first_work, work_stride,
                scale_log2, ctidx, warp_idx, section_heads, cta_rank, partials, counters, split_from,
                ranges, tail_blocks, queue=None):
        D = self.head_dim
        tm, tn = self.tile_m, self.tile_n
        lane = cute.arch.lane_idx()
        # Warp-uniform warpgroup index: the WGMMA descriptors stay on the uniform datapath.
        wg = cute.arch.make_warp_uniform(ctidx // 128)
        wg_qk = tiled_mma_qk.get_slice(wg * 128)
        wg_pv = tiled_mma_pv.get_slice(wg * 128)
        tSrQ = tiled_mma_qk.make_fragment_A(wg_qk.partition_A(sQ))
        tSrK = tiled_mma_qk.make_fragment_B(wg_qk.partition_B(sK))
        # sV is (D, tn, stage): V^T, the (N, K) B operand of P V.
        tOrV = tiled_mma_pv.make_fragment_B(wg_pv.partition_B(sV))
        acc_s = cute.make_rmem_tensor(wg_qk.partition_shape_C((tm, tn)), cutlass.Float32)
        acc_o = cute.make_rmem_tensor(wg_pv.partition_shape_C((tm, D)), cutlass.Float32)
        p = tiled_mma_pv.make_fragment_A(wg_pv.partition_shape_A((tm, tn)))
        qk_blocks = cute.size(tSrQ, mode=[2])
        pv_blocks = cute.size(p, mode=[2])
        n_s = cute.size(acc_s)
        # Flat views: check_fragments proved P's registers hold S's values in S's order.
        s_flat = cute.make_tensor(acc_s.iterator, cute.make_layout(n_s))
        p_flat = cute.make_tensor(p.iterator, cute.make_layout(n_s))
        # P as 32-bit words: value pairs (2i, 2i + 1) packed by one cvt each.
        p_words = cute.recast_tensor(p_flat, cutlass.Int32)
        # The flat views above (and the row maps) take register i to be value i in the order
        # of the fragments' shapes: true of compact fragments, checked here.
        check_compact(p, acc_s, acc_o)

        thr_qk = tiled_mma_qk.get_slice(ctidx)

        softmax = OnlineSoftmax(scale_log2, self.s_half, self.o_half)

        signals = lane == 0
        # K and V stages are released to every CTA that multicast into them (lane r -> CTA r).
        ring_signals, ring_dst = signals, 0
        if cutlass.const_expr(self.cluster_m > 1):
            ring_signals, ring_dst = k_ring.release_signal(cta_rank, lane)
        if cutlass.const_expr(self.cfg.wg_epilogue):
            tiled_r2s, thr_r2s = self.epilogue.make_r2s(tiled_mma_o, ctidx % 128)
        else:
            tiled_r2s, thr_r2s = self.epilogue.make_r2s(tiled_mma_o, ctidx)

        if cutlass.const_expr(self.turns.enabled):
            # The first warpgroup takes the first turn.
            if wg == 0:
                self.turns.give_first_turn()

        position = RingPosition.consumer_start(self.stages)
        q_phase = cutlass.Int32(0)
        wave = cutlass.Int32(0)     # tiles this CTA has taken: its wave (fixed stride), its queue slot
        item_wave = cutlass.Int32(0)    # with the tail split and the fixed stride: items taken
        work = self.piece_of_item(first_work, split_from, ranges, num_work)
        if cutlass.const_expr(queue is not None):
            work = queue.receive(wave, lane)
        while work < num_work:
            m_block, head, batch, n_first, n_blocks, slot, split_tile, reducer, first_writer, follow = \
                self.work_item(work, heads, m_blocks, num_work, section_heads, seqlen, cta_rank, split_from,
                               ranges, tail_blocks)
            n_last = n_first + n_blocks - 1
            # O needs no zeroing: the tile's first P V overwrites it (ACCUMULATE off), so no
            # registers hold zeros through the first block.
            cute.arch.mbarrier_wait(q_full, q_phase)
            q_phase ^= 1

            # First block (n = n_last): masked, no P V before it.
            n = n_last
            k_ring.consumer_wait(position.index, position.phase)
            if cutlass.const_expr(not self.cfg.intra_wg_overlap or self.cfg.first_block_turn):
                self.turns.wait(wg)
            self.mma_qk(tiled_mma_qk, acc_s, tSrQ, tSrK, position.index, qk_blocks)
            if cutlass.const_expr(not self.cfg.intra_wg_overlap or self.cfg.first_block_turn):
                self.turns.hand_over(wg)
            cute.nvgpu.warpgroup.wait_group(0)
            k_ring.consumer_release(position.index, ring_signals, ring_dst)
            self.apply_mask(acc_s, thr_qk, m_block, n, seqlen)
            softmax.step(acc_s, True)
            self.convert_p(acc_s, p_words)
            v_stage = position.index
            position = position.next()

            if cutlass.const_expr(self.cfg.intra_wg_overlap):
                for j in range(1, n_blocks):
                    k_ring.consumer_wait(position.index, position.phase)
                    self.turns.wait(wg)
                    self.mma_qk(tiled_mma_qk, acc_s, tSrQ, tSrK, position.index, qk_blocks)
                    v_ring.consumer_wait(v_stage, position.previous_phase())
                    self.mma_pv(tiled_mma_pv, acc_o, p, tOrV, v_stage, pv_blocks, j > 1)
                    self.turns.hand_over(wg)
                    cute.nvgpu.warpgroup.wait_group(1)
                    k_ring.consumer_release(position.index, ring_signals, ring_dst)
                    softmax.step(acc_s, False)
                    cute.nvgpu.warpgroup.wait_group(0)
                    v_ring.consumer_release(v_stage, ring_signals, ring_dst)
                    self.convert_p(acc_s, p_words)
                    softmax.rescale(acc_o)
                    v_stage = position.index
                    position = position.next()
                # Every Q K^T of this tile is done: Q's buffer can take the next tile.
                if cutlass.const_expr(not self.cfg.o_reuses_q):
                    self.release_q(q_empty, signals)
                v_ring.consumer_wait(v_stage, position.previous_phase())
                self.turns.wait(wg)
                self.mma_pv(tiled_mma_pv, acc_o, p, tOrV, v_stage, pv_blocks, n_blocks > 1)
                self.turns.hand_over(wg)
                cute.nvgpu.warpgroup.wait_group(0)
                v_ring.consumer_release(v_stage, ring_signals, ring_dst)
            else:
                # P V of the first block, then whole blocks in order.
                v_ring.consumer_wait(v_stage, position.previous_phase())
                self.turns.wait(wg)
                self.mma_pv(tiled_mma_pv, acc_o, p, tOrV, v_stage, pv_blocks, False)
                cute.nvgpu.warpgroup.wait_group(0)
                v_ring.consumer_release(v_stage, ring_signals, ring_dst)
                for j in range(1, n_blocks):
                    k_ring.consumer_wait(position.index, position.phase)
                    self.mma_qk(tiled_mma_qk, acc_s, tSrQ, tSrK, position.index, qk_blocks)
                    self.turns.hand_over(wg)
                    cute.nvgpu.warpgroup.wait_group(0)
                    k_ring.consumer_release(position.index, ring_signals, ring_dst)
                    softmax.step(acc_s, False)
                    self.convert_p(acc_s, p_words)
                    softmax.rescale(acc_o)
                    v_ring.consumer_wait(position.index, position.phase)
                    self.turns.wait(wg)
                    self.mma_pv(tiled_mma_pv, acc_o, p, tOrV, position.index, pv_blocks, True)
                    cute.nvgpu.warpgroup.wait_group(0)
                    v_ring.consumer_release(position.index, ring_signals, ring_dst)
                    position = position.next()
                if cutlass.const_expr(not self.cfg.o_reuses_q):
                    self.release_q(q_empty, signals)
                self.turns.hand_over(wg)

            if cutlass.const_expr(self.tail_split):
                # A piece of a split tile: the writers hand their state over and store nothing.
                stores = work < split_from
                if work >= split_from:
                    stores = self.exchange.exchange(
                        [acc_o, softmax.row_max, softmax.row_sum], partials, counters, split_tile, slot,
                        reducer, first_writer, ctidx, lane, lambda other: softmax.merge(acc_o, *other))
                if stores:
                    self.finish_tile(softmax, acc_o, tma_o, tO, sO, tiled_r2s, thr_r2s, m_block, head,
                                     batch, wg, warp_idx, q_empty, signals)
            else:
                self.finish_tile(softmax, acc_o, tma_o, tO, sO, tiled_r2s, thr_r2s, m_block, head, batch,
                                 wg, warp_idx, q_empty, signals)
            wave += 1
            if cutlass.const_expr(queue is not None):
                work = queue.receive(wave, lane)
            elif cutlass.const_expr(self.tail_split):
                work, item_wave = self.next_fixed_work(work, follow, item_wave, first_work, work_stride,
                                                       split_from, ranges, num_work)
            else:
                work = self.nth_work(wave, first_work, work_stride)
        if cutlass.const_expr(self.cfg.wg_epilogue):
            self.epilogue.drain(warp_idx, wg)
        else:
            self.epilogue.drain(warp_idx)

    # -- pieces of the math loop ------------------------------------------------------------
    @cute.jit
    def finish_tile(self, softmax, acc_o, tma_o, tO, sO, tiled_r2s, thr_r2s, m_block, head, batch, wg,
                    warp_idx, q_empty, signals):
        """O / rowsum, then the TMA-store epilogue of the tile's rows."""
        D = self.head_dim
        tm = self.tile_m
        softmax.finalize(acc_o)
        if cutlass.const_expr(self.cfg.wg_epilogue):
            gO = cute.local_tile(tO[(None, None, head, batch)], (64, D), (m_block * self.math_wgs + wg, 0))
        else:
            gO = cute.local_tile(tO[(None, None, head, batch)], (tm, D), (m_block, 0))
        if cutlass.const_expr(self.cfg.o_reuses_q):
            # O's subtiles span both warpgroups' rows of Q: neither may write before the
            # other's last Q K^T has read Q.
            cute.arch.barrier(barrier_id=int(AttentionBarrier.Q_READ),
                              number_of_threads=self.math_threads)
        if cutlass.const_expr(self.cfg.wg_epilogue):
            self.epilogue.store_tile(tma_o, tiled_r2s, thr_r2s, acc_o, sO, gO, warp_idx, wg)
        else:
            self.epilogue.store_tile(tma_o, tiled_r2s, thr_r2s, acc_o, sO, gO, warp_idx)
        if cutlass.const_expr(self.cfg.o_reuses_q):
            if warp_idx == self.epilogue.store_warp:
                # The buffer is Q's again once O's stores have read it.
                cute.arch.cp_async_bulk_wait_group(0, read=True)
                self.release_q(q_empty, signals)

    @cute.jit
    def release_q(self, q_empty, signals):
        if signals:
            cute.arch.mbarrier_arrive(q_empty)

    def mma_qk(self, tiled_mma, acc_s, tSrQ, tSrK, stage, k_blocks):
        """S = Q K^T, one commit group. A fresh atom per call: its ACCUMULATE field changes
        here, and a field set inside one loop body must not leak into another."""
        cute.nvgpu.warpgroup.fence()
        atom = cute.make_mma_atom(tiled_mma.op)
        for kb in range(k_blocks):
            atom.set(warpgroup.Field.ACCUMULATE, kb != 0)
            cute.gemm(atom, acc_s, tSrQ[(None, None, kb, 0)], tSrK[(None, None, kb, stage)], acc_s)
        cute.nvgpu.warpgroup.commit_group()

    def mma_pv(self, tiled_mma, acc_o, p, tOrV, stage, k_blocks, accumulate):
        """O (+)= P V, one commit group; `accumulate` (run-time) is off for a tile's first."""
        cute.nvgpu.warpgroup.fence()
        atom = cute.make_mma_atom(tiled_mma.op)
        atom.set(warpgroup.Field.ACCUMULATE, accumulate)
        for kb in range(k_blocks):
            cute.gemm(atom, acc_o, p[(None, None, kb)], tOrV[(None, None, kb, stage)], acc_o)
            atom.set(warpgroup.Field.ACCUMULATE, True)
        cute.nvgpu.warpgroup.commit_group()

    @cute.jit
    def apply_mask(self, acc_s, thr_qk, m_block, n_block, seqlen):
        """-inf where the key is past the sequence or (causal) after the query. Only the
        coordinates of the thread's value 0 are computed; every other value sits at a
        trace-time offset from it (checked by check_fragments), so the mask is one compare
        against a per-row column limit per value and costs no registers per value."""
        r0, c0 = thr_qk.partition_C(cute.make_identity_tensor((self.tile_m, self.tile_n)))[0]
        # Columns of this block, relative to the thread's first column, that are kept: < limit.
        first_col = n_block * self.tile_n + c0
        lim0 = seqlen - first_col
        lim1 = lim0
        if cutlass.const_expr(self.causal):
            diag = m_block * self.tile_m + r0 + 1 - first_col
            lim0 = cutlass.min(lim0, diag)
            lim1 = cutlass.min(lim1, diag + 8)
        limit = (lim0, lim1)
        for i in cutlass.range_constexpr(cute.size(acc_s)):
            keep = self.s_cols[i] < limit[self.s_half[i]]
            acc_s[i] = cutlass.Float32(cutlass.select_(keep, acc_s[i], -cutlass.Float32.inf))

    @cute.jit
    def convert_p(self, acc_s, p_words):
        """P = S rounded to 16 bits, register for register (see pack_16bit)."""
        ptx_type = "bf16" if self.dtype is cutlass.BFloat16 else "f16"
        for w in cutlass.range_constexpr(cute.size(p_words)):
            p_words[w] = pack_16bit(acc_s[2 * w], acc_s[2 * w + 1], ptx_type)
