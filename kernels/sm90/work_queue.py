"""Work handed out at run time to a persistent grid: the next free CTA takes the next work item.

A static assignment (CTA c takes c, c + grid, ...) balances the SMs only when every item costs
the same. Where costs differ (causal attention: a query tile visits 1 to S / tile key blocks) and
the items are ordered longest first, taking them in turn from a counter is the greedy
longest-processing-time schedule: the busiest SM finishes at most about one short item after the
average one.

- Counter: two Int32 words in global memory, zero at the first launch: [0] the items taken so far
  beyond each CTA's first (CTA c starts with item c), [1] the CTAs that have finished. The last
  CTA to finish puts both back to zero, so the next launch on the same words needs no memset
  (launches on one stream run one after another; a launcher owns its words).
- Broadcast: the producer warp takes items (one atomic each, lane 0, when it has issued the
  loads of its current item) and hands each to the CTA's consumer warps through a ring of
  SLOTS shared-memory slots, each with a full mbarrier (one arrival: the producer's, after
  writing the slot) and an empty one (one arrival per consumer warp, after reading it). The
  sentinel is any item >= the number of items.
- The atomic's round trip to L2 delays the producer's first loads of its next item, while the
  consumers still work through the loads already issued. Tried and not kept: a scheduler warp of
  its own that claims items ahead (no reader waits for an atomic), 3 % slower at causal attention
  on an H100 (kernels/flash_attn/NOTES.md; not analysed further, the likely cause being its
  look-ahead: claimed, unstarted items unbalance the end of the grid).

All methods run at trace time inside a @cute.kernel; `taken` (items taken by this CTA so far,
an Int32 the caller carries through its loop) picks the slot and the phase.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

SLOTS = 2
BARRIER_WORDS = 2 * SLOTS


class WorkQueue:
    def __init__(self, counter, slots, barriers, consumer_warps: int):
        """`counter`: pointer to the two global words; `slots`: shared Int32 tensor of SLOTS;
        `barriers`: pointer to BARRIER_WORDS mbarrier words (full then empty per slot)."""
        self.counter = counter
        self.slots = slots
        self.full = barriers
        self.empty = barriers + SLOTS
        self.consumer_warps = consumer_warps

    # Carried into run-time branches by its IR values: it has none that change (pointers made
    # once before the branches), so it carries none.
    def __extract_mlir_values__(self):
        return []

    def __new_from_mlir_values__(self, values):
        return self

    @cute.jit
    def init(self, warp_idx):
        """Barrier counts; the caller fences and syncs the CTA after (as for its other barriers)."""
        if warp_idx == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(SLOTS):
                    cute.arch.mbarrier_init(self.full + s, 1)
                    cute.arch.mbarrier_init(self.empty + s, self.consumer_warps)

    @cute.jit
    def take(self, lane, grid):
        """The next item for this CTA (producer warp, all lanes get it)."""
        item = cutlass.Int32(0)
        if lane == 0:
            item = cute.arch.atomic_add(self.counter, cutlass.Int32(1), sem="relaxed", scope="gpu")
        return cute.arch.shuffle_sync(item, 0) + grid

    @cute.jit
    def publish(self, item, taken, lane):
        """Producer warp: hand `item` (the CTA's `taken`-th) to the consumers."""
        s = taken % SLOTS
        # A fresh barrier's previous phase counts as completed: the first use of a slot passes.
        cute.arch.mbarrier_wait(self.empty + s, ((taken // SLOTS) % 2) ^ 1)
        if lane == 0:
            self.slots[s] = item
            cute.arch.mbarrier_arrive(self.full + s)

    @cute.jit
    def receive(self, taken, lane):
        """Consumer warp: the CTA's `taken`-th item."""
        s = taken % SLOTS
        cute.arch.mbarrier_wait(self.full + s, (taken // SLOTS) % 2)
        item = self.slots[s]
        cute.arch.sync_warp()
        if lane == 0:
            cute.arch.mbarrier_arrive(self.empty + s)
        return item

    @cute.jit
    def finish(self, lane, grid):
        """Producer warp, after its last take: count this CTA finished; the last one resets the
        counter for the next launch (every other CTA's takes are ordered before its count)."""
        if lane == 0:
            done = cute.arch.atomic_add(self.counter + 1, cutlass.Int32(1), sem="acq_rel", scope="gpu")
            if done == grid - 1:
                cute.arch.atomic_exch(self.counter, cutlass.Int32(0), sem="relaxed", scope="gpu")
                cute.arch.atomic_exch(self.counter + 1, cutlass.Int32(0), sem="relaxed", scope="gpu")
