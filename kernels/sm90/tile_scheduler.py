"""Persistent tile scheduler for Hopper kernels: which output tile a CTA works on next.

The grid is (cluster_m, cluster_n, P): a cluster of cluster_m x cluster_n CTAs is one unit of work
(a block of output tiles that share A rows or B columns through multicast), and P clusters stay
resident and stride through the work list. Work index w -> cluster tile (cm, cn) follows a raster
order (along M or along N) with grouping: the minor dimension is cut into panels of `group`
cluster tiles, and inside a panel the index walks across the panel first, so consecutive clusters
(which run at the same time) reuse the same few A and B tiles from L2. The "morton" order cuts the
grid into `group` x `group` blocks (bands of `group` rows, blocks walked along N) and walks each
full block along a Z-order curve, so that any 4^j consecutive work items form a square of tiles;
partial blocks at the bottom and right edges are walked column by column.

Everything here runs at trace time inside a @cute.jit / @cute.kernel function; runtime quantities
(tile counts derived from the problem shape) are DSL integers, the policy (cluster shape, raster,
group size) is static.
"""

from __future__ import annotations

from dataclasses import dataclass

import cutlass
from cutlass.cutlass_dsl import extract_mlir_values, new_from_mlir_values


RASTER_ORDERS = ("m", "n", "morton")


@dataclass(frozen=True)
class SchedulePolicy:
    """Static part of a schedule: cluster shape, raster direction and group size."""

    cluster_mn: tuple[int, int] = (1, 1)
    raster: str = "m"        # "m": consecutive work moves along M (B tile reused); "n": along N;
                             # "morton": Z-order inside group x group blocks
    group: int = 8           # panel width in cluster tiles along the minor dimension (morton: block side)

    def validate(self) -> str | None:
        """None when the policy is usable, otherwise the reason it is not."""
        if self.raster not in RASTER_ORDERS:
            return f"raster must be one of {RASTER_ORDERS}, got {self.raster!r}"
        if not isinstance(self.group, int) or self.group < 1:
            return f"raster group size must be a positive integer, got {self.group!r}"
        if self.raster == "morton" and (self.group & (self.group - 1) or self.group > 16):
            return f"morton order needs a power-of-two block side of at most 16, got {self.group}"
        cm, cn = self.cluster_mn
        if cm < 1 or cn < 1 or cm * cn > 4 or (cm & (cm - 1)) or (cn & (cn - 1)):
            return f"cluster {self.cluster_mn} is not supported (powers of two, at most 4 CTAs)"
        return None


def ceil_div(a, b):
    return (a + b - 1) // b


def num_clusters_to_launch(num_work: int, max_active_clusters: int) -> int:
    """Host-side: how many clusters the persistent grid holds (one CTA per SM at most)."""
    return max(1, min(num_work, max_active_clusters))


