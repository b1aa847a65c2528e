"""`kernelscope baseline save` and `kernelscope gate`: a pull-request gate on kernel performance.

Exit codes of `gate`: 0 pass (improvements included), 1 regression, 2 usage or input
error, 3 inconclusive (a different environment, a metric missing on one side, too noisy
to tell, or a suite that cannot be measured here); --accept-inconclusive turns 3 into 0.
"""

from __future__ import annotations

import os
import sys

import click

from kernelscope.api.gating import DEFAULT_GPU_SUITE, DEFAULT_STATIC_SUITE
from kernelscope.cli.output_files import check_output_file, force_option, write_text
from kernelscope.errors import UserError


def _progress(quiet: bool):
    if quiet:
        return None
    return lambda case_id: click.echo(f"kernelscope: measuring {case_id}", err=True)


def _parse_rule(pattern: str, spec: str):
    from kernelscope.gate.policy import MetricRule

    fields: dict = {"match": pattern}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        if item == "ignore":
            fields["ignore"] = True
            continue
        key, sep, raw = item.partition("=")
        if not sep:
            raise UserError(f"--rule {pattern} {spec}: expected KEY=VALUE items (rel, abs, min_effect, alpha, "
                            "better, min_samples) or `ignore`")
        key = key.strip()
        raw = raw.strip()
        if key == "better":
            fields[key] = raw
        elif key == "min_samples":
            try:
                fields[key] = int(raw)
            except ValueError:
                raise UserError(f"--rule {pattern}: min_samples must be an integer") from None
        else:
            try:
                fields[key] = float(raw.rstrip("%")) / (100.0 if raw.endswith("%") else 1.0)
            except ValueError:
                raise UserError(f"--rule {pattern}: {key} must be a number, not {raw!r}") from None
    return MetricRule.from_dict(fields, f"--rule {pattern}")


def _append(path: str, text: str, what: str) -> None:
    """GitHub's step summary is appended to, by design; everything else is written whole."""
    try:
        with open(path, "a") as f:
            f.write(text)
    except OSError as e:
        raise UserError(f"cannot write the {what} to {path}: {e.strerror or e}") from None


# ----------------------------------------------------------------------------- baseline save

@click.group()
def baseline():
    """Save the measurements the gate compares against."""


@baseline.command("save")
@click.option("--suite", "suite_path", default=None, metavar="FILE",
              help=f"Suite to run (default: {DEFAULT_GPU_SUITE}, or {DEFAULT_STATIC_SUITE} with --static-only).")
@click.option("--report", "report_path", default=None, metavar="FILE.ncu-rep",
              help="Take the counters of every kernel in this Nsight Compute report instead of running a suite.")
@click.option("-o", "--output", required=True, metavar="FILE.json", help="Where to write the baseline.")
@force_option
@click.option("--static-only", is_flag=True, help="Compile-only: no GPU, no timings (static facts per kernel).")
@click.option("--keep-reports", default=None, metavar="DIR", help="Keep the ncu reports of cases that ask for a profile.")
@click.option("--no-cache", is_flag=True, help="Compile even when the compile cache holds a case.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@click.option("--gpus", default=None, metavar="all|0,1,...",
              help="Spread the cases over these GPUs of this host (a local Dask cluster).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run the cases on this Dask scheduler's GPU workers (default: $DASK_SCHEDULER_ADDRESS).")
