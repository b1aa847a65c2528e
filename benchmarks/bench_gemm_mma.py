"""Benchmark the mma.sync GEMM (kernels/gemm_mma.py) against cuBLAS (torch.mm) over the gemm
shape suite, in one process.

    python benchmarks/bench_gemm_mma.py --out benchmarks/results/gemm_mma-<device>.json
    python benchmarks/bench_gemm_mma.py --profile-once 4096x4096x4096   # two launches, for ncu

bf16 in and out, A (M x K) and B (K x N) row-major, fp32 accumulation on both sides. Every shape
is first checked against an fp32 reference on fresh random inputs (NaN-poisoned output). Timing:
kernelscope.profiler.timing (CUDA events around each launch, warm-up, L2 overwritten before every
launch, median); each side is timed twice, interleaved, and the reported time is the mean of the
two medians. With --hmma-ceiling FILE the rate is also given as a fraction of the device's
mma.sync ceiling measured by benchmarks/hmma_ceiling.py.
"""

import json
import os
import sys

from _bench_common import (
    PAIRED_TIMING, add_paired_argument, bench_parser, finish_versus_cublas, gemm_configs_vs_cublas, gemm_operands,
    gpu_main, parse_shapes, versus_cublas_line)

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def _parse_args(argv):
    p = bench_parser(__doc__, "subset, e.g. '4096x4096x4096,8192x8192x8192' (MxNxK)")
    p.add_argument("--configs", help="JSON list of configs to time at every shape (default: the per-shape choice, "
                                     "kernelscope.kernels.gemm_mma.tuned_config)")
    p.add_argument("--rep-ms", type=float, default=150.0, help="timed budget per measurement")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    p.add_argument("--hmma-ceiling", help="JSON written by benchmarks/hmma_ceiling.py on this device")
    p.add_argument("--profile-once", metavar="MxNxK",
                   help="per shape (comma-separated): compile, launch, check, launch once more; then exit (for ncu)")
    add_paired_argument(p)
    args = p.parse_args(argv)
    if args.hmma_ceiling and not os.path.exists(args.hmma_ceiling):
        p.error(f"no such file: {args.hmma_ceiling} (run benchmarks/hmma_ceiling.py on this device first, "
                "or leave --hmma-ceiling out)")
    return args


def _shapes(text):
    from kernelscope.kernels.gemm_problem import SUITE
    return parse_shapes(text, SUITE)


def _profile_once(args):
    import torch

    from kernelscope.kernels import gemm_mma
    for shape in _shapes(args.profile_once):
        cfg = gemm_mma.MmaGemmConfig.from_mapping(
            json.loads(args.configs)[0] if args.configs else gemm_mma.tuned_config(shape, args.dtype))
        a, b, out = gemm_operands(torch, shape, getattr(torch, args.dtype))
        run = gemm_mma.bind_gemm_mma(cfg, {"a": a, "b": b, "out": out})
        run()                                  # first launch: compile, module load, warm-up
        torch.cuda.synchronize()
        ref = a.float() @ b.float()
        rel = ((out.float() - ref).norm() / ref.norm()).item()
        run()                                  # the launch to look at (ncu: the 2nd match per shape)
        torch.cuda.synchronize()
        print(f"profile-once {shape}: rel err {rel:.2e}")
    return 0


@gpu_main("bench_gemm_mma", _parse_args)
def main(args, argv, torch, dev):
    if args.profile_once:
        return _profile_once(args)

    from kernelscope.kernels import gemm_mma

    tdt = getattr(torch, args.dtype)
    ceiling = None
    if args.hmma_ceiling:
        with open(args.hmma_ceiling) as f:
            ceiling = json.load(f)
        if ceiling.get("device") != dev.name:
            print(f"ignoring {args.hmma_ceiling}: measured on {ceiling.get('device')}, not {dev.name}")
            ceiling = None
    swept = [gemm_mma.MmaGemmConfig.from_mapping(c) for c in json.loads(args.configs)] if args.configs else None
    rows = []
    for shape in _shapes(args.shapes):
        configs = swept or [gemm_mma.MmaGemmConfig.from_mapping(gemm_mma.tuned_config(shape, args.dtype))]
        for cfg, row, passes in gemm_configs_vs_cublas(torch, shape, tdt, configs, gemm_mma.bind_gemm_mma,
                                                       gemm_mma.ConfigRejected, args.rep_ms, args.paired):
            grid, resources = gemm_mma.persistent_grid(cfg, args.dtype, "n")
            row.update(stages=gemm_mma.resolve_config(cfg).stages, grid_blocks=grid, resources=resources,
                       fraction_of_hmma_ceiling=row["tflops"] / ceiling["ceiling_tflops"] if ceiling else None)
            rows.append(row)
            frac = f"  {row['fraction_of_hmma_ceiling']:.2f} of HMMA ceiling" if ceiling else ""
            print(f"{versus_cublas_line(row, passes)} written {row['all_written']}{frac}  {_short(cfg)} "
                  f"regs {resources['registers']} grid {grid}", flush=True)
    return finish_versus_cublas("gemm_mma", rows, args, argv, dev, torch, clocks="as found (not locked)",
                                timing=PAIRED_TIMING if args.paired else None,
                                hmma_ceiling_tflops=ceiling["ceiling_tflops"] if ceiling else None)


def _short(cfg):
    return (f"{cfg.tile_m}x{cfg.tile_n} w{cfg.warps_m}x{cfg.warps_n} wk{cfg.wk_iters} "
            f"st{cfg.stages or 'auto'} {cfg.raster}/{cfg.group}")


if __name__ == "__main__":
    sys.exit(main())
