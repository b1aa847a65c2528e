"""What the benchmark scripts share: the argument parsers, the GPU check of main, the timed fresh
`kernelscope` process of the wall-time benchmarks, the --shapes list, random operands, the
GEMM-vs-cuBLAS loop and its result file, interleaved timing passes, round-robin timing with
paired per-round ratios (and their bootstrap interval over shapes), the GPU clock readings, the
geomean over shapes, and the JSON result file with the run's environment and command.

The scripts run as `python benchmarks/<script>.py`, so this module is imported by its plain name
(the script's folder is first on sys.path).
"""

import argparse
import functools
import json
import lzma
import math
import os
import platform
import statistics
import subprocess
import sys
import time


def bench_parser(doc: str, shapes_help: str) -> argparse.ArgumentParser:
    """A benchmark script's argument parser: its description (the docstring's first line), --out
    and --shapes."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--shapes", help=shapes_help)
    return p


def budget_arguments(argv, budget: float, what: str) -> argparse.Namespace:
    """--budget (seconds allowed for the median `what`) and --runs of a wall-time benchmark."""
    p = argparse.ArgumentParser()
    p.add_argument("--budget", type=float, default=budget, help=f"seconds allowed for the median {what}")
    p.add_argument("--runs", type=int, default=3)
    return p.parse_args(argv)


def timed_kernelscope(args, env=None) -> tuple[float, subprocess.CompletedProcess]:
    """`python -m kernelscope ARGS` in a fresh process: (wall seconds, the finished process)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kernelscope", *args], capture_output=True, text=True, env=env)
    return time.perf_counter() - start, proc


def parse_shapes(text: str | None, suite) -> list[dict[str, int]]:
    """'4096x4096x4096,8192x8192x8192' (MxNxK) as shape dicts; the whole suite when empty."""
    if not text:
        return [dict(s) for s in suite]
    out = []
    for item in text.split(","):
        m, n, k = (int(x) for x in item.lower().split("x"))
        out.append({"M": m, "N": n, "K": k})
    return out


def gemm_operands(torch, shape, tdt):
    """A (M, K) and B (K, N) row-major on the GPU, seeded by the shape, and a NaN-filled C."""
    M, N, K = shape["M"], shape["N"], shape["K"]
    g = torch.Generator(device="cpu").manual_seed(M * 31 + N * 7 + K)
    a = torch.randn((M, K), generator=g).to(tdt).cuda()
    b = torch.randn((K, N), generator=g).to(tdt).cuda()
    out = torch.full((M, N), float("nan"), dtype=tdt, device="cuda")
    return a, b, out


def interleaved_passes(launchers, passes: int, rep_ms: float):
    """`passes` rounds, each timing every launcher once in order (L2 flushed before each launch):
    one list of Timings per round. Interleaving shows the drift between rounds."""
    from kernelscope.profiler.timing import time_callable

    return [[time_callable(f, rep_ms=rep_ms, flush_l2=True) for f in launchers] for _ in range(passes)]


