"""Benchmark: `kernelscope inspect` of a request already in the compile cache, end to end.

    python benchmarks/bench_inspect_cached.py [--budget 2.0] [--runs 3]

Compiles the example kernel (tests/examples/smem_reverse.py) once into a fresh cache, then
runs the same inspect in a fresh process `--runs` times and prints each wall time and the
median; exits 1 when the median exceeds the budget (2 s on the CI machine), 2 when an
inspect fails or does not come from the cache. Needs nvidia-cutlass-dsl and cuobjdump,
no GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _bench_common import budget_arguments, timed_kernelscope

EXAMPLE = Path(__file__).resolve().parent.parent / "tests" / "examples" / "smem_reverse.py"


def inspect(target: str, env: dict[str, str]) -> tuple[float, dict | None, str]:
    elapsed, proc = timed_kernelscope(["inspect", target, "--format", "json"], env)
    return elapsed, (json.loads(proc.stdout) if proc.returncode == 0 else None), proc.stderr


def main(argv=None) -> int:
    args = budget_arguments(argv, 2.0, "cached run")
    with tempfile.TemporaryDirectory() as tmp:
        # A folder of its own: the cache key hashes the kernel file's neighbours too.
        kernel = Path(tmp) / "kernel" / EXAMPLE.name
        kernel.parent.mkdir()
        shutil.copy(EXAMPLE, kernel)
        env = dict(os.environ, KERNELSCOPE_CACHE_DIR=str(Path(tmp) / "cache"))
        target = f"{kernel}:SPEC"
        compile_s, doc, err = inspect(target, env)
        if doc is None:
            print(err, file=sys.stderr)
            return 2
        times = []
        for _ in range(args.runs):
            elapsed, doc, err = inspect(target, env)
            if doc is None or not doc["inspect"]["from_cache"]:
                print(err or "the inspect did not come from the cache", file=sys.stderr)
                return 2
            times.append(elapsed)
    median = statistics.median(times)
    print(f"inspect with a compile: {compile_s:.2f} s; from the cache: "
          + ", ".join(f"{t:.2f} s" for t in times) + f"; median {median:.2f} s (budget {args.budget:.1f} s)")
    return 0 if median <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
