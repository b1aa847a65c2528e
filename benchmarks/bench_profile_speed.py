"""How long `kernelscope profile KERNEL --vs REFERENCE` takes for each shipped kernel, and where
the time goes.

Each profile runs as a user runs it (a fresh `python -m kernelscope profile ...` process, the
quick set, its default line information and per-instruction section), one after another; the
first one also fills the per-ncu cache of ncu's metric list, so it runs twice and only its
second run counts. For each: the command's wall time against --budget (the goal: under 20 s),
ncu's wall time and replay passes per kernel (from the report's sidecar), and inside ncu the
profiled process's own stages (seconds from its interpreter's start: start = imports and CUDA
start-up, inputs, compile, reference, warm-up, profiled launches = the replayed launches), with
`ncu_start_s` = ncu's own start-up before that interpreter ran and `after_ncu_s` = the rest of
the command (its own start-up, and reading the report and printing the diff).

    python3 benchmarks/bench_profile_speed.py --out profile-speed.json [--kernels gemm flash_attn]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from _bench_common import command_line, timed_kernelscope, write_json

# Each shipped kernel against the reference its notes compare with, at a shape they report.
CASES = {
    "rmsnorm": ("torch.rmsnorm", None),
    "gemm": ("cublas", "M=4096,N=4096,K=4096"),
    "gemm_mma": ("cublas", "M=4096,N=4096,K=4096"),
    "gemm_rmsnorm": ("rmsnorm+matmul", None),
    "flash_attn": ("sdpa", None),
}


def _one(kernel: str, folder: str) -> dict:
    ref, shape = CASES[kernel]
    report = os.path.join(folder, f"{kernel}.ncu-rep")
    args = ["profile", kernel, "--vs", ref, "-o", report, "--force"] + (["--shape", shape] if shape else [])
    wall, proc = timed_kernelscope(args, env=dict(os.environ, COLUMNS="120"))
    row = {"kernel": kernel, "reference": ref, "shape": shape or "default", "rc": proc.returncode,
           "wall_s": round(wall, 2)}
    if proc.returncode != 0:
        row["error"] = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        return row
    with open(report + ".kernelscope.json") as f:
        sidecar = json.load(f)
    stages = (sidecar.get("worker_status") or {}).get("seconds") or {}
    ncu_wall = sidecar.get("wall_s")
    row.update(ncu_wall_s=round(ncu_wall, 2) if ncu_wall else None,
               passes=[p for _, p in sidecar.get("passes") or []],
               ncu_start_s=sidecar.get("worker_started_after_s"), worker_stage_end_s=stages,
               after_ncu_s=round(wall - ncu_wall, 2) if ncu_wall else None)
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
        for i, kernel in enumerate(args.kernels):
            row = _one(kernel, folder)
            if i == 0 and row["rc"] == 0:
                row = dict(_one(kernel, folder), first_run_wall_s=row["wall_s"])
            row["within_budget"] = row["rc"] == 0 and row["wall_s"] <= args.budget
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {"benchmark": "bench_profile_speed", "device": torch.cuda.get_device_name(),
              "budget_s": args.budget, "command": command_line("bench_profile_speed.py", argv or sys.argv[1:]),
              "rows": rows, "all_within_budget": all(r["within_budget"] for r in rows)}
    write_json(args.out, result)
    print(f"{sum(r['within_budget'] for r in rows)}/{len(rows)} profiles within {args.budget:.0f} s "
          f"on {result['device']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
