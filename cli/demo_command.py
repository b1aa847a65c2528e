"""`kernelscope demo`: a diagnosis that needs no GPU, from what the project ships.

It diffs recorded Nsight Compute reports (real H100 and H200 measurements kept under
tests/fixtures) and inspects a shipped kernel compile-only, printing each step's
command so the user can run it on their own reports and kernels.
"""

from __future__ import annotations

from pathlib import Path

import click

from kernelscope.errors import UserError

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
RECORDED = PACKAGE_ROOT / "tests" / "fixtures"
# (report, kernel A regex, kernel B regex, what it shows, the two kernels in the verdict, per line)
DEMO_DIFFS = [
    # A report with per-instruction samples and line information: where the time goes, per Python line.
    ("h100-gemm-vs-cublas-4096.lines.ncu-rep", "ks:target", "ks:reference",
     "the shipped CuTe DSL GEMM (A, as of 2026-11-23) vs cuBLAS (B), bf16 4096^3, H100, `kernelscope profile`, per line",
     ("the shipped GEMM", "cuBLAS at bf16 4096^3 (H100)"), True),
    # What an author runs next: their memory-bound kernel against the framework's own.
    ("h200-rmsnorm-vs-torch.quick.ncu-rep", "ks:target", "ks:reference",
     "the shipped CuTe DSL RMSNorm (A) vs torch's fused layer-norm kernel (B), bf16 16384x4096, H200, "
     "`kernelscope profile rmsnorm --vs torch.rmsnorm`",
     ("the shipped RMSNorm", "torch's layer-norm kernel at bf16 16384x4096 (H200)"), False),
]
DEMO_INSPECT = ("gemm", "sm_90a")


def recorded_report(name: str) -> Path:
    """A shipped report (xz-compressed; every command reads those directly)."""
    path = RECORDED / f"{name}.xz"
    if not path.exists():
        raise UserError(f"the recorded reports are not installed ({path} is missing); run from a source checkout (pip install -e .)")
    return path


@click.command()
@click.option("--skip-inspect", is_flag=True, help="Only the recorded-report part (no compile).")
@click.pass_context
def demo(ctx, skip_inspect):
    """Show a real diagnosis without a GPU: recorded reports and compile-only analysis."""
    from kernelscope.cli.report_commands import diff

    console = _console()
    name, regex_a, regex_b, _, (label_a, label_b), _ = DEMO_DIFFS[0]
    console.print(f"[bold]{verdict_sentence(recorded_report(name), regex_a, regex_b, label_a, label_b)}[/bold]")
    step = 1
    for name, regex_a, regex_b, what, _, per_line in DEMO_DIFFS:
        report = recorded_report(name)
        console.rule(f"[bold]{step}. Recorded report: {what}")
        console.print(f"[dim]$ kernelscope diff {report}:{regex_a} {report}:{regex_b}{' --lines' if per_line else ''}[/dim]")
        ctx.invoke(diff, a=f"{report}:{regex_a}", b=f"{report}:{regex_b}", lines=per_line)
        step += 1
    if not skip_inspect:
        target, arch = DEMO_INSPECT
        console.rule(f"[bold]{step}. Compile-only analysis of the shipped `{target}` kernel for {arch} (no GPU needed)")
        console.print(f"[dim]$ kernelscope inspect {target} --arch {arch}[/dim]")
        from kernelscope.cli.inspect_command import inspect

        ctx.invoke(inspect, target=target, arch=arch)
        step += 1
    console.rule(f"[bold]{step}. On a machine with a Hopper GPU and ncu")
    console.print("  kernelscope run gemm --vs cublas          # correctness, then timing against cuBLAS")
    console.print("  kernelscope profile gemm --vs cublas      # both under Nsight Compute, then this diff")
    console.print("  kernelscope diff mine.ncu-rep:REGEX theirs.ncu-rep:REGEX   # any two reports")


def verdict_sentence(report: Path, regex_a: str, regex_b: str, label_a: str, label_b: str) -> str:
    """'the shipped GEMM is 1.6% slower than cuBLAS ...; the main reason: ...', from the recorded report."""
    from kernelscope import api
    from kernelscope.reports.findings import reason_text

    result = api.evaluate(f"{report}:{regex_a}", f"{report}:{regex_b}").diagnosis
    v = result.verdict
    if v is None or not v.known:
        return f"{label_a} vs {label_b}: durations not recorded."
    if v.faster == "same":
        return f"{label_a} runs as fast as {label_b}."
    relation = "slower" if v.faster == "b" else "faster"
    share = (v.slower_by or 0.0) if v.faster == "b" else 1 - (v.b_ns / v.a_ns)
    sentence = f"{label_a} is {share * 100:.1f}% {relation} than {label_b}"
    reason, note = reason_text(result), result.unexplained
    if reason:
        return sentence + f"; the main reason: {reason}."
    return sentence + (f"; {note}." if note else ".")


def _console():
    from kernelscope.reports.terminal import make_console

    return make_console()


def register(group: click.Group) -> None:
    group.add_command(demo)
