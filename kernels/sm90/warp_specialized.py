"""The set-up every warp-specialized persistent GEMM-shaped kernel of this project shares (gemm,
gemm_rmsnorm): one producer warpgroup whose warp 0 fills a TMA ring of A and B tiles
(multicast across the cluster), consumer warpgroups that drain it, a persistent grid of clusters
striding over the tile schedule.

`WarpSpecializedGemm` is a base class: the kernel class sets `ab_dtype`, `tile_mnk`, `stages`,
`cluster_mn`, `policy` and `threads`, and builds its own MMA, consumers and epilogue; the
methods here are the host-side (inside the @cute.jit __call__) and device-side (inside the
@cute.kernel) steps that are the same for all of them.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils

from kernelscope.kernels.sm90.pipeline import L2_POLICY, TmaRing, make_tma_load, produce_ab_tiles, publish_ring_init
from kernelscope.kernels.sm90.shared_storage import shared_storage
from kernelscope.kernels.sm90.tile_scheduler import TileScheduler


class WarpSpecializedGemm:
    PRODUCER_WARPS = 4
    PRODUCER_REGS = 40          # setmaxnreg of the producer warpgroup: it only issues TMA

    # L2 hints of the A and B loads: a name of L2_POLICY each, or "none" (no hint operand at all).
    load_hints = ("none", "none")

    def load_policies(self):
        """(a_policy, b_policy) for produce_ab_tiles, from `load_hints`."""
        return tuple(None if hint == "none" else L2_POLICY[hint] for hint in self.load_hints)

    # -- host side (inside @cute.jit) -------------------------------------------------------------
    def make_ab_smem_layouts(self, a_layout, b_layout):
        """Staged shared-memory layouts of A and B (a_layout, b_layout: their LayoutEnums)."""
        sA_layout = sm90_utils.make_smem_layout_a(a_layout, self.tile_mnk, self.ab_dtype, self.stages)
        sB_layout = sm90_utils.make_smem_layout_b(b_layout, self.tile_mnk, self.ab_dtype, self.stages)
        return sA_layout, sB_layout

    def make_tma_loads(self, mA: cute.Tensor, sA_layout, mB: cute.Tensor, sB_layout):
        """TMA loads of A and B: A is shared by the CTAs of a cluster row (same M tile), so it
        multicasts across the cn of them; B across the cm CTAs of a cluster column."""
        cm, cn = self.cluster_mn
        bm, bn, bk = self.tile_mnk
        tma_a, tA = make_tma_load(mA, sA_layout, (bm, bk), cn)
        tma_b, tB = make_tma_load(mB, sB_layout, (bn, bk), cm)
        return tma_a, tA, tma_b, tB

    def persistent_grid(self, mC: cute.Tensor, max_clusters, split_from=None, slices=None,
                        stream_k: bool | str = False):
        """(tiles_m, tiles_n, clusters to launch): the output tiles, and as many clusters as there
        is work (with split-K, `slices` items per cluster tile from `split_from` on), at most
        `max_clusters` (those resident at once), at least one. With stream-K tiles to share out,
        all `max_clusters`: the runs are cut for that many (kernels/split_k_plan.py)."""
        tiles_m = (mC.shape[0] + self.tile_mnk[0] - 1) // self.tile_mnk[0]
        tiles_n = (mC.shape[1] + self.tile_mnk[1] - 1) // self.tile_mnk[1]
        sched = TileScheduler(self.policy, tiles_m, tiles_n, split_from, slices, stream_k)
        clusters = cutlass.max(cutlass.min(sched.num_work, max_clusters), 1)
        if stream_k:
            clusters = cutlass.Int32(cutlass.select_(sched.shared_tiles > 0, max_clusters, clusters))
        return tiles_m, tiles_n, clusters

    def shared_storage(self, sA_layout, sB_layout, c_dtype, sC_layout, c_buffers: int = 1):
        """The CTA's shared memory: the ring's barrier words, the A and B stages and `c_buffers`
        epilogue buffers (field sC, or sC0, sC1, ... when more than one)."""
        c_names = ["sC"] if c_buffers == 1 else [f"sC{i}" for i in range(c_buffers)]
        return shared_storage(self.stages * 2, [("sA", self.ab_dtype, sA_layout), ("sB", self.ab_dtype, sB_layout)]
                              + [(name, c_dtype, sC_layout) for name in c_names])

    def launch(self, kernel, clusters, stream):
        cm, cn = self.cluster_mn
        kernel.launch(grid=[cm, cn, clusters], block=[self.threads, 1, 1], cluster=[cm, cn, 1],
                      min_blocks_per_mp=1, stream=stream)

    # -- device side (inside @cute.kernel) --------------------------------------------------------
    @staticmethod
    def thread_coordinates():
        """(thread, warp, lane, CTA m and n in its cluster, first work index, work stride, CTA
        rank in the cluster); the grid is (cluster m, cluster n, persistent clusters)."""
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        cta_m, cta_n, first_work = cute.arch.block_idx()
        _, _, work_stride = cute.arch.grid_dim()
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        return tidx, warp_idx, lane, cta_m, cta_n, first_work, work_stride, cta_rank

    @staticmethod
    @cute.jit
    def prefetch_descriptors(warp_idx, atoms):
        if warp_idx == 0:
            for atom in atoms:
                cute.nvgpu.cpasync.prefetch_descriptor(atom)

    def open_ring(self, barriers: cute.Pointer, warp_idx, sA_layout, sB_layout, consumer_warps: int) -> TmaRing:
        """The A/B ring over `barriers`, initialised and published to the cluster."""
        stage_bytes = (cute.size_in_bytes(self.ab_dtype, cute.slice_(sA_layout, (None, None, 0)))
                       + cute.size_in_bytes(self.ab_dtype, cute.slice_(sB_layout, (None, None, 0))))
        ring = TmaRing(barriers, self.stages, stage_bytes, consumer_warps=consumer_warps,
                       cluster_mn=self.cluster_mn)
        ring.init(warp_idx)
        publish_ring_init(ring)
        return ring

    def global_tiles(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        """gA (bm, bk, tiles_m, k_tiles), gB (bn, bk, tiles_n, k_tiles), gC (bm, bn, tiles_m,
        tiles_n) and the number of k-tiles."""
        bm, bn, bk = self.tile_mnk
        gA = cute.local_tile(mA, (bm, bk), (None, None))
        gB = cute.local_tile(mB, (bn, bk), (None, None))
        gC = cute.local_tile(mC, (bm, bn), (None, None))
        return gA, gB, gC, cute.size(gA, mode=[3])

    @cute.jit
    def run_producer(self, warp_idx, ring: TmaRing, sched, k_tiles, tma_a, sA, gA, tma_b, sB, gB,
                     cta_m, cta_n, first_work, work_stride):
        """The producer warpgroup: gives registers back; its warp 0 fills the ring."""
        cute.arch.setmaxregister_decrease(self.PRODUCER_REGS)
        if warp_idx == 0:
            a_policy, b_policy = self.load_policies()
            produce_ab_tiles(ring, sched, k_tiles, tma_a, sA, gA, tma_b, sB, gB,
                             cta_m, cta_n, first_work, work_stride, a_policy, b_policy)
