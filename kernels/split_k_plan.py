"""How a launch of the persistent GEMMs splits K (host side, no DSL): which tiles are cut and
into how many slices. The device side, and why and how the slices meet, is in
kernels/sm90/split_k.py.

Two plans:
- **uniform** (`splits` N): every tile is cut into N slices. For problems with fewer output
  tiles than SMs and a long K.
- **tail**: a persistent grid of G clusters over T cluster tiles runs T // G full waves and then
  a last wave of T % G tiles with the rest of the SMs idle. Only those last tiles are cut, into
  the number of slices that fills the last wave best (at most one slice per k-tile), so the last
  wave takes a fraction of a tile's time. The full waves run unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The exchange of one partial tile (a writer's fp32 store, the reducer's load), in units of one
# k-tile of mainloop: a 128 x 256 x 64 k-tile is ~4.2 MFLOP, ~0.8 us at the ~5.3 TFLOP/s one H100
# SM sustains; 128 x 256 fp32 partial sums (128 KB) move at ~150 GB/s per SM in ~0.9 us. Both
# scale with the tile's area, so the ratio holds for other tiles.
EXCHANGE_KTILES_PER_SLICE = 1.1


@dataclass(frozen=True)
class SplitPlan:
    """One launch's split: cluster tiles from `split_from` on (in raster order) are cut into
    `slices` slices each. slices == 1: nothing is split."""

    split_from: int
    slices: int
    split_tiles: int          # cluster tiles that are split

    def workspace_sizes(self, cluster_ctas: int, tile_m: int, tile_n: int,
                        consumer_warps: int) -> tuple[int, int]:
        """(fp32 partial-sum elements, int32 counters) the launch needs (at least 1 each, so a
        launch that splits nothing still passes valid tensors)."""
        ctas = self.split_tiles * cluster_ctas
        return (max(1, ctas * (self.slices - 1) * tile_m * tile_n),
                max(1, ctas * consumer_warps))


def plan(cluster_tiles: int, clusters: int, k_tiles: int, splits: int, tail: bool,
         max_slices: int = 16) -> SplitPlan:
    """The split of a launch of `cluster_tiles` work tiles on a persistent grid of `clusters`:
    `splits` > 1 cuts every tile; `tail` cuts the last partial wave's tiles into the slice count
    s that minimises that wave's time, in tiles' mainloop times:
    ceil(tail tiles x s / clusters) / s (the waves of slices) + s x EXCHANGE_KTILES_PER_SLICE /
    k_tiles (the critical path: one writer's store, then the reducer's s - 1 loads)."""
    none = SplitPlan(cluster_tiles, 1, 0)
    if splits > 1:
        return SplitPlan(0, splits, cluster_tiles)
    if not tail or cluster_tiles <= clusters or k_tiles < 2:
        return none
    last = cluster_tiles % clusters
    if last == 0:
        return none
    best, best_cost = 1, 1.0
    for s in range(2, min(max_slices, k_tiles) + 1):
        cost = math.ceil(last * s / clusters) / s + s * EXCHANGE_KTILES_PER_SLICE / k_tiles
        if cost < best_cost - 1e-9:
            best, best_cost = s, cost
    if best == 1:
        return none
    return SplitPlan(cluster_tiles - last, best, last)