@click.option("--workers-per-gpu", default=2, show_default=True, help="With --gpus: worker processes per GPU.")
def baseline_save(suite_path, report_path, output, force, static_only, keep_reports, no_cache, quiet, gpus,
                  scheduler, workers_per_gpu):
    """Run the suite and write a baseline: per case the timing samples, the ncu counters (when
    the suite asks), the compile-only facts and the environment. Written atomically; an
    existing file is replaced only with --force."""
    from kernelscope.api.gating import baseline as measure_baseline

    check_output_file(output, force, "baseline")
    if report_path and suite_path:
        raise UserError("give --suite or --report, not both")
    if not report_path and (gpus or scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")):
        from kernelscope.api.gating import find_suite
        from kernelscope.api.measurements import Baseline
        from kernelscope.gate.suite import load_suite

        suite = load_suite(find_suite(suite_path or (DEFAULT_STATIC_SUITE if static_only else DEFAULT_GPU_SUITE)))
        result = Baseline(_save_distributed(suite, output, static_only, no_cache, keep_reports, quiet, gpus, scheduler,
                                            workers_per_gpu))
    else:
        result = measure_baseline(suite=suite_path, report=report_path, static_only=static_only,
                                  use_cache=not no_cache, keep_reports=keep_reports, progress=_progress(quiet))
    doc = result.to_dict()
    path = result.save(output, force=force)
    gpu = (doc["environment"].get("gpu") or {}).get("name")
    click.echo(f"kernelscope: wrote {doc['kind']} baseline of {len(doc['cases'])} cases to {path}"
               + (f" ({gpu})" if gpu else ""), err=True)
    wrong = [c["id"] for c in doc["cases"] if (c.get("correctness") or {}).get("ok") is False]
    if wrong:
        click.echo(f"kernelscope: warning: wrong output in {', '.join(wrong)}: the gate fails these until fixed",
                   err=True)


def _save_distributed(suite, output, static_only, no_cache, keep_reports, quiet, gpus, scheduler, workers_per_gpu):
    from kernelscope.gate.distributed import run_suite_on
    from kernelscope.profiler.executors import make_executor

    if static_only or suite.static_only:
        raise UserError("--gpus and --scheduler spread GPU measurements; a compile-only suite runs here")
    executor = make_executor(gpus, scheduler, workers_per_gpu)
    try:
        if not quiet:
            click.echo(f"kernelscope: {len(suite.cases)} cases on {executor.describe()}", err=True)
        return run_suite_on(executor, suite, output=output, use_cache=not no_cache,
                            keep_reports=os.path.abspath(keep_reports) if keep_reports else None,
                            progress=None if quiet else (lambda m: click.echo(f"kernelscope: measured {m}", err=True)))
    finally:
        executor.close()


# ----------------------------------------------------------------------------- gate

@click.command("gate")
@click.option("--baseline", "baseline_path", required=True, metavar="FILE.json", help="The baseline to compare with.")
@click.option("--suite", "suite_path", default=None, metavar="FILE",
              help="Suite to run now (default: the suite the baseline was saved from).")
@click.option("--report", "report_path", default=None, metavar="FILE.ncu-rep",
              help="Judge the kernels of this report (counters only) instead of running a suite.")
@click.option("--static-only", is_flag=True,
              help="Compile-only run; only the static facts are judged (automatic for a static baseline).")
@click.option("--accept-inconclusive", is_flag=True, help="Exit 0 instead of 3 when the result is inconclusive.")
@click.option("--min-effect", type=float, default=None, metavar="FRACTION",
              help="Smallest relative change of a median timing that counts (default 0.03).")
@click.option("--alpha", type=float, default=None, help="Level of the rank test for timings (default 0.01).")
@click.option("--rule", "rules", nargs=2, multiple=True, metavar="PATTERN SPEC",
              help="Per-metric rule, e.g. --rule 'counters:dram__*' rel=0.1 or --rule 'static:sass.NOP' ignore.")
@click.option("--markdown", "markdown_path", default=None, metavar="FILE", help="Write a markdown summary.")
@click.option("--junit", "junit_path", default=None, metavar="FILE", help="Write JUnit XML (one testcase per case).")
@click.option("--json", "json_path", default=None, metavar="FILE", help="Write the verdicts as JSON (schema kernelscope.gate).")
@click.option("--save-run", default=None, metavar="FILE.json", help="Also write this run as a baseline document.")
@click.option("--verbose", is_flag=True, help="List every metric, not only timings and changes.")
@click.option("--no-cache", is_flag=True, help="Compile even when the compile cache holds a case.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@force_option
def gate(baseline_path, suite_path, report_path, static_only, accept_inconclusive, min_effect, alpha, rules,
         markdown_path, junit_path, json_path, save_run, verbose, no_cache, quiet, force):
    """Compare a fresh run of the suite (or an ncu report) with a baseline and give each case and
    metric PASS, REGRESSION, IMPROVEMENT or INCONCLUSIVE.

    \b
    Exit status: 0 pass (improvements never fail), 1 regression, 2 usage or input error,
    3 inconclusive (different GPU, clocks, driver, ncu or toolchain; a metric missing on one
    side; too noisy to tell): --accept-inconclusive makes that 0.
    """
    from kernelscope.api.gating import gate_against
    from kernelscope.gate.baseline import save_baseline
    from kernelscope.reports import gate_output as out

    if suite_path and report_path:
        raise UserError("give --suite or --report, not both")
    # Everything that can be refused is refused before the suite runs (it may take minutes).
    outputs = [(markdown_path, "markdown summary"), (junit_path, "JUnit XML"), (json_path, "JSON verdicts"),
               (save_run, "run baseline")]
    for path, what in outputs:
        check_output_file(path, force, what)
    named = [os.path.abspath(p) for p, _ in outputs if p]
    if len(named) != len(set(named)):
        raise UserError("--markdown, --junit, --json and --save-run must name different files")
    if min_effect is not None and not 0 <= min_effect < 1:
        raise UserError(f"--min-effect {min_effect:g}: a relative change lies in [0, 1) (0.03 is 3%)")
    if alpha is not None and not 0 < alpha < 1:
        raise UserError("--alpha must lie between 0 and 1")
    parsed_rules = [_parse_rule(p, s) for p, s in rules]
    gated = gate_against(baseline_path, suite=suite_path, report=report_path, static_only=static_only,
                         accept_inconclusive=accept_inconclusive, min_effect=min_effect, alpha=alpha,
                         rules=parsed_rules, use_cache=not no_cache,
                         progress=_progress(quiet))
    if save_run:
        save_baseline(gated.current.to_dict(), save_run, force=force)
    result = gated.result
    suite_file = gated.source if gated.mode == "suite" else None

    out.print_gate(result, verbose=verbose)
    if markdown_path:
        write_text(markdown_path, out.gate_markdown(result, verbose=verbose), force=force, what="markdown summary")
    if out.under_github_actions():
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary and summary != markdown_path:
            _append(summary, out.gate_markdown(result, verbose=verbose) + "\n", "step summary")
        for line in out.github_annotations(result, file=suite_file):
            click.echo(line)
    if junit_path:
        write_text(junit_path, out.gate_junit(result), force=force, what="JUnit XML")
    if json_path:
        write_text(json_path, gated.to_json(), force=force, what="JSON verdicts")
    sys.exit(result.exit_code)


def register(group: click.Group) -> None:
    group.add_command(baseline)
    group.add_command(gate)
