"""Benchmark the flash_attn kernel against every attention reference in one process.

    python benchmarks/bench_flash_attn.py --out benchmarks/results/flash_attn-<device>.json

bf16, (B, S, H, D) inputs drawn from N(0, 1). References (kernelscope.kernels.references): sdpa
(default backend), sdpa.cudnn, sdpa.flash, fa4 (flash_attn.cute) when importable; one that cannot
run a shape is recorded with its reason. Timing: kernelscope.profiler.timing.time_callable (CUDA
events per launch, L2 flushed before each, warm-up, median). Each shape is checked against the
fp32 reference first on --check-heads (batch, head) pairs (the first, the last, and random
ones; a full fp32 reference of the largest shapes would take longer than the timing): max abs
error next to that of torch's attention in bf16 on the same heads, and whether every element of
the whole output was written.
"""

import json
import os
import sys
import time

from _bench_common import (ClockSampler, bench_parser, clock_fields, clock_summary, command_line,
                           environment, geomean, gpu_main, paired_ratios, quartiles, round_robin, write_json)

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

REFERENCES = ["sdpa", "sdpa.cudnn", "sdpa.flash", "fa4"]


def _parse_args(argv):
    p = bench_parser(__doc__, "subset as BxHxSxD[c] (c: causal), comma separated; default: the suite")
    p.add_argument("--config", help="JSON config for every shape (default: the spec's config for the shape, flash_attn.tuned_config)")
    p.add_argument("--refs", default=",".join(REFERENCES), help="references to time")
    p.add_argument("--also", help="JSON list of further configs, each a set of overrides on the "
                                  "shape's own config; timed on the causal shapes (all shapes "
                                  "with --also-all)")
    p.add_argument("--also-all", action="store_true", help="time the --also configs on every shape")
    p.add_argument("--rep-ms", type=float, default=60.0, help="timed budget per side and pass")
    p.add_argument("--passes", type=int, default=2, help="round-robin passes per shape")
    p.add_argument("--run-tests", metavar="PATH",
                   help="run these pytest files in this process first (they compile the same variants, "
                        "which the benchmark then reuses); the outcome goes into the JSON")
    p.add_argument("--tests-junit", help="junit XML of --run-tests")
    p.add_argument("--tests-k", help="pytest -k expression selecting among --run-tests")
    p.add_argument("--deadline", type=float,
                   help="seconds after which the process dumps its stacks and exits (a hung launch "
                        "then still leaves the results written so far)")
    p.add_argument("--check-heads", type=int, default=4,
                   help="(batch, head) pairs checked against the fp32 reference per shape")
    return p.parse_args(argv)


def _shapes(text):
    from kernelscope.kernels.flash_attn import SUITE
    if not text:
        return [dict(s) for s in SUITE]
    out = []
    for item in text.split(","):
        item = item.strip().lower()
        causal = item.endswith("c")
        B, H, S, D = (int(x) for x in item.rstrip("c").split("x"))
        out.append({"B": B, "H": H, "S": S, "D": D, "causal": int(causal)})
    return out


