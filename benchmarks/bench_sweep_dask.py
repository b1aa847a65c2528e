"""What running a sweep on Dask costs against the serial path, on the GPUs of this host.

One sweep (default: rmsnorm, its 12 configs at two shapes = 24 points) runs as `kernelscope
sweep` along each of --paths, in order, each a fresh command:

  serial        the points one after another in the command's own process
  gpus[:W]      `--gpus all --workers-per-gpu W`: a local Dask cluster, W workers per GPU
  scheduler[:W] `--scheduler ADDRESS` against a cluster this script started beforehand (W workers
                holding GPU=1 on the visible GPU), run twice: cold workers, then warm ones (their
                processes already started, torch and the DSL imported, the CUDA context made)

For each run: the command's wall time, and from its journal the time inside the points
(compile; the GPU-locked part; per point, the seconds of each step: inputs, bind, first_launch,
expected, peaks, target_timing, reference_timing, device_facts, host_check), the span from the
first point's start to the last point's end, and the overhead = wall - that span (process and
cluster start-up, scheduling, the final table). Parallel compiles are what a cluster run gains;
the overhead is what it pays. A path that would start with under 20 s of --budget-s left is
skipped and says so. Writes one JSON (--out) after every run.

    python3 benchmarks/bench_sweep_dask.py --out sweep-dask.json [--paths serial gpus:2 scheduler:2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

# Large enough that the kernel, not the launch, is timed; small enough that the host-side fp32
# check of each point takes about a second.
SHAPES = ("M=8192,N=4096", "M=4096,N=8192")


def _sweep_command(args, json_path: str, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "kernelscope", "sweep", args.target, "--vs", args.vs, "--rep-ms", str(args.rep_ms),
           "--json", json_path]
    for shape in args.shapes:
        cmd += ["--shape", shape]
    return cmd + extra


def _journal_stats(path: str) -> dict:
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    points = [ln for ln in lines[1:] if ln.get("final")]
    started = [p["started_at"] for p in points if p.get("started_at")]
    finished = [p["finished_at"] for p in points if p.get("finished_at")]
    busy: dict[str, float] = {}
    for p in points:
        if p.get("started_at") and p.get("finished_at"):
            busy[p["process"]] = busy.get(p["process"], 0.0) + p["finished_at"] - p["started_at"]
    statuses: dict[str, int] = {}
    for p in points:
        statuses[p["status"]] = statuses.get(p["status"], 0) + 1
    return {"points": len(points), "statuses": statuses,
            "failed_attempts": sum(1 for ln in lines[1:] if ln.get("status") == "failed" and not ln.get("final")),
            "compile_s_sum": round(sum(p.get("compile_s") or 0 for p in points), 2),
            "gpu_s_sum": round(sum(p.get("gpu_s") or 0 for p in points), 2),
            "span_s": round(max(finished) - min(started), 2) if started and finished else None,
            "processes": len(busy), "busiest_process_s": round(max(busy.values()), 2) if busy else None,
            # Per point, in the order each process ran them: whether the time under the lock is a
            # first-point cost of each process or grows with the load on the host.
            "per_point": [{"process": p["process"].rsplit(":", 1)[-1], "index": p.get("index"),
                           "start_s": round(p["started_at"] - min(started), 2) if started and p.get("started_at") else None,
                           "compile_s": round(p.get("compile_s") or 0, 2), "gpu_s": round(p.get("gpu_s") or 0, 2),
                           "phases": p.get("gpu_phases")}
                          for p in sorted(points, key=lambda q: (q["process"], q.get("started_at") or 0))],
            # Where the points' time went, summed over points: the steps under the GPU lock
            # (first_launch .. device_facts) against those outside it (inputs, bind, host_check).
            "phase_sums": _phase_sums(points)}


def _phase_sums(points: list[dict]) -> dict[str, float]:
    sums: dict[str, float] = {}
    for p in points:
        for name, seconds in (p.get("gpu_phases") or {}).items():
            sums[name] = round(sums.get(name, 0.0) + seconds, 2)
    return sums


def _run(args, name: str, extra: list[str], folder: str, results: dict, timeout_s: float) -> None:
    """One sweep command; past timeout_s it gets SIGINT (as Ctrl-C) and what finished is counted."""
    json_path = os.path.join(folder, f"{name}.json")
    cmd = _sweep_command(args, json_path, extra)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=max(timeout_s, 1.0))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    wall = time.perf_counter() - t0
    entry = {"command": " ".join(cmd[1:]).replace(folder + "/", ""), "rc": proc.returncode, "wall_s": round(wall, 2),
             "stopped_at_budget": wall >= timeout_s, "stderr_tail": err[-600:] if proc.returncode else ""}
    journal = os.path.splitext(json_path)[0] + ".jsonl"
    if os.path.isfile(journal):
        entry.update(_journal_stats(journal))
        if entry.get("span_s") is not None:
            entry["overhead_s"] = round(wall - entry["span_s"], 2)
    if os.path.isfile(json_path):
        with open(json_path) as f:
            doc = json.load(f)
        entry["rows"] = {json.dumps([r["shape"], r["config"]], sort_keys=True): {
            "status": r["status"], "median_ms": (r.get("timing") or {}).get("median_ms"),
            "speed_vs_reference_pct": r.get("speed_vs_reference_pct")} for r in doc["rows"]}
        entry["devices"] = doc.get("devices")
    results["runs"][name] = entry
    print(f"{name:>16}: rc {proc.returncode}  wall {wall:7.1f} s  span {entry.get('span_s')}  "
          f"overhead {entry.get('overhead_s')}  compile sum {entry.get('compile_s_sum')}  "
          f"gpu sum {entry.get('gpu_s_sum')}  statuses {entry.get('statuses')}", flush=True)


def _agreement(results: dict) -> None:
    """Per point: the same status on every path, and how far each path's time is from serial's."""
    runs = results["runs"]
    base = (runs.get("serial") or {}).get("rows")
    if not base:
        return
    for name, run in runs.items():
        if name == "serial" or not run.get("rows"):
            continue
        same = sum(1 for k, v in base.items() if (run["rows"].get(k) or {}).get("status") == v["status"])
        ratios = sorted(run["rows"][k]["median_ms"] / v["median_ms"] for k, v in base.items()
                        if v.get("median_ms") and (run["rows"].get(k) or {}).get("median_ms"))
        run["vs_serial"] = {"same_status": f"{same}/{len(base)}",
                            "median_time_ratio": ratios[len(ratios) // 2] if ratios else None,
                            "time_ratio_range": [ratios[0], ratios[-1]] if ratios else None,
                            "wall_ratio": round(run["wall_s"] / runs["serial"]["wall_s"], 3)}


def _start_cluster(workers: int):
    """An existing cluster as a user would start one: W GPU workers, each capped to its share
    of the host's cores for torch's host-side threads (as `--gpus` does for its own workers)."""
    from distributed import LocalCluster

    threads = str(max(1, (os.cpu_count() or 1) // workers))
    return LocalCluster(n_workers=workers, threads_per_worker=1, resources={"GPU": 1}, processes=True,
                        dashboard_address=None, silence_logs=40,
                        env={"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--target", default="rmsnorm")
    ap.add_argument("--vs", default="torch.rmsnorm")
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES))
    ap.add_argument("--rep-ms", type=float, default=20.0)
    ap.add_argument("--workers", type=int, default=2, help="Dask workers per GPU where a path names none")
    ap.add_argument("--paths", nargs="+", default=["serial", "gpus:2", "scheduler:2"],
                    help="in order: serial, gpus[:W] (--gpus all, W workers per GPU), scheduler[:W] (a cluster "
                         "started beforehand, run cold then warm)")
    ap.add_argument("--budget-s", type=float, default=150.0, help="skip a phase that would end past this")
    args = ap.parse_args()
    start = time.perf_counter()
    results = {"benchmark": "bench_sweep_dask", "host": platform.node(), "cpus": os.cpu_count(),
               "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "command": "python3 " + " ".join(sys.argv), "runs": {}, "skipped": []}

    def write():
        _agreement(results)
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)

    def left() -> float:
        return args.budget_s - (time.perf_counter() - start)

    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as folder:
        for path in args.paths:
            kind, _, count = path.partition(":")
            workers = int(count or args.workers)
            if left() < 20:
                results["skipped"].append(f"{path}: {left():.0f} s of the budget left")
                continue
            if kind == "serial":
                _run(args, "serial", [], folder, results, left())
            elif kind == "gpus":
                _run(args, f"gpus-w{workers}", ["--gpus", "all", "--workers-per-gpu", str(workers)], folder, results,
                     left())
            elif kind == "scheduler":
                t0 = time.perf_counter()
                cluster = _start_cluster(workers)
                results[f"cluster_start_s_w{workers}"] = round(time.perf_counter() - t0, 2)
                try:
                    for name in (f"scheduler-w{workers}-cold", f"scheduler-w{workers}-warm"):
                        if left() < 20:
                            results["skipped"].append(f"{name}: {left():.0f} s of the budget left")
                            continue
                        _run(args, name, ["--scheduler", cluster.scheduler_address], folder, results, left())
                        write()
                finally:
                    cluster.close()
            else:
                raise SystemExit(f"unknown path {path!r}: serial, gpus[:W] or scheduler[:W]")
            write()
        write()
    print(json.dumps({k: {kk: v.get(kk) for kk in ("wall_s", "span_s", "overhead_s", "vs_serial")}
                      for k, v in results["runs"].items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
