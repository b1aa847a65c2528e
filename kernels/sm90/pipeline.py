"""A shared-memory ring of `stages` buffers guarded by mbarriers, filled by TMA, drained by WGMMA.

Two barriers per stage:
- full[s]: the producer arms it with the byte count of one stage (arrive + expect_tx); the TMA
  unit completes it when the bytes land (from this CTA's loads and its cluster peers' multicasts).
- empty[s]: every consumer warp arrives once per CTA whose producer writes into this CTA's
  buffer (with multicast, the peers in the same cluster row and column), so a producer reuses
  stage s only when all the CTAs it multicasts into have finished reading it.

Position in the ring is a RingPosition (stage index and phase), which advances itself. A waiter
passes the parity of the phase it waits to see completed; producers start at phase 1 (the
barrier's "previous" phase, so the first pass through the ring does not block) and consumers at
phase 0. All methods are called at trace time inside a @cute.kernel.

Why TmaRing is not cutlass.pipeline.PipelineTmaAsync: the barriers and their protocol are the
same (full armed with the stage's bytes, empty counting one arrival per consumer warp and
multicast peer), but PipelineTmaAsync initialises its barriers and picks its signalling lanes
with code of its own, which changes the kernels' SASS; the shipped kernels were tuned and
measured with this code. The ring position does extend cutlass.pipeline's PipelineState.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.cutlass_dsl import extract_mlir_values, new_from_mlir_values
from cutlass.pipeline import PipelineState


class RingPosition(PipelineState):
    """Where a producer or a consumer is in a ring of `stages` slots: cutlass.pipeline's
    PipelineState (`index`, `phase`, `count`; `advance()` moves one slot and flips the phase on
    wrapping), plus the moves the shipped kernels make: a look at the next slot, the phase of
    the slot before, and a jump over a run-time number of slots."""

    @staticmethod
    def producer_start(stages: int) -> "RingPosition":
        """A producer starts at phase 1: its first pass waits on the empty barriers' previous
        phase, which counts as completed."""
        return RingPosition(stages, cutlass.Int32(0), cutlass.Int32(0), cutlass.Int32(1))

    @staticmethod
    def consumer_start(stages: int) -> "RingPosition":
        return RingPosition(stages, cutlass.Int32(0), cutlass.Int32(0), cutlass.Int32(0))

    def __new_from_mlir_values__(self, values) -> "RingPosition":
        return RingPosition(self.stages, cutlass.Int32(values[0]), cutlass.Int32(values[1]),
                            cutlass.Int32(values[2]))

    def next(self) -> "RingPosition":
        """The slot after this one (this position stays)."""
        following = RingPosition(self.stages, self._count, self._index, self._phase)
        following.advance()
        return following

    def previous_phase(self):
        """Phase of the slot just before this one."""
        return cutlass.Int32(cutlass.select_(self._index == 0, self._phase ^ 1, self._phase))

    def advance_by(self, steps) -> None:
        """Move `steps` (a run-time count) slots on."""
        total = self._index + steps
        wraps = total // self.stages
        self._index = total - wraps * self.stages
        self._phase = self._phase ^ (wraps & 1)
        self._count = self._count + steps


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
    def producer_drain(self, position: RingPosition):
        """Before exit: wait until the consumers (local and remote) released every stage, so no
        peer still arrives on, or multicasts into, this CTA's shared memory after it is gone.
        The caller's position does not move."""
        position = position.clone()
        for _ in cutlass.range_constexpr(self.stages):
            cute.arch.mbarrier_wait(self.empty + position.index, position.phase)
            position.advance()

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


def make_tma_load(tensor, smem_layout_staged, tile, multicast: int):
    """TMA load atom and its global view for one stage of `smem_layout_staged` (a box of `tile`),
    multicast to `multicast` CTAs of the cluster when above 1. Host side, at trace time."""
    op = (cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp() if multicast == 1
          else cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp())
    one_stage = cute.slice_(smem_layout_staged, (None, None, 0))
    return cute.nvgpu.cpasync.make_tiled_tma_atom(op, tensor, one_stage, tile, num_multicast=multicast)


@cute.jit
def publish_ring_init(ring: TmaRing):
    """After TmaRing.init: every peer must see initialised barriers before it arrives on them or
    multicasts into this CTA, so the whole cluster (or, without one, the CTA) synchronises."""
    if cutlass.const_expr(ring.cluster_size > 1):
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()
    else:
        cute.arch.sync_threads()