@gpu_main("bench_flash_attn", _parse_args)
def main(args, argv, torch, dev):
    from kernelscope.kernels import flash_attn as fa
    from kernelscope.kernels import references
    from kernelscope.kernels.spec import ConfigRejected
    from kernelscope.profiler.timing import tflops

    if args.deadline:
        import faulthandler
        faulthandler.dump_traceback_later(args.deadline, exit=True)
    tests = None
    if args.run_tests:
        import pytest
        t0 = time.time()
        extra = ["--junitxml", args.tests_junit] if args.tests_junit else []
        extra += ["-k", args.tests_k] if args.tests_k else []
        code = pytest.main(["-v", "-s", "-p", "no:cacheprovider", *args.run_tests.split(","), *extra])
        tests = {"files": args.run_tests, "exit_code": int(code), "seconds": time.time() - t0}
        print(f"tests: exit code {int(code)} in {tests['seconds']:.0f} s", flush=True)
        if args.out:
            _write(args, argv, dev, torch, [], final=False, tests=tests)
    fixed = fa.FlashAttnConfig.from_mapping(json.loads(args.config)) if args.config else None
    refs = [r for r in args.refs.split(",") if r]
    rows = []
    for shape in _shapes(args.shapes):
        inputs = fa.make_inputs(shape, "bfloat16", seed=shape["S"] + shape["H"])
        cfg = fixed or fa.FlashAttnConfig.from_mapping(fa.FLASH_ATTN_SPEC.config_for(shape, "bfloat16"))
        t0 = time.time()
        run = fa.bind_flash_attn(cfg, inputs)
        run()
        torch.cuda.synchronize()
        bind_s = time.time() - t0
        row = {"shape": shape, "config": cfg.to_dict(), "bind_s": bind_s,
               "all_written": bool(inputs["out"].isfinite().all().item())}
        row.update(_accuracy(fa, torch, inputs, args.check_heads))
        torch.cuda.empty_cache()
        flops = fa.attention_flops(shape)
        # Every side of this shape in one round-robin: one launch of each per round, so clock
        # and temperature drift hit all alike; ratios are taken within a round.
        sides = {"flash_attn": run}
        spec = fa.FLASH_ATTN_SPEC
        for name in refs:
            try:
                launch = references.bind(name, spec, inputs)
                launch()
                torch.cuda.synchronize()
                sides[name] = launch
            except Exception as e:  # noqa: BLE001 - a reference that cannot run is recorded, not fatal
                row[name] = {"ms": "n/a", "why": str(e).splitlines()[0][:200]}
        extras = []
        for extra in [fa.FlashAttnConfig.from_mapping({**cfg.to_dict(), **c})
                      for c in json.loads(args.also or "[]")]:
            if not (shape["causal"] or args.also_all):
                continue
            inputs["out"].fill_(float("nan"))
            try:
                alt = fa.bind_flash_attn(extra, inputs)
            except ConfigRejected as e:     # e.g. wide key blocks on a causal shape
                row.setdefault("also", []).append({"config": extra.to_dict(), "ms": "n/a", "why": str(e)})
                continue
            alt()
            torch.cuda.synchronize()
            acc = _accuracy(fa, torch, inputs, args.check_heads)
            key = f"also{len(extras)}"
            sides[key] = alt
            extras.append((key, extra, acc, bool(inputs["out"].isfinite().all().item())))
        names = list(sides)
        with ClockSampler(clock_fields()) as clocks:
            timed = round_robin([sides[n] for n in names], passes=args.passes, rep_ms=args.rep_ms)
        row["clocks"] = clock_summary(clocks.readings)
        samples = dict(zip(names, timed["samples_ms"]))
        row["rounds"] = len(samples["flash_attn"])
        ours = samples["flash_attn"]
        q = quartiles(ours)
        t_ms = q["median"]
        row["flash_attn"] = {"ms": t_ms, "iqr_ms": q["q3"] - q["q1"], "tflops": tflops(flops, t_ms)}
        for name in refs:
            if name not in samples:
                continue
            rq = quartiles(samples[name])
            paired = quartiles(paired_ratios(samples[name], ours))
            row[name] = {"ms": rq["median"], "iqr_ms": rq["q3"] - rq["q1"],
                         "tflops": tflops(flops, rq["median"]),
                         "ours_speedup": paired["median"],
                         "ours_speedup_q1": paired["q1"], "ours_speedup_q3": paired["q3"],
                         "per_round": paired_ratios(samples[name], ours)}
        for key, extra, acc, written in extras:
            aq = quartiles(samples[key])
            row.setdefault("also", []).append({
                "config": extra.to_dict(), "ms": aq["median"], "iqr_ms": aq["q3"] - aq["q1"],
                "tflops": tflops(flops, aq["median"]), "all_written": written,
                "vs_default": quartiles(paired_ratios(samples[key], ours))["median"], **acc})
            print(f"    also {extra.to_dict()}: {aq['median']:.3f} ms {tflops(flops, aq['median']):.0f} TF/s "
                  f"err {acc['max_abs_error']:.2e}", flush=True)
        rows.append(row)
        tag = f"{shape['B']}x{shape['H']}x{shape['S']}x{shape['D']}{'c' if shape['causal'] else ''}"
        parts = [f"{tag:>18} ours {t_ms:.3f} ms {row['flash_attn']['tflops']:.0f} TF/s"]
        for name in refs:
            r = row[name]
            parts.append(f"{name} " + (f"{r['tflops']:.0f} (x{r['ours_speedup']:.2f})" if r["ms"] != "n/a" else "n/a"))
        err = row["max_abs_error"]
        parts.append(f"err {err:.2e}/{row['torch_bf16_max_abs_error']:.2e}" if isinstance(err, float) else "err n/a")
        print(" | ".join(parts), flush=True)
        del inputs
        torch.cuda.empty_cache()
        if args.out:
            _write(args, argv, dev, torch, rows, final=False, tests=tests)
    if args.out:
        _write(args, argv, dev, torch, rows, final=True, tests=tests)
    return 0


def _accuracy(fa, torch, inputs, pairs):
    B, _, H, _ = inputs["q"].shape
    g = torch.Generator().manual_seed(0)
    chosen = {(0, 0), (B - 1, H - 1)}
    while len(chosen) < min(pairs, B * H):
        chosen.add((int(torch.randint(B, (1,), generator=g)), int(torch.randint(H, (1,), generator=g))))
    err = err_torch = 0.0
    for b, h in sorted(chosen):
        one = {n: inputs[n][b:b + 1, :, h:h + 1] for n in ("q", "k", "v", "out")}
        one["causal"] = inputs["causal"]
        ref = fa.reference_fp32(one)
        err = max(err, (one["out"].float() - ref).abs().max().item())
        err_torch = max(err_torch, (fa.torch_reference(one).float() - ref).abs().max().item())
    return {"max_abs_error": err, "torch_bf16_max_abs_error": err_torch,
            "checked_batch_head": sorted(chosen), "error_within_2x_torch": err <= 2 * err_torch}


def _write(args, argv, dev, torch, rows, final, tests=None):
    ratios = {}
    for name in args.refs.split(","):
        got = [r[name]["ours_speedup"] for r in rows if isinstance(r.get(name, {}).get("ms"), float)]
        if got:
            ratios[name] = {"geomean_speedup": geomean(got),
                            "min_speedup": min(got), "shapes": len(got)}
    result = {"kernel": "flash_attn", "dtype": "bfloat16", "complete": final, "layout": "bshd",
              **environment(dev, torch),
              "timing": "benchmarks/_bench_common.round_robin: per shape, one launch of every side per "
                        "round (order rotating), CUDA events per launch, L2 flushed before each; "
                        "times are medians over rounds, speedups medians of per-round ratios",
              "flops": "4 B H S^2 D, halved when causal",
              "summary": ratios, "tests": tests, "results": rows,
              "command": command_line("benchmarks/bench_flash_attn.py", argv)}
    write_json(args.out, result)


if __name__ == "__main__":
    sys.exit(main())
