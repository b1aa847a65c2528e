"""Benchmark the Hopper GEMM against cuBLAS (torch.mm) over the shape suite, in one process.

    python benchmarks/bench_gemm.py --out benchmarks/results/gemm-<device>.json

bf16 in, bf16 out, A (M x K) and B (K x N) both row-major, fp32 accumulation on both sides.
Timing: kernelscope.profiler.timing (CUDA events around each launch, warm-up, L2 overwritten
before every launch, median of many launches). Each side is timed twice, interleaved
(ours, cuBLAS, ours, cuBLAS), so the spread between the two passes is visible; the reported time
is the mean of the two medians. Every shape is also checked against an fp32 reference first.
The config per shape is kernelscope.kernels.gemm.heuristic_config unless --config is given.
"""

import argparse
import json
import os
import sys
import time

from _bench_common import (
    best_ratio_geomean, command_line, environment, gemm_operands, interleaved_passes, launch_and_check,
    mean_of_medians, parse_shapes, versus_cublas, write_json)

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def _parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--shapes", help="subset, e.g. '4096x4096x4096,8192x8192x8192' (MxNxK)")
    p.add_argument("--config", help="JSON config for every shape (default: per-shape heuristic)")
    p.add_argument("--sweep", help="JSON list of configs to time at every shape instead (tuning)")
    p.add_argument("--rep-ms", type=float, default=150.0, help="timed budget per measurement")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    return p.parse_args(argv)


def main(argv=None):
    args = _parse_args(argv)
    import torch

    from kernelscope.kernels import gemm, gemm_problem

    if not torch.cuda.is_available():
        print("bench_gemm: no CUDA GPU available", file=sys.stderr)
        return 2
    dev = torch.cuda.get_device_properties(0)
    tdt = getattr(torch, args.dtype)
    rows = []
    configs = None
    if args.sweep:
        configs = [gemm.GemmConfig.from_mapping(c) for c in json.loads(args.sweep)]
    for shape in parse_shapes(args.shapes, gemm_problem.SUITE):
        M, N, K = shape["M"], shape["N"], shape["K"]
        flops = 2.0 * M * N * K
        a, b, out = gemm_operands(torch, shape, tdt)
        ref_out = torch.empty((M, N), dtype=tdt, device="cuda")
        ref32 = a.float() @ b.float()
        cublas = lambda: torch.mm(a, b, out=ref_out)  # noqa: E731
        candidates = configs or [gemm.GemmConfig.from_mapping(json.loads(args.config))
                                 if args.config else gemm.heuristic_config(shape, dev.multi_processor_count)]
        for cfg in candidates:
            t0 = time.time()
            try:
                ours = gemm.bind_gemm(cfg, {"a": a, "b": b, "out": out})
            except gemm.ConfigRejected as e:
                print(f"{M}x{N}x{K} {cfg}: rejected: {e}")
                continue
            compile_s = time.time() - t0
            rel, finite = launch_and_check(torch, ours, out, ref32)
            passes = interleaved_passes([ours, cublas], 2, args.rep_ms)
            ms, ms_ref = mean_of_medians(passes)
            row = {
                "shape": shape, "config": cfg.to_dict(),
                "stages": gemm.resolve_config(cfg).stages,
                **versus_cublas(flops, ms, ms_ref),
                "passes": [{"ours": p[0].to_dict() | {"samples_ms": None},
                            "cublas": p[1].to_dict() | {"samples_ms": None}} for p in passes],
                "rel_norm_error": rel, "all_written": finite, "compile_s": compile_s,
            }
            rows.append(row)
            print(f"{M:>5}x{N:>5}x{K:>5}  ours {row['tflops']:7.1f} TFLOP/s  cuBLAS "
                  f"{row['cublas_tflops']:7.1f}  ratio {row['ratio_vs_cublas']:.3f}  "
                  f"(passes {passes[0][0].median_ms:.4f}/{passes[1][0].median_ms:.4f} vs "
                  f"{passes[0][1].median_ms:.4f}/{passes[1][1].median_ms:.4f} ms)  err {rel:.1e}  "
                  f"{_short(cfg)}", flush=True)
    if not rows:
        return 1
    geo, shapes = best_ratio_geomean(rows)
    print(f"geomean ratio vs cuBLAS over {shapes} shapes: {geo:.3f}")
    if args.out:
        result = {
            "kernel": "gemm", "dtype": args.dtype, "layout": "A row-major (K-major), B row-major (N-major), C row-major",
            **environment(dev, torch),
            "timing": "kernelscope.profiler.timing.time_callable: CUDA events per launch, L2 flushed "
                      "before each, warm-up, median; two interleaved passes per side, mean of medians",
            "reference": "cuBLAS via torch.mm(a, b, out=...)",
            "skinny_pairing": "M in {128, 512} paired with N = K = 4096",
            "geomean_ratio_vs_cublas": geo,
            "results": rows,
            "command": command_line("benchmarks/bench_gemm.py", argv, os.path.basename(sys.executable)),
        }
        write_json(args.out, result)
        print(f"wrote {args.out}")
    return 0


def _short(cfg):
    return (f"{cfg.tile_m}x{cfg.tile_n} wg{cfg.consumer_wgs} cl{cfg.cluster[0]}x{cfg.cluster[1]} "
            f"r{cfg.raster} sw{cfg.swizzle} st{cfg.stages or 'auto'}")


if __name__ == "__main__":
    sys.exit(main())
