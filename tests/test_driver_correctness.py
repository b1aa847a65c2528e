"""Error localisation on CPU tensors with planted bugs."""

import pytest
import torch

from kernelscope.profiler.correctness import check


def _rmsnorm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _data(rows=64, cols=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g)
    w = 1 + 0.5 * torch.randn(cols, generator=g)
    return x, w, _rmsnorm(x, w)


def test_correct_output_passes():
    x, w, ref = _data()
    r = check(ref.bfloat16(), ref, atol=2e-2, rtol=2e-2)
    assert r.ok and r.bad_count == 0 and r.diagnoses == [] and r.where() == "none"
    assert 0 < r.max_abs_error < 0.05 and r.norm_rel_error < 1e-2


def test_weight_broadcast_bug_is_named_per_column():
    x, w, ref = _data()
    out = _rmsnorm(x, w[0])          # the gain read at index 0 for every column
    r = check(out, ref, atol=2e-2, rtol=2e-2)
    assert not r.ok
    assert any("per-col factor" in d for d in r.diagnoses), r.diagnoses


def test_rows_copied_from_row_zero():
    x, w, ref = _data()
    out = ref[0:1].expand_as(ref).clone()
    r = check(out, ref, atol=2e-2, rtol=2e-2)
    assert r.bad_rows == list(range(1, 64))
    assert any("equals row 0" in d for d in r.diagnoses), r.diagnoses


def test_per_column_additive_error():
    x, w, ref = _data()
    out = ref.clone()
    out[:, 5] += 1.0
    out[:, 77] -= 0.5
    r = check(out, ref, atol=2e-2, rtol=2e-2)
    assert r.bad_cols == [5, 77] and len(r.bad_rows) == 64
    assert any("depends only on the col" in d for d in r.diagnoses), r.diagnoses
    assert "cols 5,77" in r.where()


def test_per_row_scale_error():
    x, w, ref = _data()
    factors = torch.ones(64, 1)
    factors[10:20] = 1.25
    r = check(ref * factors, ref, atol=2e-2, rtol=2e-2)
    assert r.bad_rows == list(range(10, 20))
    assert any("per-row factor" in d for d in r.diagnoses), r.diagnoses


def test_unwritten_tile_and_tile_localisation():
    x, w, ref = _data()
    out = ref.clone()
    out[16:32, 64:128] = float("nan")       # the NaN poison left in one tile
    r = check(out, ref, atol=2e-2, rtol=2e-2, tile=(16, 64))
    assert r.nan_count == 16 * 64
    assert r.bad_tiles == [(1, 1)] and r.tiles_total == 16
    assert any("NaN" in d for d in r.diagnoses)
    assert any("1 of 16 tiles" in d for d in r.diagnoses)


def test_periodic_columns():
    x, w, ref = _data()
    out = ref.clone()
    out[:, ::64] += 3.0 * torch.randn(64, 4)
    r = check(out, ref, atol=2e-2, rtol=2e-2)
    assert r.bad_cols == [0, 64, 128, 192]
    assert any("every 64th" in d for d in r.diagnoses), r.diagnoses


def test_higher_rank_outputs_are_flattened_to_rows():
    ref = torch.randn(2, 3, 8, 16)
    out = ref.clone()
    out[1, 2, 5, 7] += 1
    r = check(out, ref, atol=1e-3, rtol=1e-3, dims=("b", "h", "s", "d"))
    assert r.worst_index == (1, 2, 5, 7)
    assert r.bad_rows == [(1 * 3 + 2) * 8 + 5] and r.bad_cols == [7]


@pytest.mark.gpu
@pytest.mark.gpu_fast
def test_the_check_on_the_gpu_reports_what_the_host_check_reports():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    x, w, ref = _data(rows=256, cols=512)
    out = _rmsnorm(x, w[0])
    out[16:32, 64:128] = float("nan")
    on_host = check(out, ref, atol=2e-2, rtol=2e-2, tile=(16, 64))
    on_gpu = check(out.cuda(), ref.cuda(), atol=2e-2, rtol=2e-2, tile=(16, 64))
    for name in ("ok", "bad_count", "nan_count", "worst_index", "bad_rows", "bad_cols", "bad_tiles", "diagnoses"):
        assert getattr(on_gpu, name) == getattr(on_host, name), name
    assert on_gpu.max_abs_error == pytest.approx(on_host.max_abs_error)


def test_the_worst_index_is_torchs_unravelled_index():
    from kernelscope.profiler.correctness import _unravel

    for shape in [(3, 4, 5), (7,), (2, 3), (2, 1, 3, 2)]:
        numel = 1
        for extent in shape:
            numel *= extent
        for flat in range(numel):
            assert _unravel(flat, shape) == tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape))
