"""Correctness against an fp32 reference: how wrong, how many, and where.

An output is viewed as a matrix (rows = all leading dims flattened, columns = the last
dim). Besides max abs/rel error and the count over tolerance, the errors are located
(which rows, columns and tiles) and a few shapes of mistake that have a typical cause
are recognised: an error that depends only on the column (a per-column term such as a
weight or bias broadcast wrongly), only on the row, rows that are copies of one row
(a broadcast along rows), a per-row or per-column scale factor, and elements never
written (the output is poisoned with NaN before the launch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# How many indices to list before summarising as "...".
_MAX_LISTED = 8


@dataclass
class CorrectnessReport:
    ok: bool
    shape: tuple[int, ...]
    numel: int
    atol: float
    rtol: float
    max_abs_error: float
    max_rel_error: float            # max |out-ref| / |ref| over elements with |ref| > atol
    norm_rel_error: float           # ||out - ref|| / ||ref||
    bad_count: int                  # elements with |out-ref| > atol + rtol*|ref| (NaN counts as bad)
    nan_count: int                  # non-finite outputs (NaN poison left = never written)
    worst_index: tuple[int, ...] | None
    bad_rows: list[int] = field(default_factory=list)      # sorted, matrix view
    bad_cols: list[int] = field(default_factory=list)
    rows: int = 0
    cols: int = 0
    tile: tuple[int, int] | None = None
    bad_tiles: list[tuple[int, int]] = field(default_factory=list)
    tiles_total: int = 0
    diagnoses: list[str] = field(default_factory=list)

    def where(self) -> str:
        """One line saying where the errors are."""
        if self.bad_count == 0:
            return "none"
        parts = [f"rows {_ranges(self.bad_rows)} ({len(self.bad_rows)}/{self.rows})",
                 f"cols {_ranges(self.bad_cols)} ({len(self.bad_cols)}/{self.cols})"]
        if self.tile is not None:
            listed = ", ".join(f"({a},{b})" for a, b in self.bad_tiles[:_MAX_LISTED])
            more = ", ..." if len(self.bad_tiles) > _MAX_LISTED else ""
            parts.append(f"tiles {self.tile[0]}x{self.tile[1]}: {len(self.bad_tiles)}/{self.tiles_total} [{listed}{more}]")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        d = asdict(self)
        d["where"] = self.where()
        return d


def _ranges(idx: list[int]) -> str:
    """[0,1,2,5,7,8] -> '0-2,5,7-8', shortened after a few runs."""
    if not idx:
        return "-"
    runs: list[tuple[int, int]] = []
    start = prev = idx[0]
    for i in idx[1:]:
        if i == prev + 1:
            prev = i
            continue
        runs.append((start, prev))
        start = prev = i
    runs.append((start, prev))
    text = ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:_MAX_LISTED])
    return text + (",..." if len(runs) > _MAX_LISTED else "")


def _as_matrix(t: torch.Tensor) -> torch.Tensor:
    if t.dim() == 0:
        return t.reshape(1, 1)
    if t.dim() == 1:
        return t.reshape(1, -1)
    return t.reshape(-1, t.shape[-1])


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of element `flat` in a row-major tensor of `shape` (torch.unravel_index's first
    call imports several hundred modules: seconds, for one index)."""
    index = []
    for extent in reversed(shape):
        flat, i = divmod(flat, extent)
        index.append(i)
    return tuple(reversed(index))


def _periodic(idx: list[int], extent: int) -> str | None:
    """'every 64th starting at 0' when the bad indices form an arithmetic progression."""
    if len(idx) < 3 or len(idx) == extent:
        return None
    step = idx[1] - idx[0]
    if step > 1 and all(b - a == step for a, b in zip(idx, idx[1:])):
        return f"every {step}th starting at {idx[0]}"
    return None


