"""The tile scheduler's raster orders used by gemm_mma (row, column, Morton): each covers every
output tile exactly once, and Morton order walks squares. Pure arithmetic, no GPU, no compile."""

import pytest

from kernelscope.kernels.sm90.tile_scheduler import SchedulePolicy, TileScheduler


@pytest.mark.parametrize("tiles", [(1, 1), (7, 5), (16, 16), (33, 3), (3, 40), (9, 17), (64, 64)])
@pytest.mark.parametrize("group", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("raster", ["m", "n", "morton"])
def test_every_tile_once(tiles, group, raster):
    sched = TileScheduler(SchedulePolicy((1, 1), raster, group), *tiles)
    seen = [sched.tile_of_cta(w, 0, 0) for w in range(sched.num_work)]
    assert sorted(seen) == [(m, n) for m in range(tiles[0]) for n in range(tiles[1])]


def test_morton_walks_z_order_inside_a_block():
    sched = TileScheduler(SchedulePolicy((1, 1), "morton", 4), 8, 8)
    first = [sched.cluster_tile(w) for w in range(8)]
    assert first == [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3)]
    # Any aligned run of 4^j work items is a 2^j x 2^j square.
    for start in range(0, 64, 16):
        square = {sched.cluster_tile(w) for w in range(start, start + 16)}
        rows = {m for m, _ in square}
        cols = {n for _, n in square}
        assert len(rows) == 4 and len(cols) == 4


def test_morton_block_side_must_be_a_power_of_two():
    assert SchedulePolicy((1, 1), "morton", 6).validate()
    assert SchedulePolicy((1, 1), "morton", 32).validate()
    assert SchedulePolicy((1, 1), "morton", 8).validate() is None
