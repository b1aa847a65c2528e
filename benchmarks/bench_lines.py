"""Benchmark: the per-line views end to end, on one CPU core.

    python benchmarks/bench_lines.py [--runs 5] [--json FILE]

1. `kernelscope show FULL:@1 --lines` on the full-set report of a cuBLAS GEMM (38 sections, per-PC
   SourceCounters, 1,205 instructions; budget 2 s);
2. `kernelscope show LINES:@0 --lines` on the H100 gemm report with line information (budget 2 s);
3. `kernelscope inspect gemm --lines` with the compile (and its nvdisasm listing) cached (budget 1 s).

Each runs the real command in a fresh process, pinned to one core (`taskset -c 0` where present,
as on a CI core). The budget is held against the median CPU time of the process and its threads
and children (user + system): what the command costs on an uncontended core. The wall time is
printed beside it; on a shared machine it also counts the waits for a core. Exits 1 when a median
is over its budget. Reports are decompressed once beforehand (a plain .ncu-rep, as ncu writes it).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CASES = (
    ("show --lines, full-set report, one kernel (cuBLAS, no line information)",
     ["show", "{full}:@1", "--lines"], 2.0),
    ("show --lines, H100 gemm report with line information, one kernel",
     ["show", "{lines}:@0", "--lines"], 2.0),
    ("inspect gemm --lines, compile cached", ["inspect", "gemm", "--lines"], 1.0),
)


def _plain(name: str, folder: Path) -> Path:
    out = folder / name
    with lzma.open(FIXTURES / f"{name}.xz") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _time(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run."""
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*pin, sys.executable, "-m", "kernelscope", *argv], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "COLUMNS": "160"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", dest="json_path", default=None)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"full": _plain("h200-cute-add-and-cublas-gemm.full.ncu-rep", Path(tmp)),
                 "lines": _plain("h100-gemm-vs-cublas-4096.lines.ncu-rep", Path(tmp))}
        _time(["inspect", "gemm", "--lines"])        # fills the compile cache and the listing cache
        for label, argv, budget in CASES:
            argv = [a.format(**paths) for a in argv]
            _time(argv)                                # warm the file cache
            runs = [_time(argv) for _ in range(args.runs)]
            median = statistics.median(c for c, _ in runs)
            wall = statistics.median(w for _, w in runs)
            results.append({"case": label, "argv": argv[:1] + [a.replace(tmp, "<tmp>") for a in argv[1:]],
                            "cpu_s": [c for c, _ in runs], "wall_s": [w for _, w in runs], "median_cpu_s": median,
                            "median_wall_s": wall, "budget_s": budget, "ok": median <= budget})
            print(f"{label}: CPU " + ", ".join(f"{c:.2f}" for c, _ in runs) + f" s; median {median:.2f} s "
                  f"(budget {budget:.1f} s){'' if median <= budget else '  OVER'}; median wall {wall:.2f} s")
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump({"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                                  "pinned to one with taskset",
                       "load_average": os.getloadavg(),
                       "python": platform.python_version(), "runs": results}, f, indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