class TileScheduler:
    """Device-side view of a persistent schedule over a (tiles_m x tiles_n) grid of output tiles."""

    def __init__(self, policy: SchedulePolicy, tiles_m, tiles_n, split_from=None, slices=None,
                 stream_k: bool | str = False):
        self.policy = policy
        cm, cn = policy.cluster_mn
        # Cluster tiles: partial clusters at the edge still run as a whole cluster (multicast
        # needs every CTA); their out-of-range CTAs load zero-filled boxes and store nothing.
        self.clusters_m = ceil_div(tiles_m, cm)
        self.clusters_n = ceil_div(tiles_n, cn)
        self.num_work = self.clusters_m * self.clusters_n
        # Split-K (kernels/sm90/split_k.py), decided per launch: cluster tiles from `split_from`
        # on are `slices` consecutive work items each, one per slice of K. None: no split-K
        # (the kernel's code is then what it was without it).
        self.split_k = split_from is not None and not stream_k
        self.split_from = split_from
        self.slices = slices
        if self.split_k:
            self.num_work = split_from + (self.num_work - split_from) * slices
        # Stream-K (kernels/split_k_plan.py): the work items are the whole tiles before
        # `split_from`; the `shared_tiles` after them are walked as runs of k-tiles (shared_run).
        # stream_k: False, or the layout of the runs ("runs" or "heads"; True means "runs").
        if stream_k is True:
            stream_k = "runs"
        self.stream_k = stream_k
        self.shared_tiles = None
        if stream_k:
            self.shared_tiles = self.num_work - split_from
            self.num_work = split_from

    # The DSL carries objects through run-time control flow by their IR values.
    def __extract_mlir_values__(self):
        values = (extract_mlir_values(self.clusters_m) + extract_mlir_values(self.clusters_n)
                  + extract_mlir_values(self.num_work))
        if self.split_k:
            values += extract_mlir_values(self.split_from) + extract_mlir_values(self.slices)
        if self.stream_k:
            values += extract_mlir_values(self.shared_tiles)
        return values

    def __new_from_mlir_values__(self, values):
        new = object.__new__(TileScheduler)
        new.policy = self.policy
        new.split_k = self.split_k
        new.clusters_m = new_from_mlir_values(self.clusters_m, [values[0]])
        new.clusters_n = new_from_mlir_values(self.clusters_n, [values[1]])
        new.num_work = new_from_mlir_values(self.num_work, [values[2]])
        new.split_from, new.slices = None, None
        if self.split_k:
            new.split_from = new_from_mlir_values(self.split_from, [values[3]])
            new.slices = new_from_mlir_values(self.slices, [values[4]])
        new.stream_k = self.stream_k
        new.shared_tiles = None
        if self.stream_k:
            new.shared_tiles = new_from_mlir_values(self.shared_tiles, [values[3]])
        return new

    def cluster_tile(self, work):
        """Work index -> (cluster tile along M, cluster tile along N)."""
        if self.policy.raster == "morton":
            return self._morton_tile(work)
        if self.policy.raster == "m":
            major_extent, minor_extent = self.clusters_m, self.clusters_n
        else:
            major_extent, minor_extent = self.clusters_n, self.clusters_m
        group = self.policy.group
        per_panel = group * major_extent
        panel = work // per_panel
        within = work - panel * per_panel
        # The last panel may be narrower than `group`.
        width = cutlass.min(minor_extent - panel * group, group)
        minor = panel * group + within % width
        major = within // width
        if self.policy.raster == "m":
            return major, minor
        return minor, major

    def tile_of_cta(self, work, cta_in_cluster_m, cta_in_cluster_n):
        """Work index -> this CTA's output tile (m, n) in tile units."""
        cm, cn = self.policy.cluster_mn
        if self.split_k:
            work = self.split_unit(work)[0]
        cl_m, cl_n = self.cluster_tile(work)
        return cl_m * cm + cta_in_cluster_m, cl_n * cn + cta_in_cluster_n

    def split_unit(self, work):
        """Work index -> (cluster-tile index in raster order, its slice of K, the slices of that
        tile): (work, 0, 1) for a tile that is not split."""
        if not self.split_k:
            return work, 0, 1
        in_split = work >= self.split_from
        rest = _select(in_split, work - self.split_from, 0)
        tile = _select(in_split, self.split_from + rest // self.slices, work)
        return tile, _select(in_split, rest % self.slices, 0), _select(in_split, self.slices, 1)

    def k_slice(self, work, k_tiles):
        """Work index -> (first k-tile, number of k-tiles) it accumulates: all of them for a tile
        that is not split, else its slice (slices differ by at most one k-tile). Loops count
        from 0 so that their code is the same as over the whole K range."""
        if not self.split_k:
            return 0, k_tiles
        _, split, slices = self.split_unit(work)
        first = split * k_tiles // slices
        count = (split + 1) * k_tiles // slices - first
        if not isinstance(count, int):
            import cutlass.cute as cute
            # A trip count the compiler sees is warp-uniform keeps the loop's stage and
            # descriptor arithmetic on the uniform datapath, as over the whole K range.
            first, count = cute.arch.make_warp_uniform(first), cute.arch.make_warp_uniform(count)
        return first, count

    # -- stream-K: the shared tiles' k-tiles cut into one run per cluster (kernels/split_k_plan.py) --
    # Two layouts, both with runs of (nearly) equal length:
    # - "runs": the shared tiles' k-tiles in one row, tile by tile, cut into equal runs. A run's
    #   first piece may end a tile, its last piece may start one.
    # - "heads": run t < T (T shared tiles) takes tile t's first L = T x k_tiles // clusters
    #   k-tiles, all heads in step (as a whole-tile wave reads); the other clusters, the helpers,
    #   share the tiles' tails (k-tiles L .. k_tiles - 1) in one row, cut into equal runs.
    # A piece that starts at k-tile 0 is its tile's reducer; every other piece is a writer with
    # a slot of its own, tile-major: slot = tile x max_writers + its rank among the tile's writers.
    def _layout(self, clusters, k_tiles):
        """(head length L, the row's tile stride, its first k-tile, its runs, its first run)."""
        T = self.shared_tiles
        if self.stream_k == "heads":
            head = T * k_tiles // clusters
            return head, k_tiles - head, head, clusters - T, T
        return 0, k_tiles, 0, clusters, 0

    def _row_owner(self, q, clusters, k_tiles):
        """The run (counted from the row's first) whose part of the row holds row position q."""
        _, stride, _, runs, _ = self._layout(clusters, k_tiles)
        return ((q + 1) * runs - 1) // (self.shared_tiles * stride)

    def max_writers(self, clusters, k_tiles):
        """An upper bound on the writer pieces of one tile (the slots it owns)."""
        _, stride, _, runs, _ = self._layout(clusters, k_tiles)
        shortest = cutlass.max(self.shared_tiles * stride // runs, 1)
        return (stride + shortest - 1) // shortest + 1

    def shared_run(self, cluster, clusters, k_tiles):
        """(first, end): cluster `cluster`'s run, as positions of the row (a head's: of its tile)."""
        head, stride, _, runs, first_run = self._layout(clusters, k_tiles)
        total = self.shared_tiles * stride
        r = cutlass.max(cluster - first_run, 0)
        first, end = r * total // runs, (r + 1) * total // runs
        if self.stream_k == "heads":
            is_head = cluster < first_run
            first, end = _select(is_head, 0, first), _select(is_head, head, end)
        return first, end

    def shared_segment(self, cluster, clusters, pos, end, k_tiles):
        """The piece of a run from `pos` (before `end`) inside one tile: (its work index, first
        k-tile, number of k-tiles)."""
        _, stride, row_k, _, first_run = self._layout(clusters, k_tiles)
        tile = pos // stride
        within = pos - tile * stride
        first = row_k + within
        count = cutlass.min(stride - within, end - pos)
        if self.stream_k == "heads":
            is_head = cluster < first_run
            tile, first, count = (_select(is_head, cluster, tile), _select(is_head, pos, first),
                                  _select(is_head, end - pos, count))
        if not isinstance(count, int):
            import cutlass.cute as cute
            # Warp-uniform, as in k_slice: the mainloop's stage arithmetic stays on the uniform
            # datapath.
            first, count = cute.arch.make_warp_uniform(first), cute.arch.make_warp_uniform(count)
        return self.num_work + tile, first, count

    def _tile_writers(self, tile, clusters, k_tiles):
        """(first writer run, last writer run) of shared tile `tile` (counted from 0)."""
        _, stride, _, _, first_run = self._layout(clusters, k_tiles)
        first = self._row_owner(tile * stride, clusters, k_tiles)
        last = self._row_owner((tile + 1) * stride - 1, clusters, k_tiles)
        # "runs": the run holding the tile's first k-tile is its reducer, the writers come after
        # it; "heads": the whole row part of the tile (its tail) is written by helpers.
        if self.stream_k == "runs":
            first = first + 1
        return first_run + first, first_run + last

    def piece_writer(self, cluster, clusters, work, k_tiles):
        """For a writer piece of cluster `cluster` in tile `work`: (the reducer's run, the slot)."""
        tile = work - self.num_work
        first_writer, _ = self._tile_writers(tile, clusters, k_tiles)
        if self.stream_k == "heads":
            reducer = tile
        else:
            reducer = self._row_owner(tile * k_tiles, clusters, k_tiles)
        return reducer, tile * self.max_writers(clusters, k_tiles) + cluster - first_writer

    def tile_writers(self, work, clusters, k_tiles):
        """For the reducer of tile `work`: (its first slot, the number of writers)."""
        tile = work - self.num_work
        first_writer, last_writer = self._tile_writers(tile, clusters, k_tiles)
        return tile * self.max_writers(clusters, k_tiles), last_writer - first_writer + 1

    def _morton_tile(self, work):
        g = self.policy.group
        band = work // (g * self.clusters_n)
        within = work - band * (g * self.clusters_n)
        height = cutlass.min(self.clusters_m - band * g, g)
        block = within // (height * g)
        inside = within - block * (height * g)
        width = cutlass.min(self.clusters_n - block * g, g)
        # Z-order: even bits of `inside` give the column, odd bits the row.
        z_m, z_n = 0, 0
        for bit in range(g.bit_length() - 1):
            z_n = z_n + (((inside >> (2 * bit)) & 1) << bit)
            z_m = z_m + (((inside >> (2 * bit + 1)) & 1) << bit)
        full = (height == g) & (width == g)
        dm = _select(full, z_m, inside % height)
        dn = _select(full, z_n, inside // height)
        return band * g + dm, block * g + dn


def _select(cond, if_true, if_false):
    """`if_true if cond else if_false` for Python integers (host checks) and DSL values alike."""
    if isinstance(cond, bool):
        return if_true if cond else if_false
    return cutlass.Int32(cutlass.select_(cond, if_true, if_false))
