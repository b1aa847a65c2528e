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
- every --also config of the fused kernel (at the first --also-shapes shapes).
Timing: _bench_common.round_robin: all sides of a shape take turns launch by launch (fused,
cublas, unfused, fused, ..., the order rotating every round), each launch between its own CUDA
events with the L2 flushed before it; --passes passes of rounds, the SM clock read with
nvidia-smi while each pass runs. Per shape: each side's median, and the median (and quartiles)
of the per-round ratios, whose pairing cancels a clock or thermal drift common to the sides.
Over shapes: the geomean of the per-shape paired medians with a bootstrap interval (rounds
resampled within each shape), and a verdict per target: met / not met / unresolved by the run.
Every shape is checked against the fp32 reference first (relative Frobenius error, worst row).
"""

import json
import os
import sys
import time

from _bench_common import (
    ClockSampler, bench_parser, bootstrap_geomean_of_medians, clock_fields, clock_summary, command_line,
    environment, geomean, gpu_clock_reading, gpu_main, paired_ratios, parse_shapes, quartiles, round_robin, verdict, write_json)

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

GEMM_TARGET = 1.02          # fused / cuBLAS GEMM at most this
UNFUSED_TARGET = 1.05       # torch unfused / fused at least this


def _parse_args(argv):
    p = bench_parser(__doc__, "subset, e.g. '8192x4096x4096' (MxNxK); default: the suite")
    p.add_argument("--config", help="JSON config of the fused kernel (default: GemmRmsNormConfig())")
    p.add_argument("--also", help="JSON list of further configs, timed at the first --also-shapes")
    p.add_argument("--also-shapes", type=int, default=2, help="how many shapes the --also configs run")
    p.add_argument("--rep-ms", type=float, default=100.0,
                   help="timed budget per side and pass (sets the rounds per pass)")
    p.add_argument("--rounds", type=int, help="rounds per pass (overrides --rep-ms)")
    p.add_argument("--with-gemm", action="store_true",
                   help="also time kernelscope's own gemm (same tile and cluster) on x and W': the "
                        "fused kernel's cost over the same GEMM without the norm")
    p.add_argument("--passes", type=int, default=2, help="passes of round-robin rounds per shape")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap draws for the geomean intervals")
    p.add_argument("--keep-samples", action="store_true", help="keep every round's times in the JSON")
    args = p.parse_args(argv)
    for name in ("rep_ms", "passes", "bootstrap", "rounds", "also_shapes"):
        value = getattr(args, name)
        if value is not None and value <= 0 and not (name == "also_shapes" and value == 0):
            p.error(f"--{name.replace('_', '-')} must be positive, got {value}")
    args.config_obj = json.loads(args.config) if args.config else {}
    args.also_list = json.loads(args.also) if args.also else []
    if not isinstance(args.also_list, list):
        p.error("--also must be a JSON list of configs")
    return args


def _shapes(text):
    from kernelscope.kernels.gemm_rmsnorm import SUITE
    return parse_shapes(text, SUITE)


def _accuracy(out, ref):
    diff = out.float() - ref
    row_rms = ref.pow(2).mean(dim=1).sqrt().clamp_min(1e-30)
    return {"rel_norm_error": (diff.norm() / ref.norm()).item(),
            "worst_row_rel_error": (diff.pow(2).mean(dim=1).sqrt() / row_rms).max().item(),
            "all_written": bool(out.isfinite().all().item())}


def _median(xs):
    return quartiles(xs)["median"]


def shape_rows(shape, configs, samples, pass_of_round, *, with_gemm=False):
    """Result rows of one shape (one per fused config) from its round-robin samples.

    samples: {"fused": [per config, times per round], "cublas_gemm": [...], "torch_unfused": [...],
    optionally "kernelscope_gemm": [...]}, all of the same rounds. The ratios are taken round by
    round (the sides of a round ran moments apart) and summarised by their median and quartiles;
    the targets are judged on the paired medians."""
    M, N, K = shape["M"], shape["N"], shape["K"]
    flops = 2.0 * M * N * K
    cublas, unfused = samples["cublas_gemm"], samples["torch_unfused"]
    base = samples["fused"][0]
    passes = sorted(set(pass_of_round))
    rows = []
    for c, cfg in enumerate(configs):
        fused = samples["fused"][c]
        over_gemm = paired_ratios(fused, cublas)
        unfused_over = paired_ratios(unfused, fused)
        ms = {"fused": _median(fused), "cublas_gemm": _median(cublas), "torch_unfused": _median(unfused)}
        row = {
            "shape": dict(shape), "config": cfg,
            "fused_ms": ms["fused"], "cublas_gemm_ms": ms["cublas_gemm"], "torch_unfused_ms": ms["torch_unfused"],
            "fused_tflops": flops / (ms["fused"] * 1e-3) / 1e12,
            "cublas_gemm_tflops": flops / (ms["cublas_gemm"] * 1e-3) / 1e12,
            # ratio of the sides' medians, and the median of the per-round ratios (paired)
            "fused_over_gemm": ms["fused"] / ms["cublas_gemm"],
            "unfused_over_fused": ms["torch_unfused"] / ms["fused"],
            "paired_fused_over_gemm": _median(over_gemm),
            "paired_unfused_over_fused": _median(unfused_over),
            "paired_fused_over_gemm_quartiles": quartiles(over_gemm),
            "paired_unfused_over_fused_quartiles": quartiles(unfused_over),
            "rounds": len(fused),
        }
        row["meets_gemm_target"] = row["paired_fused_over_gemm"] <= GEMM_TARGET
        row["meets_unfused_target"] = row["paired_unfused_over_fused"] >= UNFUSED_TARGET
        if c > 0:
            row["paired_over_base_quartiles"] = quartiles(paired_ratios(fused, base))
        row["kernelscope_gemm_ms"] = _median(samples["kernelscope_gemm"]) if with_gemm else None
        row["fused_over_kernelscope_gemm"] = (_median(paired_ratios(fused, samples["kernelscope_gemm"]))
                                              if with_gemm else None)
        sides = {"fused": fused, "cublas_gemm": cublas, "torch_unfused": unfused}
        if with_gemm:
            sides["kernelscope_gemm"] = samples["kernelscope_gemm"]
        row["passes"] = [{name: quartiles([t for t, q in zip(ts, pass_of_round) if q == p])
                          for name, ts in sides.items()} for p in passes]
        row["round_ratios"] = {"fused_over_gemm": over_gemm, "unfused_over_fused": unfused_over}
        if c > 0:
            row["round_ratios"]["over_base"] = paired_ratios(fused, base)
        rows.append(row)
    return rows


def summarize(rows, base_config, draws=2000):
    """Geomeans over the shapes of the base config (and of every config over the shapes it ran),
    with bootstrap intervals and the verdict on each target."""
    base_rows = [r for r in rows if r["config"] == base_config]
    summary = _config_summary(base_rows, draws)
    summary["max_rel_norm_error"] = max(r["fused_accuracy"]["rel_norm_error"] for r in rows)
    summary["max_worst_row_rel_error"] = max(r["fused_accuracy"]["worst_row_rel_error"] for r in rows)
    groups = {}
    for r in rows:
        groups.setdefault(json.dumps(r["config"], sort_keys=True), []).append(r)
    summary["by_config"] = [{"config": json.loads(key)} | _config_summary(rs, draws) for key, rs in groups.items()]
    return summary


def _config_summary(rs, draws):
    def interval(key):
        if not draws:
            return None                 # intermediate files of a run in progress skip the bootstrap
        return list(bootstrap_geomean_of_medians([r["round_ratios"][key] for r in rs], draws=draws))

    def judged(iv, target, at_most):
        return "n/a" if iv is None else verdict(iv, target, at_most=at_most)

    out = {"shapes": len(rs),
           "geomean_fused_over_gemm": geomean(r["fused_over_gemm"] for r in rs),
           "geomean_unfused_over_fused": geomean(r["unfused_over_fused"] for r in rs),
           "geomean_paired_fused_over_gemm": geomean(r["paired_fused_over_gemm"] for r in rs),
           "geomean_paired_unfused_over_fused": geomean(r["paired_unfused_over_fused"] for r in rs),
           "interval_paired_fused_over_gemm": interval("fused_over_gemm"),
           "interval_paired_unfused_over_fused": interval("unfused_over_fused"),
           "shapes_meeting_gemm_target": sum(r["meets_gemm_target"] for r in rs),
           "shapes_meeting_unfused_target": sum(r["meets_unfused_target"] for r in rs)}
    out["gemm_target"] = judged(out["interval_paired_fused_over_gemm"], GEMM_TARGET, True)
    out["unfused_target"] = judged(out["interval_paired_unfused_over_fused"], UNFUSED_TARGET, False)
    if all("over_base" in r["round_ratios"] for r in rs):
        out["geomean_paired_over_base"] = geomean(_median(r["round_ratios"]["over_base"]) for r in rs)
        out["interval_paired_over_base"] = interval("over_base")
    return out


@gpu_main("bench_gemm_rmsnorm", _parse_args)
def main(args, argv, torch, dev):
    import torch.nn.functional as F

    from kernelscope.kernels import gemm_rmsnorm as fused

    uuid = f"GPU-{dev.uuid}" if getattr(dev, "uuid", None) else None
    fields = clock_fields(uuid)
    if fields is None and uuid:
        uuid, fields = None, clock_fields(None)
    clock_before = gpu_clock_reading(fields, uuid)
    base_cfg = fused.GemmRmsNormConfig.from_mapping(args.config_obj)
    extra_cfgs = [fused.GemmRmsNormConfig.from_mapping(c) for c in args.also_list]
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
        unfused_out.fill_(float("nan"))
        unfused()
        torch.cuda.synchronize()
        unfused_acc = _accuracy(unfused_out, ref)

        configs = [base_cfg] + (extra_cfgs if i < args.also_shapes else [])
        fused_runs, checks = [], []
        for cfg in configs:
            out = torch.full((M, N), float("nan"), dtype=x.dtype, device="cuda")
            t0 = time.time()
            run = fused.bind_gemm_rmsnorm(cfg, {"x": x, "w_folded": w_folded, "eps": eps, "out": out})
            bind_s = time.time() - t0
            run()
            torch.cuda.synchronize()
            checks.append((_accuracy(out, ref), bind_s, fused.ring_stages(cfg)))
            fused_runs.append(run)
        sides = fused_runs + [cublas, unfused]
        if args.with_gemm:
            from kernelscope.kernels import gemm as plain
            gcfg = plain.GemmConfig(tile_n=base_cfg.tile_n, cluster=tuple(base_cfg.cluster),
                                    raster=base_cfg.raster, group=base_cfg.group)
            sides.append(plain.bind_gemm(gcfg, {"a": x, "b": w_folded, "out": gemm_out}))
        with ClockSampler(fields, uuid) as sampler:
            t0 = time.perf_counter()
            timed = round_robin(sides, passes=args.passes, rep_ms=args.rep_ms, rounds=args.rounds)
            timed_s = time.perf_counter() - t0
        nf = len(fused_runs)
        samples = {"fused": timed["samples_ms"][:nf], "cublas_gemm": timed["samples_ms"][nf],
                   "torch_unfused": timed["samples_ms"][nf + 1]}
        if args.with_gemm:
            samples["kernelscope_gemm"] = timed["samples_ms"][nf + 2]
        new_rows = shape_rows(shape, [c.to_dict() for c in configs], samples, timed["pass_of_round"],
                              with_gemm=args.with_gemm)
        clock = clock_summary(sampler.readings)
        for c, (row, (acc, bind_s, stages), cfg) in enumerate(zip(new_rows, checks, configs)):
            row.update({"stages": stages, "fold_ms": fold_ms, "bind_s": bind_s, "fused_accuracy": acc,
                        "torch_unfused_accuracy": unfused_acc, "clock": clock, "timed_s": timed_s,
                        "rounds_per_pass": timed["rounds_per_pass"], "warmup_rounds": timed["warmup_rounds"]})
            if args.keep_samples:
                row["round_samples_ms"] = {"fused": samples["fused"][c]} | {
                    k: v for k, v in samples.items() if k != "fused"}
            rows.append(row)
            print(_shape_line(row, acc, "" if cfg == base_cfg else _short(cfg, base_cfg)), flush=True)
        if args.out:
            _write(args, argv, dev, torch, rows, base_cfg, clock_before, None, final=False)
    clock_after = gpu_clock_reading(fields, uuid)
    summary = (_write(args, argv, dev, torch, rows, base_cfg, clock_before, clock_after, final=True)
               if args.out else summarize(rows, base_cfg.to_dict(), args.bootstrap))
    print(_summary_table(summary))
    return 0


def _shape_line(row, acc, config_note):
    s = row["shape"]
    q = row["paired_fused_over_gemm_quartiles"]
    sm = row["clock"]["sm_mhz"]
    clock = "n/a" if sm is None else "%.0f-%.0f" % (sm["min"], sm["max"])
    line = (f"{s['M']:>5}x{s['N']:>5}x{s['K']:>5} fused {row['fused_ms']:.4f} cublas {row['cublas_gemm_ms']:.4f} "
            f"unfused {row['torch_unfused_ms']:.4f}")
    if row["kernelscope_gemm_ms"] is not None:
        line += f" own-gemm {row['kernelscope_gemm_ms']:.4f} f/own {row['fused_over_kernelscope_gemm']:.3f}"
    line += (f" f/cublas {row['paired_fused_over_gemm']:.3f} [{q['q1']:.3f},{q['q3']:.3f}]"
             f" unf/f {row['paired_unfused_over_fused']:.3f} rounds {row['rounds']}"
             f" err {acc['rel_norm_error']:.1e} row {acc['worst_row_rel_error']:.1e} sm {clock} MHz"
             " fused passes " + "/".join("%.3f" % p["fused"]["median"] for p in row["passes"]))
    if config_note:
        line += " " + config_note
    if "paired_over_base_quartiles" in row:
        line += f" /base {row['paired_over_base_quartiles']['median']:.3f}"
    return line


def _short(cfg, base):
    return ",".join(f"{k}={v}" for k, v in cfg.to_dict().items() if base.to_dict()[k] != v)


def _summary_table(summary) -> str:
    """The closing lines: per config, paired geomeans with their intervals and the verdicts."""
    lines = [f"max errors: rel {summary['max_rel_norm_error']:.2e}, worst row {summary['max_worst_row_rel_error']:.2e}"]
    for c in summary["by_config"]:
        lo, hi = c["interval_paired_fused_over_gemm"]
        ulo, uhi = c["interval_paired_unfused_over_fused"]
        line = (f"{json.dumps(c['config'], sort_keys=True)} shapes {c['shapes']}: fused/cublas "
                f"{c['geomean_paired_fused_over_gemm']:.3f} [{lo:.3f},{hi:.3f}] ({c['gemm_target']} <= {GEMM_TARGET}, "
                f"{c['shapes_meeting_gemm_target']} shapes); unfused/fused {c['geomean_paired_unfused_over_fused']:.3f} "
                f"[{ulo:.3f},{uhi:.3f}] ({c['unfused_target']} >= {UNFUSED_TARGET}, "
                f"{c['shapes_meeting_unfused_target']} shapes)")
        if "geomean_paired_over_base" in c:
            blo, bhi = c["interval_paired_over_base"]
            line += f"; over base {c['geomean_paired_over_base']:.3f} [{blo:.3f},{bhi:.3f}]"
        lines.append(line)
    return "\n".join(lines)


def _write(args, argv, dev, torch, rows, base_cfg, clock_before, clock_after, final):
    """Write the JSON (after every shape too, so a run cut short keeps what it measured)."""
    summary = summarize(rows, base_cfg.to_dict(), args.bootstrap if final else 0)
    kept = [r if args.keep_samples else {k: v for k, v in r.items() if k != "round_ratios"} for r in rows]
    result = {
        "kernel": "gemm_rmsnorm", "dtype": "bfloat16", "complete": final,
        "layout": "X row-major, W (K x N) row-major, Y row-major; gain folded into W before timing",
        **environment(dev, torch),
        "timing": "_bench_common.round_robin: per shape all sides take turns launch by launch (order "
                  "rotating each round), CUDA events per launch, L2 flushed before each, warm-up rounds; "
                  f"{args.passes} passes of {'--rounds ' + str(args.rounds) if args.rounds else 'about --rep-ms ' + str(args.rep_ms) + ' ms per side'} "
                  "each. *_ms: median over all rounds; paired_*: median of the per-round ratios; "
                  "meets_*: on the paired median; intervals: 95% percentile bootstrap of the geomean "
                  f"over shapes ({args.bootstrap} draws, rounds resampled within each shape)",
        "clocks": "nvidia-smi readings, read-only (clocks as found, nothing changed, no ncu run): "
                  "before and after the run, and sampled every ~0.1 s while each shape was timed (per row)",
        "clock_before": clock_before, "clock_after": clock_after,
        "inputs": "x rows scaled by 10^u, u uniform in [-3, 3]; gamma = 1 + 0.5 N(0,1); "
                  "w = N(0,1)/sqrt(K); eps 1e-6",
        "targets": {"fused_over_gemm_at_most": GEMM_TARGET, "unfused_over_fused_at_least": UNFUSED_TARGET},
        "summary": summary, "results": kept,
        "command": command_line("benchmarks/bench_gemm_rmsnorm.py", argv),
    }
    write_json(args.out, result)
    if final:
        print(f"wrote {args.out}")
    return summary


if __name__ == "__main__":
    sys.exit(main())
