"""What `profile` shows of the report it wrote, and the key metrics `sweep --profile` keeps.

Both run in a fresh child process (`python -m kernelscope.reports.profile_view REPORT`):
Nsight Compute's report module and torch in one process crashed on the device (SIGSEGV),
and a crash while reading must not take the written report's path with it.
"""

from __future__ import annotations

import json
import subprocess
import sys

from kernelscope.errors import UserError
from kernelscope.profiler.catalog import load_catalog
from kernelscope.profiler.compare import compare, readings
from kernelscope.profiler.sources import load_profile_run
from kernelscope.reports.findings import print_findings, print_headline
from kernelscope.reports.terminal import make_console, print_comparison, print_show
from kernelscope.rules.diagnosis import diagnose
from kernelscope.rules.engine import evaluate_all
from kernelscope.rules.line_locations import attach_locations

KEY_METRICS = (
    ("gpu__time_duration.sum", "ncu ns"),
    ("launch__registers_per_thread", "regs"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %"),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "mem %"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "occ %"),
    ("dram__bytes_read.sum", "DRAM rd B"),
)


def _load_pair(report_path: str, has_reference: bool, lines: bool = False):
    """(target, reference) of a report made by `profile`; a UserError when a range is empty."""
    target, reference, _ = load_profile_run(report_path, lines=lines)
    if target is None:
        raise UserError(f"{report_path}: no launch of the target was captured (report kept)", exit_code=3)
    if has_reference and reference is None:
        raise UserError(f"{report_path}: no launch of the reference was captured (report kept)", exit_code=3)
    return target, reference


def show_in_fresh_process(report_path: str, has_reference: bool) -> None:
    """Read the report and print the diff in a child process that has not loaded torch."""
    cmd = [sys.executable, "-X", "faulthandler", "-m", "kernelscope.reports.profile_view", report_path]
    if not has_reference:
        cmd.append("--no-reference")
    rc = subprocess.run(cmd).returncode
    if rc < 0:
        raise UserError(f"reading the report crashed (signal {-rc}); report kept: {report_path}", exit_code=3)
    if rc != 0:
        raise SystemExit(rc)


def key_metrics_in_fresh_process(report_path: str) -> dict:
    """The sweep's key metrics of the target in a report, read in a child without torch."""
    r = subprocess.run([sys.executable, "-m", "kernelscope.reports.profile_view", report_path, "--key-metrics"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        why = f"signal {-r.returncode}" if r.returncode < 0 else (r.stderr.strip().splitlines() or ["?"])[-1]
        raise UserError(f"reading {report_path} failed: {why}", exit_code=3)
    return json.loads(r.stdout.strip().splitlines()[-1])


def print_key_metrics(report_path: str) -> None:
    target_profile, _ = _load_pair(report_path, False)
    keys = [key for key, _ in KEY_METRICS] + ["dram__bytes_write.sum"]     # the counter floor needs both directions
    print(json.dumps({key: target_profile.value(key) for key in keys}))


def print_profile_diff(report_path: str, has_reference: bool) -> None:
    console = make_console()
    target_profile, ref_profile = _load_pair(report_path, has_reference, lines=True)
    console.print(f"captured: target {target_profile.launches} launch(es)"
                  + (f", reference {ref_profile.launches} launch(es)" if ref_profile else ""))
    if ref_profile is not None:
        # The same reading as `diff`: the verdict first, the tables, then the diagnosis against the reference.
        comparison = compare(target_profile, ref_profile)
        result = diagnose(target_profile, ref_profile)
        attach_locations(result.findings + result.shared, target_profile.source_lines, ref_profile.source_lines)
        print_headline(comparison, result, console)
        print_comparison(comparison, console)
        print_findings(result.findings, console, result.not_evaluated, result)
        return
    catalog = load_catalog()
    measured = [v for v in catalog.view_names() if v != "static"]
    print_show(console, [(target_profile, readings(target_profile, catalog, measured))],
               {v: catalog.views[v].title for v in measured})
    rules = evaluate_all(target_profile)
    attach_locations(rules.findings, target_profile.source_lines)
    print_findings(rules.findings, console, rules.not_evaluated)


if __name__ == "__main__":
    # The child process of `profile`: `python -m kernelscope.reports.profile_view REPORT [--no-reference | --key-metrics]`.
    try:
        if "--key-metrics" in sys.argv[2:]:
            print_key_metrics(sys.argv[1])
        else:
            print_profile_diff(sys.argv[1], "--no-reference" not in sys.argv[2:])
    except UserError as e:
        print(f"kernelscope: error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