def check(out: Any, ref: Any, *, atol: float, rtol: float,
          tile: tuple[int, ...] | None = None, dims: tuple[str, ...] = ("row", "col")) -> CorrectnessReport:
    """Compare `out` (any dtype, any device) with the fp32 reference `ref` (same shape). Both on
    one GPU: compared there (seconds less on the host for large outputs); else on the host."""
    import torch  # here, not at import: `profile` and `inspect` reach this module without needing torch

    out_t = torch.as_tensor(out)
    ref_t = torch.as_tensor(ref)
    if tuple(out_t.shape) != tuple(ref_t.shape):
        raise ValueError(f"output shape {tuple(out_t.shape)} differs from reference shape {tuple(ref_t.shape)}")
    shape = tuple(out_t.shape)
    device = out_t.device if out_t.is_cuda and out_t.device == ref_t.device else torch.device("cpu")
    o = _as_matrix(out_t.detach().float().to(device))
    r = _as_matrix(ref_t.detach().float().to(device))
    rows, cols = o.shape
    diff = (o - r).abs()
    finite = torch.isfinite(o)
    nan_count = int((~finite).sum())
    allowed = atol + rtol * r.abs()
    bad = ~(diff <= allowed)              # NaN compares false, so it is bad
    bad_count = int(bad.sum())

    diff_f = torch.where(finite, diff, torch.full_like(diff, float("inf")))
    max_abs = float(diff_f.max()) if diff_f.numel() else 0.0
    significant = r.abs() > atol
    rel = torch.where(significant, diff_f / r.abs().clamp_min(1e-30), torch.zeros_like(diff_f))
    max_rel = float(rel.max()) if rel.numel() else 0.0
    ref_norm = float(r.norm())
    norm_rel = float((torch.where(finite, o, torch.zeros_like(o)) - r).norm()) / ref_norm if ref_norm > 0 else 0.0
    if nan_count:
        norm_rel = float("inf")

    worst = None
    if diff_f.numel():
        flat = int(torch.argmax(diff_f))
        worst = _unravel(flat, shape)

    bad_rows = torch.nonzero(bad.any(dim=1)).flatten().tolist()
    bad_cols = torch.nonzero(bad.any(dim=0)).flatten().tolist()

    tile2 = None
    bad_tiles: list[tuple[int, int]] = []
    tiles_total = 0
    if tile is not None and len(tile) >= 1:
        tr, tc = (int(tile[-2]), int(tile[-1])) if len(tile) >= 2 else (1, int(tile[-1]))
        tile2 = (tr, tc)
        nt_r, nt_c = -(-rows // tr), -(-cols // tc)
        tiles_total = nt_r * nt_c
        if bad_count:
            padded = torch.zeros(nt_r * tr, nt_c * tc, dtype=torch.bool, device=device)
            padded[:rows, :cols] = bad
            per_tile = padded.reshape(nt_r, tr, nt_c, tc).any(dim=3).any(dim=1)
            bad_tiles = [tuple(int(v) for v in ij) for ij in torch.nonzero(per_tile).tolist()]

    report = CorrectnessReport(
        ok=bad_count == 0, shape=shape, numel=o.numel(), atol=atol, rtol=rtol,
        max_abs_error=max_abs, max_rel_error=max_rel, norm_rel_error=norm_rel,
        bad_count=bad_count, nan_count=nan_count, worst_index=worst,
        bad_rows=bad_rows, bad_cols=bad_cols, rows=rows, cols=cols,
        tile=tile2, bad_tiles=bad_tiles, tiles_total=tiles_total)
    if bad_count:
        report.diagnoses = diagnose(o, r, bad, finite, report, dims)
    return report


def diagnose(o: torch.Tensor, r: torch.Tensor, bad: torch.Tensor, finite: torch.Tensor,
             rep: CorrectnessReport, dims: tuple[str, ...] = ("row", "col")) -> list[str]:
    """Name the error patterns that point at a cause. `o`, `r`: fp32 matrices on the CPU."""
    import torch  # here, not at import: `profile` and `inspect` reach this module without needing torch

    rows, cols = o.shape
    row_name = dims[-2] if len(dims) >= 2 else "row"
    col_name = dims[-1] if dims else "col"
    found: list[str] = []
    if rep.nan_count:
        nf = ~finite
        nr = torch.nonzero(nf.any(dim=1)).flatten().tolist()
        nc = torch.nonzero(nf.any(dim=0)).flatten().tolist()
        found.append(f"{rep.nan_count} outputs are NaN/inf (the output is NaN-poisoned before the launch: "
                     f"never written, or NaN computed) in {row_name}s {_ranges(nr)} and {col_name}s {_ranges(nc)}")
    bad_rows, bad_cols = rep.bad_rows, rep.bad_cols
    # Where the bad elements are (needs no values).
    if bad_cols and len(bad_cols) <= cols // 2 and len(bad_rows) == rows:
        found.append(f"errors in every {row_name} but only {col_name}s {_ranges(bad_cols)}")
    if bad_rows and len(bad_rows) <= rows // 2 and len(bad_cols) == cols:
        found.append(f"errors in every {col_name} but only {row_name}s {_ranges(bad_rows)}")
    for name, idx, extent in ((row_name, bad_rows, rows), (col_name, bad_cols, cols)):
        p = _periodic(idx, extent)
        if p:
            found.append(f"bad {name}s are periodic: {p} (a tile-boundary or stride bug)")
    if rep.tile is not None and rep.bad_tiles and len(rep.bad_tiles) < rep.tiles_total:
        found.append(f"errors confined to {len(rep.bad_tiles)} of {rep.tiles_total} tiles "
                     f"({rep.tile[0]}x{rep.tile[1]})")
    if not bool(finite.all()):
        # The value-based tests below need finite numbers.
        return found

    err = o - r
    scale = float(r.abs().mean()) or 1.0
    tol = max(rep.atol, rep.rtol * scale)

    if rows >= 2:
        # Rows that are copies of one another while the reference rows differ: broadcast along rows.
        same_rows = float((o - o[0:1]).abs().max())
        ref_rows_differ = float((r - r[0:1]).abs().max()) > 4 * tol
        if same_rows <= tol and ref_rows_differ:
            found.append(f"every {row_name} of the output equals {row_name} 0 while the reference's differ: "
                         f"a value is broadcast along {row_name}s (wrong {row_name} index or stride 0)")
    if cols >= 2:
        same_cols = float((o - o[:, 0:1]).abs().max())
        ref_cols_differ = float((r - r[:, 0:1]).abs().max()) > 4 * tol
        if same_cols <= tol and ref_cols_differ:
            found.append(f"every {col_name} of the output equals {col_name} 0 while the reference's differ: "
                         f"a value is broadcast along {col_name}s (wrong {col_name} index or stride 0)")

    if rows >= 4 and len(bad_cols) < cols:
        # Error constant down each column (same in every row), nonzero somewhere.
        col_err = err.mean(dim=0, keepdim=True)
        if float((err - col_err).abs().max()) <= tol and bad_cols:
            found.append(f"the error depends only on the {col_name} (identical in every {row_name}; "
                         f"{col_name}s {_ranges(bad_cols)}): a per-{col_name} term (weight, bias, scale) "
                         f"is wrong or broadcast from the wrong index")
    if cols >= 4 and len(bad_rows) < rows:
        row_err = err.mean(dim=1, keepdim=True)
        if float((err - row_err).abs().max()) <= tol and bad_rows:
            found.append(f"the error depends only on the {row_name} (identical along each {row_name}; "
                         f"{row_name}s {_ranges(bad_rows)}): a per-{row_name} term is wrong")

    # Per-row or per-column scale factor: out = s * ref with s constant along one dim.
    def _scale_along(dim: int, name: str, example: str) -> None:
        num = (o * r).sum(dim=dim, keepdim=True)
        den = (r * r).sum(dim=dim, keepdim=True).clamp_min(1e-30)
        s = num / den
        resid = (o - s * r).abs()
        if float(resid.max()) <= 2 * tol and float((s - 1).abs().max()) > 1e-3:
            s = s.flatten()
            off = torch.nonzero((s - 1).abs() > 1e-3).flatten().tolist()
            found.append(f"each {name} is the reference times a per-{name} factor "
                         f"(factors {float(s.min()):.4g}..{float(s.max()):.4g}, off in {name}s {_ranges(off)}): "
                         f"a per-{name} scale (e.g. {example}) is wrong")

    if cols >= 4:
        _scale_along(1, row_name, "a normalisation")
    if rows >= 4:
        _scale_along(0, col_name, "a weight")

    return found
