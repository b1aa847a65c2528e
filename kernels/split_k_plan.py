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
- **stream-K** (`stream_k`): the same full waves, and the last wave's tiles shared out over every
  cluster as one run of k-tiles each, of (nearly) equal length (layouts "runs" and "heads",
  kernels/sm90/tile_scheduler.py). About one partial sum per cluster crosses memory instead of the
  tail plan's slices - 1 per tile, which is what kept the tail plan off where the last wave is
  nearly full.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The tail plan's cost model, in units of one tile's whole-K mainloop time (what a last wave of
# unsplit tiles costs). Rates of one H100 SM and of the whole chip, measured here:
SM_TFLOPS = 5.3        # bf16 WGMMA per SM under load (~700 TFLOP/s / 132 SMs)
EXCHANGE_TBPS = 2.5    # partial sums written and read back, L2 and DRAM together
# The critical path of one tile (a writer's store, then the reducer's loads of s - 1 partials)
# in k-tiles of mainloop: 128 x 256 fp32 partials (128 KB) move at ~150 GB/s per SM in ~0.9 us,
# a 128 x 256 x 64 k-tile takes ~0.8 us; both scale with the tile area.
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
         max_slices: int = 16, cluster_ctas: int = 1, tile_k: int = 64) -> SplitPlan:
    """The split of a launch of `cluster_tiles` work tiles on a persistent grid of `clusters`:
    `splits` > 1 cuts every tile; `tail` cuts the last partial wave's tiles into the slice count
    s that minimises that wave's time, in tiles' whole-K mainloop times:
    - ceil(last x s / clusters) / s: the waves of slices;
    - s x EXCHANGE_KTILES_PER_SLICE / k_tiles: one tile's exchange on its critical path;
    - the whole wave's partial-sum traffic, last x cluster_ctas x (s - 1) tiles of fp32 written
      and read, at EXCHANGE_TBPS, over a tile's mainloop time at SM_TFLOPS; both scale with the
      tile's area, which cancels: last x cluster_ctas x (s - 1) x 4 x SM_TFLOPS /
      (EXCHANGE_TBPS x K). This term keeps 8192x4096x4096 whole on the H100 (50 split
      cluster tiles would move ~100 MB of partials, more time than the last wave saves)."""
    none = SplitPlan(cluster_tiles, 1, 0)
    if splits > 1:
        return SplitPlan(0, splits, cluster_tiles)
    if not tail or cluster_tiles <= clusters or k_tiles < 2:
        return none
    last = cluster_tiles % clusters
    if last == 0:
        return none
    K = k_tiles * tile_k
    best, best_cost = 1, 1.0
    for s in range(2, min(max_slices, k_tiles) + 1):
        cost = (math.ceil(last * s / clusters) / s + s * EXCHANGE_KTILES_PER_SLICE / k_tiles
                + last * cluster_ctas * (s - 1) * 4 * SM_TFLOPS / (EXCHANGE_TBPS * K))
        if cost < best_cost - 1e-9:
            best, best_cost = s, cost
    if best == 1:
        return none
    return SplitPlan(cluster_tiles - last, best, last)


STREAM_K_LAYOUTS = ("runs", "heads")


@dataclass(frozen=True)
class StreamKPlan:
    """One launch's stream-K share-out: the cluster tiles before `split_from` run whole, in waves
    of one per cluster; the `split_tiles` after them (the last partial wave) are cut into
    `clusters` runs of (nearly) equal length over their k-tiles, in `layout`
    (kernels/sm90/tile_scheduler.py: "runs" cuts the tiles' k-tiles in one row; "heads" gives
    each shared tile's first k-tiles to a run of its own and shares the tails out over the
    other clusters). split_tiles == 0: nothing is shared. `slices` is 1: the kernel's split-K
    parameter, which stream-K does not use."""

    split_from: int
    split_tiles: int
    clusters: int
    k_tiles: int = 1
    layout: str = "runs"
    slices: int = 1

    def max_writers(self) -> int:
        """Slots per shared tile: an upper bound on its writer pieces (the scheduler's
        `max_writers`, the same formula)."""
        T, k = self.split_tiles, self.k_tiles
        if self.layout == "heads":
            stride, runs = k - T * k // self.clusters, self.clusters - T
        else:
            stride, runs = k, self.clusters
        shortest = max(T * stride // runs, 1)
        return (stride + shortest - 1) // shortest + 1

    def workspace_sizes(self, cluster_ctas: int, tile_m: int, tile_n: int,
                        consumer_warps: int) -> tuple[int, int]:
        """(fp32 partial-sum elements, int32 counters): `max_writers` slots of one CTA tile per
        shared tile and CTA of its cluster, and a counter per (CTA, consumer warp) of the grid (a
        run reduces at most one tile)."""
        if self.split_tiles == 0:
            return 1, 1
        slots = self.split_tiles * self.max_writers() * cluster_ctas
        return slots * tile_m * tile_n, self.clusters * cluster_ctas * consumer_warps


def stream_k_share_out(cluster_tiles: int, clusters: int, k_tiles: int, layout: str = "runs") -> StreamKPlan:
    """The share-out of the last partial wave of `cluster_tiles` on `clusters`, whether or not it
    pays: nothing shared where some run would get no k-tile (a reducer waits for each writer it
    counts) or there is no partial wave."""
    whole = StreamKPlan(cluster_tiles, 0, clusters, k_tiles, layout)
    last = cluster_tiles % clusters if cluster_tiles >= clusters else cluster_tiles
    # ("heads": last x k_tiles >= clusters also gives every helper a tail k-tile: the tails hold
    # last x (k_tiles - floor(last x k_tiles / clusters)) >= clusters - last of them.)
    if last == 0 or k_tiles < 2 or last * k_tiles < clusters:
        return whole
    return StreamKPlan(cluster_tiles - last, last, clusters, k_tiles, layout)


def stream_k_plan(cluster_tiles: int, clusters: int, k_tiles: int, layout: str = "runs") -> StreamKPlan:
    """stream_k_share_out where it pays: it saves 1 - last / clusters of a tile's mainloop time and
    puts one partial sum's store and one load on a run's critical path
    (2 x EXCHANGE_KTILES_PER_SLICE k-tiles). A tile's reducer holds its first k-tile; writers
    never wait, so every wait ends (every CTA is resident)."""
    shared = stream_k_share_out(cluster_tiles, clusters, k_tiles, layout)
    if shared.split_tiles == 0:
        return shared
    saved = 1.0 - shared.split_tiles / clusters
    if saved <= 2 * EXCHANGE_KTILES_PER_SLICE / k_tiles:
        return StreamKPlan(cluster_tiles, 0, clusters, k_tiles, layout)
    return shared


def allocate_workspace(share: SplitPlan | StreamKPlan, cluster_ctas: int, tile_m: int, tile_n: int,
                       consumer_warps: int):
    """The launch's fp32 partial sums (uninitialised) and int32 counters (zeroed: every launch
    leaves them at zero again) on the current CUDA device, sized by `workspace_sizes`."""
    import torch

    n_partials, n_counters = share.workspace_sizes(cluster_ctas, tile_m, tile_n, consumer_warps)
    return (torch.empty(n_partials, dtype=torch.float32, device="cuda"),
            torch.zeros(n_counters, dtype=torch.int32, device="cuda"))