# L2 eviction-priority policy words for a TMA load's .L2::cache_hint operand (the fractional
# createpolicy encodings, whole line range): lines loaded "first" are the first a set evicts.
L2_POLICY = {"normal": 0x1000000000000000, "first": 0x12F0000000000000, "last": 0x14F0000000000000}


def _load_stage(ring: TmaRing, stage, a_coord, b_coord, a_side, b_side):
    """One stage's A and B boxes (a_coord: (tile m, k-tile), b_coord: (tile n, k-tile); a side:
    (atom, global view, smem view, multicast mask, L2 policy or None)). Plain Python run at trace
    time inside produce_ab_tiles; it has no control flow of its own."""
    full = ring.full_barrier(stage)
    for (atom, g, s, mask, policy), (tile, k) in ((a_side, a_coord), (b_side, b_coord)):
        if policy is None:
            cute.copy(atom, g[(None, tile, k)], s[(None, stage)], tma_bar_ptr=full, mcast_mask=mask)
        else:
            cute.copy(atom, g[(None, tile, k)], s[(None, stage)], tma_bar_ptr=full, mcast_mask=mask,
                      cache_policy=cutlass.Int64(policy))


@cute.jit
def produce_ab_tiles(ring: TmaRing, sched, k_tiles, tma_a, sA, gA, tma_b, sB, gB,
                     cta_m, cta_n, first_work, work_stride,
                     a_policy: cutlass.Constexpr = None, b_policy: cutlass.Constexpr = None):
    """The producer warp of a persistent GEMM: for each work item of `sched` this CTA owns
    (first_work, then every work_stride), TMA the k_tiles A and B tiles of its output tile into
    the ring. sA/sB are the staged smem tensors, gA (bm, bk, tiles_m, k_tiles) and
    gB (bn, bk, tiles_n, k_tiles) the tiled global views. With a cluster, an A tile is needed by
    the cn CTAs of this cluster row (rank = m + cm * n) and a B tile by the cm CTAs of this
    cluster column: each CTA loads 1/cn (1/cm) of the box and multicasts it to the others.
    a_policy/b_policy: an L2 eviction policy word for that operand's loads (L2_POLICY), or None
    (no hint: the loads compile as without the parameters)."""
    cm, cn = ring.cluster_mn
    tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
        tma_a, cta_n, cute.make_layout(cn), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
    tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
        tma_b, cta_m, cute.make_layout(cm), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
    a_mask = None
    b_mask = None
    if cutlass.const_expr(cn > 1):
        row_bits = sum(1 << (cm * j) for j in range(cn))
        a_mask = cutlass.Int16(row_bits) << cutlass.Int16(cta_m)
    if cutlass.const_expr(cm > 1):
        b_mask = cutlass.Int16((1 << cm) - 1) << cutlass.Int16(cta_n * cm)
    a_side = (tma_a, tAgA, tAsA, a_mask, a_policy)
    b_side = (tma_b, tBgB, tBsB, b_mask, b_policy)
    position = RingPosition.producer_start(ring.stages)
    work = first_work
    while work < sched.num_work:
        tm, tn = sched.tile_of_cta(work, cta_m, cta_n)
        k_first, k_count = sched.k_slice(work, k_tiles)
        position = _fill_stages(ring, position, tm, tn, k_first, k_count, a_side, b_side)
        work += work_stride
    if cutlass.const_expr(sched.stream_k):
        # The run of the shared tiles' k-tiles, piece by piece (the consumers walk it alike).
        pos, end = sched.shared_run(first_work, work_stride, k_tiles)
        while pos < end:
            piece, k_first, k_count = sched.shared_segment(first_work, work_stride, pos, end, k_tiles)
            tm, tn = sched.tile_of_cta(piece, cta_m, cta_n)
            position = _fill_stages(ring, position, tm, tn, k_first, k_count, a_side, b_side)
            pos += k_count
    ring.producer_drain(position)


@cute.jit
def _fill_stages(ring: TmaRing, position: RingPosition, tm, tn, k_first, k_count, a_side, b_side):
    """Load k-tiles k_first .. k_first + k_count - 1 of output tile (tm, tn) into the next
    k_count ring stages; returns the ring position after them."""
    for i in range(k_count):
        stage = position.index
        ring.producer_acquire(stage, position.phase)
        _load_stage(ring, stage, (tm, k_first + i), (tn, k_first + i), a_side, b_side)
        position.advance()
    return position
