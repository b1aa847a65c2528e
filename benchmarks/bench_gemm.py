"""Benchmark the Hopper GEMM against cuBLAS (torch.mm) over the shape suite, in one process.

    python benchmarks/bench_gemm.py --out benchmarks/results/gemm-<device>.json

bf16 in, bf16 out, A (M x K) and B (K x N) both row-major, fp32 accumulation on both sides.
Timing: kernelscope.profiler.timing (CUDA events around each launch, warm-up, L2 overwritten
before every launch, median of many launches). Each side is timed twice, interleaved
(ours, cuBLAS, ours, cuBLAS), so the spread between the two passes is visible; the reported time
is the mean of the two medians. Every shape is also checked against an fp32 reference first. --paired times the two sides
launch by launch in turns instead (_bench_common.round_robin) and reports the median per-round
ratio with a 95% bootstrap interval: a clock drift hits both launches of a round alike.
The config per shape is kernelscope.kernels.gemm.heuristic_config unless --config is given.
"""

import json
import os
import sys

from _bench_common import (
    PAIRED_TIMING, add_paired_argument, bench_parser, finish_versus_cublas, gemm_configs_vs_cublas, gpu_main,
    parse_shapes, versus_cublas_line)

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def _parse_args(argv):
    p = bench_parser(__doc__, "subset, e.g. '4096x4096x4096,8192x8192x8192' (MxNxK)")
    p.add_argument("--config", help="JSON config for every shape (default: per-shape heuristic)")
    p.add_argument("--sweep", help="JSON list of configs to time at every shape instead (tuning)")
    p.add_argument("--over-heuristic", help="JSON list of config changes: each shape's heuristic config, "
                                            "then that config with each change, timed in the same run")
    p.add_argument("--rep-ms", type=float, default=150.0, help="timed budget per measurement")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    add_paired_argument(p)
    return p.parse_args(argv)


@gpu_main("bench_gemm", _parse_args)
def main(args, argv, torch, dev):
    from kernelscope.kernels import gemm, gemm_problem

    tdt = getattr(torch, args.dtype)
    rows = []
    configs = None
    if args.sweep:
        configs = [gemm.GemmConfig.from_mapping(c) for c in json.loads(args.sweep)]
    for shape in parse_shapes(args.shapes, gemm_problem.SUITE):
        candidates = configs or [gemm.GemmConfig.from_mapping(json.loads(args.config))
                                 if args.config else gemm.heuristic_config(shape, dev.multi_processor_count)]
        if args.over_heuristic and not configs:
            base = candidates[0]
            # Through from_mapping, so JSON lists become the config's pairs (cluster).
            candidates = [base] + [gemm.GemmConfig.from_mapping({**base.to_dict(), **change})
                                   for change in json.loads(args.over_heuristic)]
        for cfg, row, passes in gemm_configs_vs_cublas(torch, shape, tdt, candidates, gemm.bind_gemm,
                                                       gemm.ConfigRejected, args.rep_ms, args.paired):
            row["stages"] = gemm.resolve_config(cfg).stages
            rows.append(row)
            print(f"{versus_cublas_line(row, passes)}  {_short(cfg)}", flush=True)
    return finish_versus_cublas("gemm", rows, args, argv, dev, torch,
                                timing=PAIRED_TIMING if args.paired else None,
                                skinny_pairing="M in {128, 512} paired with N = K = 4096")


def _short(cfg):
    split = (f" split{cfg.splits}" if cfg.splits > 1 else " tail-split" if cfg.tail_split
             else f" stream-k/{cfg.stream_k_layout}" if cfg.stream_k else "")
    epilogue = (f" epi{cfg.epi_n}" + (f"x{cfg.epi_stages}" if cfg.epi_stages else "")
                + (f" last-tile-ring{cfg.ring_epi_n}" if cfg.ring_epi_n else ""))
    hints = "" if (cfg.a_load_hint, cfg.b_load_hint) == ("none", "none") else \
        f" L2 A:{cfg.a_load_hint} B:{cfg.b_load_hint}"
    return (f"{cfg.tile_m}x{cfg.tile_n} wg{cfg.consumer_wgs} cl{cfg.cluster[0]}x{cfg.cluster[1]} "
            f"{cfg.raster}/{cfg.group} st{cfg.stages or 'auto'}{epilogue}{split}{hints}")


if __name__ == "__main__":
    sys.exit(main())
