"""Probe: the Hopper GEMM run on the transposed problem, C^T = B^T A^T, against cuBLAS on C = A B.

cuBLAS is column-major, so torch.mm(A, B) runs its kernel on C^T = B^T A^T: its tile and cluster are
named in that frame (kernels/gemm/NOTES.md, "256x128 tiles"). This probe times our kernel in the same
frame: A' = B^T (M-major), B' = A^T (K-major), the output C^T written row-major (N x M, so not the
layout torch.mm returns: a timing probe, the values checked against (A B)^T). Each config is timed in
turns with cuBLAS (benchmarks/_bench_common.py round_robin, L2 flushed before every launch).

    python3 benchmarks/gemm_transposed_probe.py --shapes 2048x2048x2048 \
        --configs '[{}, {"tile_m": 256, "tile_n": 128, "cluster": [1, 2]}]' --out $OUT/probe.json.xz
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench_common import (bench_parser, command_line, environment, gemm_operands, gpu_main,  # noqa: E402
                           launch_and_check, paired_versus_cublas, parse_shapes, round_robin, write_json)


def parse_args(argv):
    p = bench_parser(__doc__, "MxNxK of the problem C = A B (the kernel runs its transpose)")
    p.add_argument("--configs", default="[{}]",
                   help="JSON list of configs over the transposed shape's heuristic config")
    p.add_argument("--rep-ms", type=float, default=100.0, help="timed budget per side and pass")
    return p.parse_args(argv)


@gpu_main("gemm_transposed_probe.py", parse_args)
def main(args, argv, torch, dev):
    from kernelscope.kernels import gemm, gemm_problem

    rows = []
    for shape in parse_shapes(args.shapes, gemm_problem.SUITE):
        M, N, K = shape["M"], shape["N"], shape["K"]
        a, b, _ = gemm_operands(torch, shape, torch.bfloat16)
        ref_out = torch.empty((M, N), dtype=torch.bfloat16, device="cuda")
        cublas = lambda: torch.mm(a, b, out=ref_out)  # noqa: E731
        a_t, b_t = b.t(), a.t()                          # A' (N x K, M-major), B' (K x M, K-major)
        out_t = torch.full((N, M), float("nan"), dtype=torch.bfloat16, device="cuda")
        ref32_t = (a.float() @ b.float()).t()
        base = gemm.heuristic_config({"M": N, "N": M, "K": K}, dev.multi_processor_count)
        for change in json.loads(args.configs):
            cfg = gemm.GemmConfig.from_mapping({**base.to_dict(), **change})
            ours = gemm.bind_gemm(cfg, {"a": a_t, "b": b_t, "out": out_t})
            rel, finite = launch_and_check(torch, ours, out_t, ref32_t)
            row = {"shape": shape, "transposed_config": cfg.to_dict(), "rel_norm_error": rel, "all_written": finite,
                   **paired_versus_cublas(2.0 * M * N * K, round_robin([ours, cublas], passes=2, rep_ms=args.rep_ms))}
            rows.append(row)
            p = row["paired"]
            lo, hi = p["ratio_ci95"]
            print(f"{M}x{N}x{K} as C^T  {cfg.tile_m}x{cfg.tile_n} cl{cfg.cluster[0]}x{cfg.cluster[1]} "
                  f"epi{cfg.epi_n}  ratio {row['ratio_vs_cublas']:.3f} [{lo:.3f}, {hi:.3f}] "
                  f"({p['rounds']} rounds{', SUSPECT: host waits' if row['suspect'] else ''})  err {rel:.1e}",
                  flush=True)
    if args.out:
        write_json(args.out, {"command": command_line("benchmarks/gemm_transposed_probe.py", argv),
                              "environment": environment(dev, torch), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
