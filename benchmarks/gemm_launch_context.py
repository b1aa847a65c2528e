"""The GEMM against cuBLAS in two launch contexts, per shape: back to back (200 launches between
two CUDA events, no flush: each kernel follows its own previous launch, L2 warm) and after an L2
flush (100 x [flush, kernel] between two events, less 100 flushes alone: what the benchmarks' per-
launch timing sees, the kernel starting on an L2 the flush's writes left dirty). A ratio that moves
between the two says the gap is in how the kernel meets a cold, dirty L2 or its launch, not in
its steady-state throughput. Third, [flush, kernel, read of the flush buffer] less [flush, read]:
the kernel charged for the dirty lines it leaves for later (a kernel that keeps the flush's dirty
lines in L2 saves their write-back only until someone evicts them). --flush read replaces the flush's writes (zero_, as the benchmarks
flush) by a read of the same buffer, which leaves L2 clean. Medians of 15 alternating repetitions,
one process.

    python3 benchmarks/gemm_launch_context.py --shapes 512x4096x4096,128x4096x4096 --out $OUT/x.json

Under ncu, which kernel state each launch meets: --ncu-sequences runs, for the first shape, three
times [flush, ours], [flush, cuBLAS], [ours, ours], [cuBLAS, cuBLAS] (a synchronize after each)
inside the profiler's start/stop, each launch in an NVTX range (fo0, fo1, fc0, ...); --summarize
reads the reports back (the duration per range and kernel):

    ncu --profile-from-start off --nvtx --cache-control none --clock-control none \
        --metrics gpu__time_duration.sum -o $OUT/ctx -f \
        python3 benchmarks/gemm_launch_context.py --shapes 128x4096x4096 --ncu-sequences [--config '{"splits": 1}']
    python3 benchmarks/gemm_launch_context.py --summarize ctx.ncu-rep [...] --out summary.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def _batch_us(torch, launches, count: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(20_000_000)          # the host queues the batch while the GPU spins
    start.record()
    for _ in range(count):
        for launch in launches:
            launch()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / count


class _Pair:
    """The GEMM (the heuristic's config, or it with `overrides`) and cuBLAS bound to the same
    random bf16 inputs, and the flush: a write of twice L2 (zero_, as the benchmarks flush) or
    a read of it (a sum, leaving L2 clean)."""

    def __init__(self, torch, shape, overrides: dict, flush_kind: str = "write"):
        from kernelscope.kernels import gemm
        from kernelscope.profiler.timing import _flush_buffer

        M, N, K = shape
        props = torch.cuda.get_device_properties(0)
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        self.out, self.ref = (torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        cfg = gemm.heuristic_config({"M": M, "N": N, "K": K}, props.multi_processor_count)
        if overrides:
            cfg = gemm.GemmConfig.from_mapping({**cfg.to_dict(), **overrides})
        self.cfg = cfg
        self.ours = gemm.bind_gemm(cfg, {"a": a, "b": b, "out": self.out})
        self.cublas = lambda: torch.mm(a, b, out=self.ref)
        buffer = _flush_buffer(torch, torch.device("cuda"))
        total = torch.empty((), device="cuda", dtype=buffer.dtype)
        self.flush = buffer.zero_ if flush_kind == "write" else (lambda: torch.sum(buffer, dim=0, out=total))
        # A read of the whole buffer (larger than L2) after a kernel forces out every dirty line the
        # kernel left for later: timed with the kernel, it charges each kernel for the write-back it deferred.
        self.drain = lambda: torch.sum(buffer, dim=0, out=total)

    def warm(self, torch, launches: int) -> None:
        for _ in range(launches):
            self.ours()
            self.cublas()
        torch.cuda.synchronize()


def ncu_sequences(torch, shape, overrides: dict) -> None:
    pair = _Pair(torch, shape, overrides)
    print(pair.cfg, flush=True)
    pair.warm(torch, 5)
    ours, cublas, flush = pair.ours, pair.cublas, pair.flush
    torch.cuda.profiler.start()
    for _ in range(3):
        for name, seq in (("fo", [flush, ours]), ("fc", [flush, cublas]), ("oo", [ours, ours]), ("cc", [cublas, cublas])):
            for j, launch in enumerate(seq):
                with torch.cuda.nvtx.range(f"{name}{j}"):
                    launch()
            torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def summarize(paths: list[str]) -> list[dict]:
    """Per report: the median duration (us) of each NVTX range's kernel, and every repetition."""
    from kernelscope.profiler.report import load_report

    rows = []
    for path in paths:
        runs: dict[str, list[float]] = {}
        names: dict[str, str] = {}
        for p in load_report(path):
            rng = p.nvtx_ranges[-1] if p.nvtx_ranges else "?"
            runs.setdefault(rng, []).append(float(p.value("gpu__time_duration.sum")) / 1000)
            names[rng] = p.name
        rows.append({"report": os.path.basename(path),
                     "ranges": {r: {"kernel": names[r], "median_us": statistics.median(v), "us": v}
                                for r, v in sorted(runs.items())}})
    return rows


def measure(torch, shape: tuple[int, int, int], flush_kind: str = "write", repetitions: int = 15,
            overrides: dict | None = None) -> dict:
    pair = _Pair(torch, shape, overrides or {}, flush_kind)
    pair.warm(torch, 20)
    ours, cublas, flush = pair.ours, pair.cublas, pair.flush
    max_diff = (pair.out.float() - pair.ref.float()).abs().max().item()
    drain = pair.drain
    runs = {"ours_back_to_back": [], "cublas_back_to_back": [], "flush_alone": [],
            "flush_then_ours": [], "flush_then_cublas": [],
            "flush_drain": [], "flush_ours_drain": [], "flush_cublas_drain": []}
    for _ in range(repetitions):
        runs["ours_back_to_back"].append(_batch_us(torch, [ours], 200))
        runs["cublas_back_to_back"].append(_batch_us(torch, [cublas], 200))
        runs["flush_alone"].append(_batch_us(torch, [flush], 100))
        runs["flush_then_ours"].append(_batch_us(torch, [flush, ours], 100))
        runs["flush_then_cublas"].append(_batch_us(torch, [flush, cublas], 100))
        runs["flush_drain"].append(_batch_us(torch, [flush, drain], 50))
        runs["flush_ours_drain"].append(_batch_us(torch, [flush, ours, drain], 50))
        runs["flush_cublas_drain"].append(_batch_us(torch, [flush, cublas, drain], 50))
    us = {k: statistics.median(v) for k, v in runs.items()}
    ours_after = us["flush_then_ours"] - us["flush_alone"]
    cublas_after = us["flush_then_cublas"] - us["flush_alone"]
    ours_drained = us["flush_ours_drain"] - us["flush_drain"]
    cublas_drained = us["flush_cublas_drain"] - us["flush_drain"]
    M, N, K = shape
    return {"shape": {"M": M, "N": N, "K": K}, "flush": flush_kind, "config": pair.cfg.to_dict(), "max_abs_diff_vs_cublas": max_diff,
            "median_us": us, "ours_after_flush_us": ours_after, "cublas_after_flush_us": cublas_after,
            "ratio_back_to_back": us["cublas_back_to_back"] / us["ours_back_to_back"],
            "ratio_after_flush": cublas_after / ours_after,
            "ours_after_flush_with_deferred_writeback_us": ours_drained,
            "cublas_after_flush_with_deferred_writeback_us": cublas_drained,
            "ratio_after_flush_with_deferred_writeback": cublas_drained / ours_drained}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="512x4096x4096,2048x2048x2048,128x4096x4096,4096x4096x4096")
    ap.add_argument("--flush", choices=["write", "read"], default="write")
    ap.add_argument("--config", default="{}", help="JSON overrides of the heuristic's config, at every shape")
    ap.add_argument("--ncu-sequences", action="store_true", help="run the launch sequences to profile (see above)")
    ap.add_argument("--summarize", nargs="+", metavar="REPORT", help="durations per NVTX range of such reports")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)
    if args.summarize:
        from kernelscope.errors import UserError
        try:
            rows = summarize(args.summarize)
        except UserError as e:
            print(f"gemm_launch_context: {e}", file=sys.stderr)
            return 2
        for row in rows:
            print(row["report"])
            for rng, r in row["ranges"].items():
                print(f"  {rng:4s} {r['median_us']:8.2f} us  {r['kernel'][:40]}")
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"benchmark": "gemm_launch_context --summarize", "reports": rows}, f, indent=1)
        return 0
    import torch
    if not torch.cuda.is_available():
        print("gemm_launch_context: needs a CUDA GPU", file=sys.stderr)
        return 3
    if args.ncu_sequences:
        ncu_sequences(torch, tuple(int(x) for x in args.shapes.split(",")[0].split("x")), json.loads(args.config))
        return 0
    rows = []
    for text in args.shapes.split(","):
        row = measure(torch, tuple(int(x) for x in text.split("x")), args.flush, overrides=json.loads(args.config))
        rows.append(row)
        print(f"{text:>16}  back to back {row['ratio_back_to_back']:.3f}  after a flush {row['ratio_after_flush']:.3f}"
              f"  (ours {row['median_us']['ours_back_to_back']:.1f} / {row['ours_after_flush_us']:.1f} us,"
              f" cuBLAS {row['median_us']['cublas_back_to_back']:.1f} / {row['cublas_after_flush_us']:.1f} us)"
              f"  with the write-back it defers {row['ratio_after_flush_with_deferred_writeback']:.3f}"
              f" ({row['ours_after_flush_with_deferred_writeback_us']:.1f} / "
              f"{row['cublas_after_flush_with_deferred_writeback_us']:.1f} us)", flush=True)
    if args.out:
        doc = {"benchmark": "gemm_launch_context", "device": torch.cuda.get_device_name(),
               "command": " ".join(["python3", "benchmarks/gemm_launch_context.py", *(argv or sys.argv[1:])]),
               "rows": rows}
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
