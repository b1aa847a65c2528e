"""Benchmark: read a real 242-launch report and print `kernelscope show`, end to end.

    python benchmarks/bench_show.py [--budget 3.0]

Runs the real command in a fresh process (imports, report loading, rendering) three
times and prints each wall time and the median; exits 1 when the median exceeds the
budget (3 s on the CI machine).
"""

from __future__ import annotations

import lzma
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _bench_common import budget_arguments, timed_kernelscope

REPORT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "h200-torch-242-launches.metrics6.ncu-rep.xz"


def main(argv=None) -> int:
    args = budget_arguments(argv, 3.0, "run")
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / REPORT.name.removesuffix(".xz")
        with lzma.open(REPORT) as src, open(report, "wb") as dst:
            shutil.copyfileobj(src, dst)
        times = []
        for _ in range(args.runs):
            elapsed, proc = timed_kernelscope(["show", str(report)])
            times.append(elapsed)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 2
            kernels = sum(1 for line in proc.stdout.splitlines() if "_kernel" in line)
        median = statistics.median(times)
    print(f"show of a {kernels}-launch report: " + ", ".join(f"{t:.2f} s" for t in times) + f"; median {median:.2f} s (budget {args.budget:.1f} s)")
    return 0 if median <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