def round_robin(launchers, *, passes: int = 2, rep_ms: float = 100.0, warmup_ms: float = 25.0,
                rounds: int | None = None, flush_l2: bool = True, head_start_ms: float = 20.0) -> dict:
    """Time the launchers in turn, one launch of each per round, every launch between its own
    pair of CUDA events with the L2 flushed before it, so that a change of clock or temperature
    during the run hits all sides alike and a per-round ratio compares launches made moments
    apart. Round r starts at launcher r mod n (the order rotates, so no side always follows the
    same one). The rounds are split into `passes` passes (medians per pass show the drift).
    Each pass starts behind a GPU spin of `head_start_ms`, during which the host queues rounds
    ahead, meant to keep a host hiccup (Python, a short kernel's launch cost) from leaving the GPU
    idle inside a sample (checked by the GPU test test_round_robin_head_start_keeps_the_gpu_from_
    waiting_for_short_launches); samples that still caught the GPU waiting are counted in `host_waited`.

    rounds: per pass; by default enough for each launcher to run about `rep_ms` per pass.
    Returns {"samples_ms": [per launcher, one time per round], "pass_of_round": [...],
    "rounds_per_pass": int, "warmup_rounds": int, "host_waited": [per launcher, the timed launches
    whose start event the GPU had passed before the launch was issued (timing_checks.HOST_WAIT)]}."""
    import torch

    from kernelscope.profiler.timing import _flush_buffer

    if not launchers:
        raise ValueError("no launchers to time")
    if passes < 1:
        raise ValueError(f"passes must be >= 1, got {passes}")
    device = torch.device("cuda", torch.cuda.current_device())
    flush = _flush_buffer(torch, device) if flush_l2 else None
    n = len(launchers)

    waited = [0] * n

    def launch_round(r, starts=None, ends=None):
        for j in range(n):
            i = (r + j) % n
            if flush is not None:
                flush.zero_()
            if starts is not None:
                starts[i].record()
            launchers[i]()
            if starts is not None:
                # Already passed: the GPU idled inside this sample until the launch came.
                waited[i] += bool(starts[i].query())
            if ends is not None:
                ends[i].record()

    launch_round(0)                       # module loads, lazy allocations
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    est_rounds = 3
    start.record()
    for r in range(est_rounds):
        launch_round(r)
    end.record()
    torch.cuda.synchronize(device)
    round_ms = max(start.elapsed_time(end) / est_rounds, 1e-4)     # flushes included
    warmup_rounds = max(1, int(warmup_ms * n / round_ms))
    per_pass = rounds if rounds is not None else max(3, int(rep_ms * n / round_ms))
    for r in range(warmup_rounds):
        launch_round(r)

    spin_cycles = _spin_cycles_for(torch, device, head_start_ms)
    samples = [[] for _ in range(n)]
    pass_of_round = []
    for p in range(passes):
        events = [([torch.cuda.Event(enable_timing=True) for _ in range(n)],
                   [torch.cuda.Event(enable_timing=True) for _ in range(n)]) for _ in range(per_pass)]
        torch.cuda.synchronize(device)
        if spin_cycles:
            torch.cuda._sleep(spin_cycles)
        for r, (starts, ends) in enumerate(events):
            launch_round(p * per_pass + r, starts, ends)
        torch.cuda.synchronize(device)
        for starts, ends in events:
            for i in range(n):
                samples[i].append(starts[i].elapsed_time(ends[i]))
            pass_of_round.append(p)
    return {"samples_ms": samples, "pass_of_round": pass_of_round, "rounds_per_pass": per_pass,
            "warmup_rounds": warmup_rounds, "host_waited": waited}


def _spin_cycles_for(torch, device, ms: float) -> int:
    """Cycles of torch.cuda._sleep that keep the GPU busy about `ms` (measured, not from the clock
    rate: the spin's cycle counter runs at the SM clock of the moment)."""
    if ms <= 0:
        return 0
    probe = 1_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(device)
    start.record()
    torch.cuda._sleep(probe)
    end.record()
    torch.cuda.synchronize(device)
    return int(probe * ms / max(start.elapsed_time(end), 1e-3))


def paired_ratios(numerators, denominators) -> list[float]:
    """Per round, numerator time / denominator time (two launches of the same round)."""
    if len(numerators) != len(denominators):
        raise ValueError(f"{len(numerators)} numerators for {len(denominators)} denominators")
    return [a / b for a, b in zip(numerators, denominators)]


def quartiles(xs) -> dict:
    """Median, first and third quartile (inclusive method) and count of a sample."""
    xs = sorted(float(x) for x in xs)
    if not xs:
        raise ValueError("no values")
    q1, med, q3 = (xs[0],) * 3 if len(xs) == 1 else statistics.quantiles(xs, n=4, method="inclusive")
    return {"median": med, "q1": q1, "q3": q3, "n": len(xs)}


