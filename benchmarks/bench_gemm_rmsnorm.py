"""Benchmark the fused RMSNorm -> GEMM against a plain cuBLAS GEMM of the same shape and against
torch unfused (F.rms_norm then matmul), in one process.

    python benchmarks/bench_gemm_rmsnorm.py --out benchmarks/results/gemm_rmsnorm-<device>.json

bf16, X (M x K) row-major with rows of very different norms, W (K x N) row-major, gain g (K,).
- fused: kernelscope.kernels.gemm_rmsnorm with W' = g * W folded once before timing (the weight
  preparation; its one-off time is reported separately as fold_ms).
- cublas_gemm: torch.mm(x, W', out=...): the same GEMM with no normalisation, the floor the
  fused kernel is held to (target: fused <= 1.02x its time).
- torch_unfused: torch.mm(F.rms_norm(x, (K,), g, eps), W, out=...) (target: fused >= 1.05x faster).
- kernelscope_gemm (--with-gemm): kernels/gemm.py with the same tile and cluster on x and W': what
  the norm costs over the same GEMM kernel structure.
Timing: kernelscope.profiler.timing.time_callable (CUDA events per launch, L2 flushed before each
launch, warm-up, median); each side twice, interleaved, reported as the mean of the two medians.
Every shape is checked against the fp32 reference first (relative Frobenius error, worst row).
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

from _bench_common import command_line, environment, interleaved_passes, mean_of_medians, parse_shapes, write_json

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def _parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--shapes", help="subset, e.g. '8192x4096x4096' (MxNxK); default: the suite")
    p.add_argument("--config", help="JSON config of the fused kernel (default: FusedConfig())")
    p.add_argument("--also", help="JSON list of further configs, timed at the first --also-shapes")
    p.add_argument("--also-shapes", type=int, default=2, help="how many shapes the --also configs run")
    p.add_argument("--rep-ms", type=float, default=100.0, help="timed budget per measurement")
    p.add_argument("--with-gemm", action="store_true",
                   help="also time kernelscope's own gemm (same tile and cluster) on x and W': the "
                        "fused kernel's cost over the same GEMM without the norm")
    p.add_argument("--passes", type=int, default=2, help="interleaved timing passes per side")
    return p.parse_args(argv)


def _shapes(text):
    from kernelscope.kernels.gemm_rmsnorm import SUITE
    return parse_shapes(text, SUITE)


def _accuracy(out, ref):
    diff = out.float() - ref
    row_rms = ref.pow(2).mean(dim=1).sqrt().clamp_min(1e-30)
    return {"rel_norm_error": (diff.norm() / ref.norm()).item(),
            "worst_row_rel_error": (diff.pow(2).mean(dim=1).sqrt() / row_rms).max().item(),
            "all_written": bool(out.isfinite().all().item())}


def main(argv=None):
    args = _parse_args(argv)
    import torch
    import torch.nn.functional as F

    from kernelscope.kernels import gemm_rmsnorm as fused
    from kernelscope.profiler.timing import tflops

    if not torch.cuda.is_available():
        print("bench_gemm_rmsnorm: no CUDA GPU available", file=sys.stderr)
        return 2
    dev = torch.cuda.get_device_properties(0)
    base_cfg = fused.FusedConfig.from_mapping(json.loads(args.config) if args.config else {})
    extra_cfgs = [fused.FusedConfig.from_mapping(c) for c in json.loads(args.also)] if args.also else []
    rows = []
    for i, shape in enumerate(_shapes(args.shapes)):
        M, N, K = shape["M"], shape["N"], shape["K"]
        inputs = fused.make_inputs(shape, "bfloat16", seed=M + 3 * N + 7 * K)
        x, gamma, w, eps = inputs["x"], inputs["gamma"], inputs["w"], inputs["eps"]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        w_folded = fused.fold_gain(gamma, w)
        torch.cuda.synchronize()
        fold_ms = (time.perf_counter() - t0) * 1e3
        ref = fused.reference_fp32(inputs)
        gemm_out = torch.empty((M, N), dtype=x.dtype, device="cuda")
        unfused_out = torch.empty((M, N), dtype=x.dtype, device="cuda")
        cublas = lambda: torch.mm(x, w_folded, out=gemm_out)  # noqa: E731
        unfused = lambda: torch.mm(F.rms_norm(x, (K,), gamma, eps), w, out=unfused_out)  # noqa: E731
        unfused()
        sides = {"cublas_gemm": cublas, "torch_unfused": unfused}
        if args.with_gemm:
            from kernelscope.kernels import gemm as plain
            gcfg = plain.GemmConfig(tile_n=base_cfg.tile_n, cluster=tuple(base_cfg.cluster),
                                    raster=base_cfg.raster, swizzle=base_cfg.swizzle)
            sides["kernelscope_gemm"] = plain.bind_gemm(gcfg, {"a": x, "b": w_folded, "out": gemm_out})
        torch.cuda.synchronize()
        unfused_acc = _accuracy(unfused_out, ref)
        for cfg in [base_cfg] + (extra_cfgs if i < args.also_shapes else []):
            out = inputs["out"]
            out.fill_(float("nan"))
            t0 = time.time()
            run = fused.bind_gemm_rmsnorm(cfg, {"x": x, "w_folded": w_folded, "eps": eps, "out": out})
            bind_s = time.time() - t0
            run()
            torch.cuda.synchronize()
            acc = _accuracy(out, ref)
            passes = interleaved_passes([run] + list(sides.values()), args.passes, args.rep_ms)
            ms = mean_of_medians(passes)
            flops = 2.0 * M * N * K
            row = {
                "shape": shape, "config": cfg.to_dict(), "stages": fused.ring_stages(cfg),
                "fused_ms": ms[0], "cublas_gemm_ms": ms[1], "torch_unfused_ms": ms[2],
                "fused_tflops": tflops(flops, ms[0]), "cublas_gemm_tflops": tflops(flops, ms[1]),
                "fused_over_gemm": ms[0] / ms[1], "unfused_over_fused": ms[2] / ms[0],
                "meets_gemm_target": ms[0] / ms[1] <= 1.02, "meets_unfused_target": ms[2] / ms[0] >= 1.05,
                "fold_ms": fold_ms, "bind_s": bind_s,
                "kernelscope_gemm_ms": ms[3] if args.with_gemm else None,
                "fused_over_kernelscope_gemm": ms[0] / ms[3] if args.with_gemm else None,
                "fused_accuracy": acc, "torch_unfused_accuracy": unfused_acc,
                "passes": [{name: t.to_dict() | {"samples_ms": None}
                            for name, t in zip(["fused"] + list(sides), p)} for p in passes],
            }
            # Paired per pass (same thermal and clock state): the median over passes of the
            # ratio within each pass, steadier than the ratio of means when the clock drifts.
            row["paired_fused_over_gemm"] = statistics.median(p[0].median_ms / p[1].median_ms for p in passes)
            row["paired_unfused_over_fused"] = statistics.median(p[2].median_ms / p[0].median_ms for p in passes)
            rows.append(row)
            ours = f" own-gemm {ms[3]:.4f} f/own {ms[0] / ms[3]:.3f}" if args.with_gemm else ""
            print(f"{M:>5}x{N:>5}x{K:>5} fused {ms[0]:.4f} cublas {ms[1]:.4f} unfused {ms[2]:.4f}{ours} "
                  f"f/cublas {row['fused_over_gemm']:.3f} unf/f {row['unfused_over_fused']:.3f} "
                  f"err {acc['rel_norm_error']:.1e} row {acc['worst_row_rel_error']:.1e} "
                  f"fused passes {'/'.join(f'{p[0].median_ms:.3f}' for p in passes)} "
                  f"{'' if cfg == base_cfg else _short(cfg, base_cfg)}", flush=True)
        if args.out:
            _write(args, argv, dev, torch, rows, base_cfg, final=False)
    summary = _write(args, argv, dev, torch, rows, base_cfg, final=True) if args.out else _summary(rows, base_cfg)
    print(json.dumps(summary))
    return 0


def _short(cfg, base):
    return ",".join(f"{k}={v}" for k, v in cfg.to_dict().items() if base.to_dict()[k] != v)


def _summary(rows, base_cfg):
    base_rows = [r for r in rows if r["config"] == base_cfg.to_dict()]
    geo = lambda key: math.exp(sum(math.log(r[key]) for r in base_rows) / len(base_rows))  # noqa: E731
    return {"geomean_fused_over_gemm": geo("fused_over_gemm"),
            "geomean_unfused_over_fused": geo("unfused_over_fused"),
            "shapes_meeting_gemm_target": sum(r["meets_gemm_target"] for r in base_rows),
            "shapes_meeting_unfused_target": sum(r["meets_unfused_target"] for r in base_rows),
            "geomean_paired_fused_over_gemm": geo("paired_fused_over_gemm"),
            "geomean_paired_unfused_over_fused": geo("paired_unfused_over_fused"),
            "shapes": len(base_rows),
            "max_rel_norm_error": max(r["fused_accuracy"]["rel_norm_error"] for r in rows),
            "max_worst_row_rel_error": max(r["fused_accuracy"]["worst_row_rel_error"] for r in rows),
            "by_config": _by_config(rows)}


def _by_config(rows):
    """Geomeans of every config over the shapes it ran (each ratio taken against the cuBLAS and
    unfused times of its own passes), so an --also config can be compared with the base."""
    groups = {}
    for r in rows:
        groups.setdefault(json.dumps(r["config"], sort_keys=True), []).append(r)
    out = []
    for key, rs in groups.items():
        geo = lambda k: math.exp(sum(math.log(r[k]) for r in rs) / len(rs))  # noqa: E731
        out.append({"config": json.loads(key), "shapes": len(rs),
                    "geomean_fused_over_gemm": geo("fused_over_gemm"),
                    "geomean_paired_fused_over_gemm": geo("paired_fused_over_gemm"),
                    "geomean_unfused_over_fused": geo("unfused_over_fused"),
                    "geomean_paired_unfused_over_fused": geo("paired_unfused_over_fused"),
                    "shapes_meeting_gemm_target": sum(r["meets_gemm_target"] for r in rs),
                    "shapes_meeting_unfused_target": sum(r["meets_unfused_target"] for r in rs)})
    return out


def _write(args, argv, dev, torch, rows, base_cfg, final):
    """Write the JSON (after every shape too, so a run cut short keeps what it measured)."""
    summary = _summary(rows, base_cfg)
    result = {
        "kernel": "gemm_rmsnorm", "dtype": "bfloat16", "complete": final,
        "layout": "X row-major, W (K x N) row-major, Y row-major; gain folded into W before timing",
        **environment(dev, torch),
        "timing": "kernelscope.profiler.timing.time_callable: CUDA events per launch, L2 flushed "
                  f"before each, warm-up, median; {args.passes} interleaved passes per side, mean of medians",
        "inputs": "x rows scaled by 10^u, u uniform in [-3, 3]; gamma = 1 + 0.5 N(0,1); "
                  "w = N(0,1)/sqrt(K); eps 1e-6",
        "summary": summary, "results": rows,
        "command": command_line("benchmarks/bench_gemm_rmsnorm.py", argv),
    }
    write_json(args.out, result)
    if final:
        print(f"wrote {args.out}")
    return summary


if __name__ == "__main__":
    sys.exit(main())
