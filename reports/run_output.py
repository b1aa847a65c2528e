"""What `kernelscope run` prints: correctness of both sides, then their timings."""

from __future__ import annotations


def fmt(v, spec: str = ".3f", unit: str = "") -> str:
    if v is None:
        return "n/a"
    return f"{v:{spec}}{unit}"


def print_run(console, result, do_bench_ms: float | None) -> None:
    from rich.table import Table

    from kernelscope.profiler.assignments import format_config, format_shape
    from kernelscope.reports.terminal import print_timing_checks

    console.print(f"[bold]{result.target}[/bold] vs [bold]{result.reference or '(no reference)'}[/bold]  "
                  f"shape {format_shape(result.shape)}  {result.dtype}  config {format_config(result.config)}  "
                  f"on {result.device}")
    corr = Table(title="Correctness against the fp32 reference", title_justify="left", show_edge=False)
    for col in ("", "max abs", "max rel", "||err||/||ref||", "over tol", "NaN", "where"):
        corr.add_column(col, justify="right" if col not in ("", "where") else "left")
    for side in (result.target_side, result.reference_side):
        if side is None or side.correctness is None:
            continue
        c = side.correctness
        corr.add_row(side.name, f"{c.max_abs_error:.3g}", f"{c.max_rel_error:.3g}", f"{c.norm_rel_error:.3g}",
                     f"{c.bad_count}/{c.numel}", str(c.nan_count), c.where())
    console.print(corr)
    c = result.target_side.correctness
    if c is not None:
        verdict = "[green]PASS[/green]" if c.ok else "[red]FAIL[/red]"
        console.print(f"  target {verdict} (atol {c.atol:g}, rtol {c.rtol:g}; worst at {c.worst_index})")
        for d in c.diagnoses:
            console.print(f"  [yellow]diagnosis:[/yellow] {d}")

    t = Table(title="Timing (CUDA events per launch, L2 flushed before each)", title_justify="left", show_edge=False)
    for col in ("", "median ms", "IQR ms", "n", "TFLOP/s", "GB/s", "% of peak"):
        t.add_column(col, justify="right" if col else "left")
    for side in (result.target_side, result.reference_side):
        if side is None or side.timing is None:
            continue
        tm = side.timing
        pct = f"{side.pct_of_peak:.1f}% {side.peak_kind}" if side.pct_of_peak is not None else "n/a"
        t.add_row(side.name, f"{tm.median_ms:.4f}", f"{tm.iqr_ms:.4f}", str(tm.n), fmt(side.tflops, ".2f"),
                  fmt(side.gbps, ".0f"), pct)
    console.print(t)
    sp = result.speedup_vs_reference
    if sp is not None:
        word = "faster" if sp >= 1 else "slower"
        console.print(f"  target is {sp:.3f}x the reference's speed ({word}; reference time / target time)")
    for side in (result.target_side, result.reference_side):
        if side is not None and side.timing is not None:
            print_timing_checks(console, side.name, side.timing.checks)
    if result.peaks is not None:
        p = result.peaks
        console.print(f"  peaks ({'cached' if p.cached else 'measured now'} {p.measured_at}): copy "
                      f"{fmt(p.copy_gbps, '.0f')} GB/s, bf16 matmul {fmt(p.bf16_matmul_tflops, '.0f')} TFLOP/s",
                      style="dim")
    if do_bench_ms is not None:
        ours = result.target_side.timing.median_ms
        diff = 100.0 * (ours - do_bench_ms) / do_bench_ms
        console.print(f"  triton.testing.do_bench median {do_bench_ms:.4f} ms vs kernelscope {ours:.4f} ms "
                      f"({diff:+.2f}%)")