def geomean(xs) -> float:
    xs = list(xs)
    if not xs:
        raise ValueError("geomean of nothing")
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def bootstrap_geomean_of_medians(ratio_lists, draws: int = 2000, level: float = 0.95,
                                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of geomean over shapes of (median per-round ratio): every
    draw resamples each shape's rounds with replacement. Rounds are treated as independent, which
    the pairing inside a round makes nearly so (a drift common to all sides cancels in the ratio)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    logs = np.zeros(draws)
    for ratios in ratio_lists:
        r = np.asarray(ratios, dtype=np.float64)
        if r.size == 0:
            raise ValueError("a shape without rounds")
        idx = rng.integers(0, r.size, size=(draws, r.size))
        logs += np.log(np.median(r[idx], axis=1))
    geo = np.exp(logs / len(ratio_lists))
    tail = (1.0 - level) / 2
    return float(np.quantile(geo, tail)), float(np.quantile(geo, 1.0 - tail))


def verdict(interval, target: float, at_most: bool) -> str:
    """'met' when the whole interval is on the target's side, 'not met' when all of it is on the
    other side, else 'unresolved' (the run cannot tell)."""
    lo, hi = interval
    ok_all, ok_none = (hi <= target, lo > target) if at_most else (lo >= target, hi < target)
    return "met" if ok_all else "not met" if ok_none else "unresolved"


_CLOCK_FIELDS = ("clocks.sm", "clocks.max.sm", "clocks.mem", "temperature.gpu", "power.draw",
                 "clocks_event_reasons.active")


def _nvidia_smi(fields, device_uuid, extra=()):
    cmd = ["nvidia-smi", "--format=csv,noheader,nounits", "--query-gpu=" + ",".join(fields)]
    if device_uuid:
        cmd.append(f"--id={device_uuid}")
    return cmd + list(extra)


def clock_fields(device_uuid: str | None = None) -> tuple[str, ...] | None:
    """The clock fields this nvidia-smi answers (older drivers lack clocks_event_reasons), or
    None when nvidia-smi cannot be run."""
    for fields in (_CLOCK_FIELDS, _CLOCK_FIELDS[:-1]):
        try:
            proc = subprocess.run(_nvidia_smi(fields, device_uuid), capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode == 0 and proc.stdout.strip():
            return fields
    return None


def parse_clock_line(fields, line: str) -> dict:
    """One nvidia-smi csv line as {field: float, or the text for the reasons bitmask, or None}."""
    values = [v.strip() for v in line.split(",")]
    return {name: _clock_value(value) for name, value in zip(fields, values)}


def gpu_clock_reading(fields, device_uuid: str | None = None) -> dict:
    """One reading of `fields` now (SM and memory clock in MHz, temperature in C, power in W, the
    active clock-event reasons); {"error": ...} when it fails."""
    if not fields:
        return {"error": "nvidia-smi not available"}
    try:
        proc = subprocess.run(_nvidia_smi(fields, device_uuid), capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"nvidia-smi: {e}"}
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"error": f"nvidia-smi exited {proc.returncode}: {proc.stderr.strip()[:200]}"}
    return parse_clock_line(fields, proc.stdout.strip().splitlines()[0])


class ClockSampler:
    """Readings of `fields` taken one after another by a background thread (one nvidia-smi call
    each, at most every `period_s`) while the block runs: the clocks while the GPU is busy, not
    before or after. `readings` once the block is left."""

    def __init__(self, fields, device_uuid: str | None = None, period_s: float = 0.1):
        import threading

        self.fields, self.device_uuid, self.period_s = fields, device_uuid, period_s
        self.readings = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.is_set():
            reading = gpu_clock_reading(self.fields, self.device_uuid)
            if "error" in reading:
                return
            self.readings.append(reading)
            self._stop.wait(self.period_s)

    def __enter__(self):
        if self.fields:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        return False


def clock_summary(readings) -> dict:
    """Range of the SM clock, temperature and power over a list of readings, and the distinct
    non-zero clock-event reason masks; n/a (None) for what was not read."""
    out = {"readings": len(readings)}
    for key, name in (("clocks.sm", "sm_mhz"), ("temperature.gpu", "temperature_c"), ("power.draw", "power_w")):
        xs = [r[key] for r in readings if isinstance(r.get(key), float)]
        out[name] = {"min": min(xs), "median": statistics.median(xs), "max": max(xs)} if xs else None
    masks = {r.get("clocks_event_reasons.active") for r in readings}
    out["clock_event_reasons"] = sorted(m for m in masks if isinstance(m, str) and int(m, 16) != 0)
    return out


def _clock_value(text):
    if text is None or text in ("", "[N/A]", "N/A", "[Not Supported]"):
        return None
    try:
        return float(text)
    except ValueError:
        return text                       # e.g. the reasons bitmask "0x0000000000000000"


def gpu_main(script: str, parse_args):
    """Makes `run(args, argv, torch, dev)` the main(argv=None) of a GPU benchmark script: the
    arguments parsed first (--help and usage errors need no GPU), then exit status 2 with one
    line on stderr where no CUDA GPU is visible; `dev` is GPU 0's properties."""
    def wrap(run):
        @functools.wraps(run)
        def main(argv=None):
            args = parse_args(argv)
            import torch

            if not torch.cuda.is_available():
                print(f"{script}: no CUDA GPU available", file=sys.stderr)
                return 2
            return run(args, argv, torch, torch.cuda.get_device_properties(0))
        return main
    return wrap


def launch_and_check(torch, run, out, ref32) -> tuple[float, bool]:
    """One launch into `out` refilled with NaN: (relative Frobenius error against ref32, every
    element written)."""
    out.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    rel = ((out.float() - ref32).norm() / ref32.norm()).item()
    finite = bool(torch.isfinite(out).all().item())
    return rel, finite


def mean_of_medians(passes) -> list[float]:
    """Per launcher, the mean over the passes of its median time (ms)."""
    return [sum(p[j].median_ms for p in passes) / len(passes) for j in range(len(passes[0]))]


def versus_cublas(flops: float, ms: float, ms_ref: float) -> dict:
    """The result row's timing columns: ours and cuBLAS in ms and TFLOP/s, and cuBLAS time / ours."""
    from kernelscope.profiler.timing import tflops

    return {"ms": ms, "tflops": tflops(flops, ms),
            "cublas_ms": ms_ref, "cublas_tflops": tflops(flops, ms_ref),
            "ratio_vs_cublas": ms_ref / ms}


GEMM_LAYOUT = "A row-major (K-major), B row-major (N-major), C row-major"
PAIRED_TIMING = ("_bench_common.round_robin: ours and cuBLAS take turns launch by launch (order rotating), "
                 "CUDA events per launch, L2 flushed before each; two passes; the ratio is the median over "
                 "rounds of cuBLAS time / ours, with a 95% bootstrap interval")


def add_paired_argument(parser) -> None:
    parser.add_argument("--paired", action="store_true",
                        help="time ours and cuBLAS launch by launch in turns (round robin) and report the "
                             "median per-round ratio with a 95%% bootstrap interval")


def gemm_configs_vs_cublas(torch, shape, tdt, configs, bind, rejected, rep_ms: float,
                          paired: bool = False):
    """Each config at one shape against cuBLAS (torch.mm): bound by `bind(cfg, {"a", "b", "out"})`
    (a config the kernel refuses with `rejected` is said and skipped), checked against the fp32
    product, then timed in two interleaved passes. Yields (cfg, row, passes): the row has the
    shape, config, rates vs cuBLAS, the passes' medians, the error and the compile time.
    paired: time with round_robin instead (one launch of each side per round, two passes) and
    report the median per-round ratio, its quartiles and a 95 % bootstrap interval (row
    "paired"); `passes` is then None."""
    M, N, K = shape["M"], shape["N"], shape["K"]
    a, b, out = gemm_operands(torch, shape, tdt)
    ref_out = torch.empty((M, N), dtype=tdt, device="cuda")
    ref32 = a.float() @ b.float()
    cublas = lambda: torch.mm(a, b, out=ref_out)  # noqa: E731
    for cfg in configs:
        t0 = time.time()
        try:
            ours = bind(cfg, {"a": a, "b": b, "out": out})
        except rejected as e:
            print(f"{M}x{N}x{K} {cfg}: rejected: {e}")
            continue
        compile_s = time.time() - t0
        rel, finite = launch_and_check(torch, ours, out, ref32)
        if paired:
            row = {"shape": shape, "config": cfg.to_dict(),
                   **paired_versus_cublas(2.0 * M * N * K, round_robin([ours, cublas], passes=2, rep_ms=rep_ms)),
                   "rel_norm_error": rel, "all_written": finite, "compile_s": compile_s}
            yield cfg, row, None
            continue
        passes = interleaved_passes([ours, cublas], 2, rep_ms)
        ms, ms_ref = mean_of_medians(passes)
        row = {"shape": shape, "config": cfg.to_dict(), **versus_cublas(2.0 * M * N * K, ms, ms_ref),
               "passes": [{"ours": p[0].to_dict() | {"samples_ms": None},
                           "cublas": p[1].to_dict() | {"samples_ms": None}} for p in passes],
               "rel_norm_error": rel, "all_written": finite, "compile_s": compile_s}
        yield cfg, row, passes


def paired_versus_cublas(flops: float, timed: dict) -> dict:
    """versus_cublas's columns from round_robin([ours, cublas]): the sides' median times, and as
    the ratio the median over rounds of cuBLAS time / ours (launches moments apart), with its
    quartiles, a 95 % bootstrap interval and whether that interval clears 1.00."""
    ours_ms, cublas_ms = timed["samples_ms"]
    ratios = paired_ratios(cublas_ms, ours_ms)
    spread = quartiles(ratios)
    interval = bootstrap_geomean_of_medians([ratios])
    row = versus_cublas(flops, statistics.median(ours_ms), statistics.median(cublas_ms))
    row["ratio_vs_cublas"] = spread["median"]
    row["paired"] = {"rounds": spread["n"], "ratio_q1": spread["q1"], "ratio_q3": spread["q3"],
                     "ratio_ci95": list(interval), "at_least_1": verdict(interval, 1.0, at_most=False),
                     "rounds_per_pass": timed["rounds_per_pass"],
                     "host_waited_share": [w / max(1, spread["n"]) for w in timed.get("host_waited", [0, 0])],
                     "pass_medians_ms": [[statistics.median([t for t, p in zip(side, timed["pass_of_round"]) if p == k])
                                          for k in sorted(set(timed["pass_of_round"]))] for side in timed["samples_ms"]]}
    from kernelscope.profiler.timing_checks import HOST_WAIT_MAX_SHARE
    # Samples the GPU waited in time the host, not a kernel: such a row is never ranked.
    row["suspect"] = max(row["paired"]["host_waited_share"]) > HOST_WAIT_MAX_SHARE
    return row


def _host_wait_note(paired: dict) -> str:
    from kernelscope.profiler.timing_checks import HOST_WAIT_MAX_SHARE
    ours, ref = paired.get("host_waited_share", [0.0, 0.0])
    if max(ours, ref) <= HOST_WAIT_MAX_SHARE:
        return ""
    return f"; SUSPECT: the GPU waited for the host in {ours:.0%} of our launches, {ref:.0%} of cuBLAS's"


def versus_cublas_line(row, passes) -> str:
    """The printed line of one row of gemm_configs_vs_cublas."""
    M, N, K = row["shape"]["M"], row["shape"]["N"], row["shape"]["K"]
    if passes is None:
        p = row["paired"]
        lo, hi = p["ratio_ci95"]
        return (f"{M:>5}x{N:>5}x{K:>5}  ours {row['tflops']:7.1f} TFLOP/s  cuBLAS {row['cublas_tflops']:7.1f}  "
                f"ratio {row['ratio_vs_cublas']:.3f} [{lo:.3f}, {hi:.3f}] (paired, {p['rounds']} rounds, "
                f">= 1.00: {p['at_least_1']}{_host_wait_note(p)})  err {row['rel_norm_error']:.1e}")
    return (f"{M:>5}x{N:>5}x{K:>5}  ours {row['tflops']:7.1f} TFLOP/s  cuBLAS {row['cublas_tflops']:7.1f}  "
            f"ratio {row['ratio_vs_cublas']:.3f}  (passes {passes[0][0].median_ms:.4f}/{passes[1][0].median_ms:.4f} "
            f"vs {passes[0][1].median_ms:.4f}/{passes[1][1].median_ms:.4f} ms)  err {row['rel_norm_error']:.1e}")


def finish_versus_cublas(kernel: str, rows, args, argv, dev, torch, timing: str | None = None,
                         **fields) -> int:
    """Prints the geomean ratio vs cuBLAS over the shapes and, with --out, writes the result file
    of benchmarks/bench_<kernel>.py (`fields` added to it). The exit status: 1 when no config ran."""
    if not rows:
        return 1
    suspect = sum(1 for r in rows if r.get("suspect"))
    if suspect == len(rows):
        print(f"every timed row is suspect ({suspect}): no geomean")
        geo, shapes = float("nan"), 0
    else:
        geo, shapes = best_ratio_geomean(rows)
        print(f"geomean ratio vs cuBLAS over {shapes} shapes: {geo:.3f}"
              + (f" ({suspect} suspect row(s) left out)" if suspect else ""))
    if args.out:
        write_json(args.out, {
            "kernel": kernel, "dtype": args.dtype, "layout": GEMM_LAYOUT, **environment(dev, torch),
            "timing": timing or ("kernelscope.profiler.timing.time_callable: CUDA events per launch, L2 "
                                 "flushed before each, warm-up, median; two interleaved passes per side, "
                                 "mean of medians"),
            "reference": "cuBLAS via torch.mm(a, b, out=...)", **fields,
            "geomean_ratio_vs_cublas": geo, "results": rows,
            "command": command_line(f"benchmarks/bench_{kernel}.py", argv, os.path.basename(sys.executable))})
        print(f"wrote {args.out}")
    return 0


def best_ratio_geomean(rows) -> tuple[float, int]:
    """Per shape the row with the highest ratio_vs_cublas, suspect rows left out; (geomean of
    those ratios, shapes)."""
    best = {}
    for r in rows:
        if r.get("suspect"):
            continue
        key = (r["shape"]["M"], r["shape"]["N"], r["shape"]["K"])
        if key not in best or r["ratio_vs_cublas"] > best[key]["ratio_vs_cublas"]:
            best[key] = r
    geo = math.exp(sum(math.log(r["ratio_vs_cublas"]) for r in best.values()) / len(best))
    return geo, len(best)


def environment(dev, torch) -> dict:
    """The device and software a result was measured with."""
    import cutlass
    return {"device": dev.name, "sm_count": dev.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cutlass_dsl": getattr(cutlass, "__version__", None), "python": platform.python_version()}


def command_line(script: str, argv, python: str = "python3") -> str:
    """The command that reproduces this run, as the result file records it."""
    return " ".join([python, script] + list(argv or sys.argv[1:]))


def write_json(path: str, result: dict) -> None:
    """The result as JSON at `path`, xz-compressed when the name ends in .xz."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if path.endswith(".xz"):
        with lzma.open(path, "wt") as f:
            json.dump(result, f, indent=1)
        return
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
