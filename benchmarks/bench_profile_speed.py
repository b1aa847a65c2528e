"""How long `kernelscope profile KERNEL --vs REFERENCE` takes for each shipped kernel, and where
the time goes.

Each profile runs as a user runs it (a fresh `python -m kernelscope profile ...` process, the
quick set, its default line information and per-instruction section), twice in a row: `cold`
with nothing in kernelscope's caches (a fresh KERNELSCOPE_CACHE_DIR: the launched variant is
compiled under ncu, ncu's metric list is asked for), then `warm` (the variant is loaded from
the launch cache). The goal, under --budget (20 s), is for the warm run. For each run: the
command's wall time; `before_ncu_s`, the command's own start until it started ncu; ncu's wall
time and replay passes per kernel (from the report's sidecar); `ncu_start_s`, ncu's start-up
before the profiled interpreter ran; the profiled process's stages (seconds from its start to
the end of: start = imports and CUDA start-up, inputs, compile, reference, first target launch,
first reference launch, warm-up, check, profiled launches = the replayed launches); what the
launch cache did; and `show_s`, a separate `kernelscope show` of the same report (the part of
the command after ncu).

    python3 benchmarks/bench_profile_speed.py --out profile-speed.json [--kernels gemm flash_attn]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from _bench_common import command_line, timed_kernelscope, write_json

# Each shipped kernel against the reference its notes compare with, at a shape they report.
CASES = {
    "rmsnorm": ("torch.rmsnorm", None),
    "gemm": ("cublas", "M=4096,N=4096,K=4096"),
    "gemm_mma": ("cublas", "M=4096,N=4096,K=4096"),
    "gemm_rmsnorm": ("rmsnorm+matmul", None),
    "flash_attn": ("sdpa", None),
}


def _one(kernel: str, folder: str, env: dict) -> dict:
    ref, shape = CASES[kernel]
    report = os.path.join(folder, f"{kernel}.ncu-rep")
    args = ["profile", kernel, "--vs", ref, "-o", report, "--force"] + (["--shape", shape] if shape else [])
    began = time.time()
    wall, proc = timed_kernelscope(args, env=env)
    row = {"kernel": kernel, "reference": ref, "shape": shape or "default", "rc": proc.returncode,
           "wall_s": round(wall, 2)}
    if proc.returncode != 0:
        row["error"] = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        return row
    with open(report + ".kernelscope.json") as f:
        sidecar = json.load(f)
    status = sidecar.get("worker_status") or {}
    ncu_wall = sidecar.get("wall_s")
    ncu_started = sidecar.get("ncu_started_at")
    row.update(before_ncu_s=round(ncu_started - began, 2) if ncu_started else None,
               ncu_wall_s=round(ncu_wall, 2) if ncu_wall else None,
               passes=[p for _, p in sidecar.get("passes") or []],
               ncu_start_s=sidecar.get("worker_started_after_s"), worker_stage_end_s=status.get("seconds"),
               launch_cache=status.get("launch_cache"))
    show_wall, show = timed_kernelscope(["show", report], env=env)
    row["show_s"] = round(show_wall, 2) if show.returncode == 0 else None
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--budget", type=float, default=20.0, help="seconds a profile may take (the goal)")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("bench_profile_speed: needs a GPU (and ncu)", file=sys.stderr)
        return 3
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as folder:
        env = dict(os.environ, COLUMNS="120", KERNELSCOPE_CACHE_DIR=os.path.join(folder, "cache"))
        for kernel in args.kernels:
            for run in ("cold", "warm"):
                row = dict(_one(kernel, folder, env), run=run)
                row["within_budget"] = row["rc"] == 0 and row["wall_s"] <= args.budget
                rows.append(row)
                print(json.dumps(row), flush=True)
    warm = [r for r in rows if r["run"] == "warm"]
    result = {"benchmark": "bench_profile_speed", "device": torch.cuda.get_device_name(),
              "budget_s": args.budget, "command": command_line("bench_profile_speed.py", argv or sys.argv[1:]),
              "rows": rows, "all_warm_within_budget": all(r["within_budget"] for r in warm)}
    write_json(args.out, result)
    print(f"{sum(r['within_budget'] for r in warm)}/{len(warm)} warm profiles within {args.budget:.0f} s "
          f"on {result['device']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
