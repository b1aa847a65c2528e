"""One tile computes per-row values, the other tiles of the same row block read them: a broadcast
between CTAs of a persistent kernel through a global workspace.

gemm_rmsnorm uses it so that the sums of squares of a row block of X are computed once, by the
block's first tile in the schedule (the publisher), instead of once per output tile: the other
tiles of the row block (the readers) skip the squares and read the publisher's rstd before their
epilogue.

The exchange is per consumer warp, as in split_k.py: the same kernel maps the same rows to the
same thread in every tile, so thread t of a reader needs exactly thread t's values of the
publisher, and warp w's counter covers warp w's stores. Per (row block, consumer warp):
- the publisher's lanes store their values (one 128-byte line per warp-wide store), fence, and
  lane 0 sets the counter to the number of readers (a release store);
- a reader's lanes poll until the counter is non-zero (acquire), read the values, and lane 0
  takes one off the counter. The last reader brings it back to 0, so the counters need zeroing
  once, when the workspace is made, not per launch.

Deadlock freedom rests on the same two facts as split-K: the publisher's work item comes before
every reader's in the schedule (kernels/sm90/tile_scheduler.py walks each row block from its
first column tile, in every raster order), and the persistent grid keeps every CTA resident, so
a reader only ever waits on work already handed to a running CTA. A workspace serves one launch
at a time (launches on one stream; not the same workspace on two streams at once).

Workspace layout: slot b (row block b) holds values * threads floats; value i of consumer thread
t is at b * values * threads + i * threads + t. Counters: one int32 per (row block, consumer
warp).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute


class RowBlockBroadcast:
    """Device side (static: the consumer threads and the values each publishes)."""

    def __init__(self, threads: int, values: int):
        self.threads = threads
        self.warps = threads // 32
        self.values = values

    def workspace_sizes(self, row_blocks: int) -> tuple[int, int]:
        """(floats, counters) of a workspace for `row_blocks` row blocks (host side)."""
        return row_blocks * self.values * self.threads, row_blocks * self.warps

    @cute.jit
    def publish(self, values: cute.Tensor, slots: cute.Tensor, counters: cute.Tensor, block, readers,
                tidx, lane):
        """Called by every consumer thread of the publisher tile of row block `block`."""
        threads = self.threads
        out = slots.iterator + (block * (self.values * threads) + tidx)
        for i in cutlass.range_constexpr(self.values):
            cute.arch.store(out + i * threads, values[i], cop="cg")
        # Each lane's stores are ordered before the warp meets; lane 0 then publishes them all.
        cute.arch.fence_acq_rel_gpu()
        cute.arch.sync_warp()
        if lane == 0:
            counter = counters.iterator + (block * self.warps + tidx // 32)
            cute.arch.store(counter, cutlass.Int32(readers), sem="release", scope="gpu")

    @cute.jit
    def read(self, values: cute.Tensor, slots: cute.Tensor, counters: cute.Tensor, block, tidx, lane):
        """Called by every consumer thread of a reader tile of row block `block`: waits for the
        publisher, fills `values` with its thread's values."""
        threads = self.threads
        counter = counters.iterator + (block * self.warps + tidx // 32)
        # Every lane polls and the exit is a warp vote, so the warp never diverges (split_k.py
        # says why that matters inside a persistent loop).
        seen = cute.arch.load(counter, cutlass.Int32, sem="acquire", scope="gpu")
        while cute.arch.vote_any_sync(seen == 0):
            seen = cute.arch.load(counter, cutlass.Int32, sem="acquire", scope="gpu")
        # No fence: each lane's own acquire orders its loads below after the publisher's stores.
        src = slots.iterator + (block * (self.values * threads) + tidx)
        for i in cutlass.range_constexpr(self.values):
            values[i] = cute.arch.load(src + i * threads, cutlass.Float32, cop="cg")
        # Nothing writes the values again in this launch, so the count may drop before the loads
        # land; a later launch on the same stream starts after this one ends.
        if lane == 0:
            cute.arch.red(counter, cutlass.Int32(-1), op="add", dtype=cutlass.Int32, sem="relaxed",
                          scope="gpu")
