"""Hopper epilogue: accumulators -> convert -> stmatrix into shared memory -> TMA store.

The output tile is cut into subtiles of `epi_tile`: `epi_m` rows (by default all rows of the CTA
tile) x `epi_n` columns, stored row block by row block. A tile taller than the tiled MMA (two m64
atoms per warpgroup) is stored in row blocks of the MMA's height: the accumulators hold a thread's
M repeats after all its N columns, so subtile (m, n) is the (m x subtiles per row + n)-th run of a
subtile's values, the same run as in a one-atom tile.
For each subtile every consumer thread converts its slice of the fp32 accumulators, writes it to
one of `stages` shared-memory buffers (stmatrix for 16-bit outputs), fences the generic-proxy
writes against the async proxy and meets the other consumer threads at a named barrier; then one
warp issues the TMA store of that buffer and commits it as a bulk group. Before a buffer is
written again, its store must have finished reading shared memory: the issuing thread waits until
at most `stages - 1` groups are pending and a second barrier publishes that to the writers. So up
to `stages` subtile stores are in flight while the next subtiles are converted. With
`buffer_each` (a buffer per subtile, as when the tile is staged in memory that is free for it
alone) no writer ever waits for a store.

With `groups` > 1 the consumers form independent groups of `consumer_threads` (one math warpgroup
each, say), each storing its own `epi_tile` rows through its own `stages` buffers, with its own
named barrier (`barrier_id + group`) and its own store warp (`store_warp + 4 * group`): one group's
epilogue then never waits for another's, so it can run while the others still compute. `group` may
be a run-time (warp-uniform) value; the default, the Python int 0, compiles as with one group.

Layouts and atoms are built inside the host @cute.jit function (they need the MLIR context);
`store_tile` runs inside the kernel.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.tensor_utils import LayoutEnum
import cutlass.utils.hopper_helpers as sm90_utils


class TmaStoreEpilogue:
    def __init__(self, c_dtype, tile_mn: tuple[int, int], epi_n: int, stages: int,
                 consumer_threads: int, store_warp: int, barrier_id: int, groups: int = 1,
                 epi_m: int | None = None, buffer_each: bool = False):
        epi_m = tile_mn[0] if epi_m is None else epi_m
        if tile_mn[1] % epi_n:
            raise ValueError(f"epilogue subtile width {epi_n} does not divide tile N {tile_mn[1]}")
        if tile_mn[0] % epi_m:
            raise ValueError(f"epilogue subtile height {epi_m} does not divide tile M {tile_mn[0]}")
        self.c_dtype = c_dtype
        self.epi_tile = (epi_m, epi_n)
        self.subtiles_n = tile_mn[1] // epi_n
        self.subtiles = (tile_mn[0] // epi_m) * self.subtiles_n
        self.stages = stages
        self.consumer_threads = consumer_threads
        self.store_warp = store_warp       # warp index (in the CTA) that issues the TMA stores
        # Named barrier of the `consumer_threads` that write the buffers (the kernel's enum).
        self.barrier_id = int(barrier_id)
        self.groups = groups
        # A buffer for every subtile: none is written twice in a tile, so nothing waits for a
        # store to finish reading before the next subtile (the caller keeps tiles apart).
        if buffer_each and stages != self.subtiles:
            raise ValueError(f"buffer_each needs {self.subtiles} stages (one per subtile), got {stages}")
        self.buffer_each = buffer_each

    # -- host side (inside @cute.jit) -------------------------------------------------------------
    def make_smem_layout(self):
        return sm90_utils.make_smem_layout_epi(
            self.c_dtype, LayoutEnum.ROW_MAJOR, self.epi_tile, self.stages * self.groups)

    def make_tma_store(self, c: cute.Tensor, smem_layout_staged):
        one_stage = cute.slice_(smem_layout_staged, (None, None, 0))
        return cute.nvgpu.cpasync.make_tiled_tma_atom(
            cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), c, one_stage, self.epi_tile)

    # -- device side ------------------------------------------------------------------------------
    def _sync(self, group=0):
        cute.arch.barrier(barrier_id=self.barrier_id + group, number_of_threads=self.consumer_threads)

    def make_r2s(self, tiled_mma, consumer_tidx):
        """Register -> shared copy matching the WGMMA accumulator layout (stmatrix when 16-bit)."""
        store_atom = sm90_utils.get_smem_store_op(
            LayoutEnum.ROW_MAJOR, elem_ty_d=self.c_dtype, elem_ty_acc=cutlass.Float32)
        if cutlass.const_expr(self.c_dtype.width == 16):
            shape_atom = store_atom
        else:
            # stmatrix moves 16-bit elements only; the thread->element map still follows the
            # accumulator fragment, taken from a 16-bit stmatrix tiling of the same MMA.
            shape_atom = cute.make_copy_atom(
                cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), cutlass.BFloat16)
        tiled_c = cute.make_tiled_copy_C_atom(shape_atom, tiled_mma)
        tiled_r2s = cute.make_tiled_copy_S(store_atom, tiled_c)
        return tiled_r2s, tiled_r2s.get_slice(consumer_tidx)

    @cute.jit
    def store_tile(self, tma_atom_c: cute.CopyAtom, tiled_r2s: cute.TiledCopy, thr_r2s,
                   accumulators: cute.Tensor, sC: cute.Tensor, gC_tile: cute.Tensor,
                   warp_idx, group=0):
        """Write one tile of accumulators (the CTA's, or with groups the group's `epi_tile` rows)
        to global memory through `sC` (staged)."""
        store_warp = self.store_warp + 4 * group
        first_buffer = self.stages * group
        tRS_sC = thr_r2s.partition_D(sC)                 # (R2S, R2S_M, R2S_N, stage)
        tRS_acc = tiled_r2s.retile(accumulators)        # accumulators seen as R2S fragments
        frag_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
        r_acc = cute.make_rmem_tensor(frag_shape, cutlass.Float32)
        r_out = cute.make_rmem_tensor(frag_shape, self.c_dtype)
        per_subtile = cute.size(r_acc)

        # Global side of the TMA store: the tile cut into epilogue subtiles.
        gC_sub = cute.zipped_divide(gC_tile, self.epi_tile)   # ((epi_m, epi_n), (row blocks, subtiles_n))
        sC_tma, gC_tma = cute.nvgpu.cpasync.tma_partition(
            tma_atom_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), gC_sub)

        for sub in cutlass.range_constexpr(self.subtiles):
            buf = first_buffer + sub % self.stages
            for v in cutlass.range_constexpr(per_subtile):
                r_acc[v] = tRS_acc[sub * per_subtile + v]
            r_out.store(r_acc.load().to(self.c_dtype))
            cute.copy(tiled_r2s, r_out, tRS_sC[(None, None, None, buf)])
            # stmatrix / st.shared are generic-proxy writes; TMA reads through the async proxy.
            cute.arch.fence_proxy("async.shared", space="cta")
            if cutlass.const_expr(not self.buffer_each):
                if warp_idx == store_warp:
                    # After the barrier below the writers move on to the next buffer, whose last
                    # store (issued `stages - 1` subtiles ago) must have finished reading it.
                    cute.arch.cp_async_bulk_wait_group(self.stages - 2 if self.stages > 1 else 0,
                                                       read=True)
            self._sync(group)
            if warp_idx == store_warp:
                cute.copy(tma_atom_c, sC_tma[(None, buf)],
                          gC_tma[(None, (sub // self.subtiles_n, sub % self.subtiles_n))])
                cute.arch.cp_async_bulk_commit_group()
            if cutlass.const_expr(self.stages == 1 and not self.buffer_each):
                # One buffer: its store must finish reading before anyone writes it again.
                if warp_idx == store_warp:
                    cute.arch.cp_async_bulk_wait_group(0, read=True)
                self._sync(group)

    @cute.jit
    def drain(self, warp_idx, group=0):
        """Before exit: shared memory must outlive the reads of every pending TMA store."""
        if warp_idx == self.store_warp + 4 * group:
            cute.arch.cp_async_bulk_wait_group(0, read=True)
