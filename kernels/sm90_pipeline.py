"""A shared-memory ring of `stages` buffers guarded by mbarriers, filled by TMA, drained by WGMMA.

Two barriers per stage:
- full[s]: the producer arms it with the byte count of one stage (arrive + expect_tx); the TMA
  unit completes it when the bytes land (from this CTA's loads and its cluster peers' multicasts).
- empty[s]: every consumer warp arrives once per CTA whose producer writes into this CTA's
  buffer (with multicast, the peers in the same cluster row and column), so a producer reuses
  stage s only when all the CTAs it multicasts into have finished reading it.

Position in the ring is (stage, phase) carried by the caller as DSL integers. A waiter passes the
parity of the phase it waits to see completed; producers start at phase 1 (the barrier's
"previous" phase, so the first pass through the ring does not block) and consumers at phase 0.
All methods are called at trace time inside a @cute.kernel.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.cutlass_dsl import extract_mlir_values, new_from_mlir_values


class TmaRing:
    """Barriers for one TMA -> consumer ring. `barriers` points at 2*stages Int64 words in smem."""

    def __init__(self, barriers: cute.Pointer, stages: int, tx_bytes: int, consumer_warps: int,
                 cluster_mn: tuple[int, int]):
        self.stages = stages
        self.tx_bytes = tx_bytes
        self.cluster_mn = cluster_mn
        self.cluster_size = cluster_mn[0] * cluster_mn[1]
        # Peers writing into (and reading from) this CTA's buffers: same cluster row or column.
        self.peers = cluster_mn[0] + cluster_mn[1] - 1
        self.consumer_arrivals = consumer_warps * self.peers
        self.full = barriers
        self.empty = barriers + stages

    # The DSL carries objects through run-time control flow by their IR values.
    def __extract_mlir_values__(self):
        return extract_mlir_values(self.full)

    def __new_from_mlir_values__(self, values):
        new = object.__new__(TmaRing)
        new.__dict__.update(self.__dict__)
        new.full = new_from_mlir_values(self.full, values)
        new.empty = new.full + self.stages
        return new

    # -- set-up (one warp, before any use; callers then sync the CTA or cluster) --------------
    @cute.jit
    def init(self, warp_idx):
        """Warp 0 initialises every barrier."""
        if warp_idx == 0:
            self._init_barriers()

    def _init_barriers(self):
        with cute.arch.elect_one():
            for s in range(self.stages):
                cute.arch.mbarrier_init(self.full + s, 1)
                cute.arch.mbarrier_init(self.empty + s, self.consumer_arrivals)
        cute.arch.mbarrier_init_fence()

    # -- producer -------------------------------------------------------------------------------
    def full_barrier(self, stage):
        return self.full + stage

    def producer_acquire(self, stage, phase):
        """Wait until every reader released `stage`, then arm full[stage] for one stage of bytes."""
        cute.arch.mbarrier_wait(self.empty + stage, phase)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(self.full + stage, self.tx_bytes)

    @cute.jit
    def producer_drain(self, stage, phase):
        """Before exit: wait until the consumers (local and remote) released every stage, so no
        peer still arrives on, or multicasts into, this CTA's shared memory after it is gone."""
        for _ in cutlass.range_constexpr(self.stages):
            cute.arch.mbarrier_wait(self.empty + stage, phase)
            stage += 1
            if stage == self.stages:
                stage = cutlass.Int32(0)
                phase ^= 1

    # -- consumer -------------------------------------------------------------------------------
    def consumer_wait(self, stage, phase):
        cute.arch.mbarrier_wait(self.full + stage, phase)

    @cute.jit
    def release_signal(self, cta_rank_in_cluster, lane):
        """(signals?, destination CTA rank) for this lane: lane r of each consumer warp arrives on
        CTA r's empty barrier when r shares this CTA's cluster row or column. Without a cluster,
        lane 0 arrives on the local barrier."""
        cm = self.cluster_mn[0]
        dst = lane % self.cluster_size
        same_row = (dst % cm) == (cta_rank_in_cluster % cm)
        same_col = (dst // cm) == (cta_rank_in_cluster // cm)
        signals = lane < self.cluster_size
        if cutlass.const_expr(self.cluster_size > 1):
            signals = signals and (same_row or same_col)
        return signals, dst

    @cute.jit
    def consumer_release(self, stage, signals, dst):
        if signals:
            if cutlass.const_expr(self.cluster_size == 1):
                cute.arch.mbarrier_arrive(self.empty + stage)
            else:
                cute.arch.mbarrier_arrive(self.empty + stage, dst)
