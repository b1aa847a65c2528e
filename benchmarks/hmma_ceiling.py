"""The device's mma.sync (HMMA) throughput ceiling: a CuTe DSL kernel that issues back-to-back
independent mma.sync m16n8k16 (bf16 or fp16 in, fp32 accumulate) from registers only.

    python benchmarks/hmma_ceiling.py --out benchmarks/results/hmma-ceiling-<device>.json

Each warp holds one set of A and B fragments (loaded once from a random input, never zeros) and
`chains` independent accumulator tiles; every iteration issues one mma.sync per accumulator, so
`chains` MMAs are in flight per warp and nothing touches memory inside the loop. The grid has
one block per SM (persistent, like gemm_mma) with `warps` warps each; the result is summed into
a per-thread output so that no MMA can be removed. Timing: CUDA events around each launch,
warm-up, median of many launches (kernelscope.profiler.timing, no L2 flush: no memory traffic).
The best rate over the warp/chain grid is the ceiling that gemm_mma's ratio refers to.
--compile-only builds the kernel and prints its SASS opcode counts (any machine).
"""

import argparse
import os
import sys
import time

from _bench_common import command_line, environment, write_json

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

MMA_FLOPS = 2 * 16 * 8 * 16     # one m16n8k16


def _build(dtype_name: str, warps: int, chain_m: int, chain_n: int, iters: int, arch: str, fake: bool):
    import cutlass
    import cutlass.cute as cute

    dtype = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}[dtype_name]

    @cute.kernel
    def hmma_loop(tiled_mma: cute.TiledMma, gIn: cute.Tensor, gOut: cute.Tensor, n_iters: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        # Fragments shaped like one warp's (16*chain_m) x (8*chain_n) x 16 tile.
        rA = tiled_mma.make_fragment_A(tiled_mma.partition_shape_A((16 * chain_m, 16)))
        rB = tiled_mma.make_fragment_B(tiled_mma.partition_shape_B((8 * chain_n, 16)))
        acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((16 * chain_m, 8 * chain_n)))
        n_in = cute.size(gIn)
        gid = bidx * (32 * warps) + tidx
        for i in cutlass.range_constexpr(cute.size(rA)):
            rA[i] = gIn[(gid * 7 + i * 131) % n_in]
        for i in cutlass.range_constexpr(cute.size(rB)):
            rB[i] = gIn[(gid * 13 + i * 257 + 5) % n_in]
        acc.fill(0.0)
        for _ in range(n_iters):
            # chain_m x chain_n independent m16n8k16 per iteration.
            cute.gemm(tiled_mma, acc, rA, rB, acc)
        total = cutlass.Float32(0.0)
        for i in cutlass.range_constexpr(cute.size(acc)):
            total = total + acc[i]
        gOut[gid] = total

    @cute.jit
    def launch(gIn: cute.Tensor, gOut: cute.Tensor, blocks: cutlass.Int32, n_iters: cutlass.Int32, stream):
        op = cute.nvgpu.warp.MmaF16BF16Op(dtype, cutlass.Float32, (16, 8, 16))
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout((1, 1, 1)))
        hmma_loop(tiled_mma, gIn, gOut, n_iters).launch(
            grid=[blocks, 1, 1], block=[32 * warps, 1, 1], stream=stream)

    import tempfile
    options = f"--keep-cubin --dump-dir={tempfile.mkdtemp(prefix='kernelscope-hmma-')} --gpu-arch {arch}"
    if fake:
        from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
        gin = make_fake_compact_tensor(dtype, (cute.sym_int32(),), assumed_align=16)
        gout = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int32(),), assumed_align=16)
        return cute.compile(launch, gin, gout, 1, iters, make_fake_stream(), options=options)
    return launch, options


def _sass_counts(compiled) -> dict[str, int]:
    import re
    from collections import Counter

    from kernelscope.toolchain.sass import disassemble_cubin
    cubin = compiled.__cubin__
    sass = disassemble_cubin(cubin if isinstance(cubin, bytes) else cubin.encode("latin-1")) or ""
    ops = Counter(re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass, re.M))
    return dict(ops)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    p.add_argument("--warps", default="4,8,16", help="warps per block (one block per SM)")
    p.add_argument("--chains", default="2x4,4x4,4x8", help="independent accumulator tiles per warp, MxN")
    p.add_argument("--iters", type=int, default=4096, help="loop iterations per launch")
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument("--compile-only", action="store_true")
    args = p.parse_args(argv)
    warps_list = [int(w) for w in args.warps.split(",")]
    chains = [tuple(int(x) for x in c.split("x")) for c in args.chains.split(",")]

    if args.compile_only:
        arch = os.environ.get("CUTE_DSL_ARCH", "sm_90a")
        for cm, cn in chains:
            compiled = _build(args.dtype, warps_list[0], cm, cn, args.iters, arch, fake=True)
            ops = _sass_counts(compiled)
            print(f"chains {cm}x{cn}: HMMA {ops.get('HMMA', 0)}  memory ops inside: "
                  f"LDG {ops.get('LDG', 0)} LDS {ops.get('LDS', 0)} LDL {ops.get('LDL', 0)}")
        return 0

    import torch
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from kernelscope.profiler.timing import time_callable

    if not torch.cuda.is_available():
        print("hmma_ceiling: no CUDA GPU available", file=sys.stderr)
        return 2
    import cuda.bindings.driver as cuda
    dev = torch.cuda.get_device_properties(0)
    arch = "sm_120a" if dev.major == 12 else "sm_90a"
    sms = dev.multi_processor_count
    tdt = getattr(torch, args.dtype)
    g = torch.Generator(device="cpu").manual_seed(1)
    src = torch.randn(1 << 16, generator=g).to(tdt).cuda()
    rows = []
    for warps in warps_list:
        for cm, cn in chains:
            launch, options = _build(args.dtype, warps, cm, cn, args.iters, arch, fake=False)
            out = torch.empty(sms * 32 * warps, dtype=torch.float32, device="cuda")
            stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
            t0 = time.time()
            compiled = cute.compile(launch, from_dlpack(src, assumed_align=16), from_dlpack(out, assumed_align=16),
                                    sms, args.iters, stream, options=options)
            compile_s = time.time() - t0
            a_in, a_out = from_dlpack(src, assumed_align=16), from_dlpack(out, assumed_align=16)
            fn = lambda: compiled(a_in, a_out, sms, args.iters, stream)  # noqa: E731
            fn()
            torch.cuda.synchronize()
            finite = bool(torch.isfinite(out).all().item()) and bool((out != 0).any().item())
            t = time_callable(fn, rep_ms=args.rep_ms, flush_l2=False)
            mmas = sms * warps * cm * cn * args.iters
            tflops = mmas * MMA_FLOPS / (t.median_ms * 1e-3) / 1e12
            ops = _sass_counts(compiled)
            row = {"warps_per_sm": warps, "chains": f"{cm}x{cn}", "mma_per_launch": mmas,
                   "median_ms": t.median_ms, "iqr_ms": t.iqr_ms, "n": t.n, "tflops": tflops,
                   "hmma_in_sass": ops.get("HMMA", 0), "output_finite_nonzero": finite,
                   "compile_s": compile_s}
            rows.append(row)
            print(f"warps/SM {warps:>2}  chains {cm}x{cn}  {t.median_ms:.4f} ms  {tflops:7.1f} TFLOP/s  "
                  f"(iqr {t.iqr_ms:.4f}, HMMA in SASS {row['hmma_in_sass']}, output ok {finite})", flush=True)
    best = max(rows, key=lambda r: r["tflops"])
    print(f"mma.sync ceiling ({args.dtype}, fp32 accumulate): {best['tflops']:.1f} TFLOP/s "
          f"at {best['warps_per_sm']} warps/SM, chains {best['chains']}")
    if args.out:
        result = {
            "what": "mma.sync m16n8k16 throughput from registers (HMMA ceiling)",
            "dtype": args.dtype, "accumulate": "float32",
            **environment(dev, torch),
            "iters_per_launch": args.iters,
            "timing": "kernelscope.profiler.timing.time_callable: CUDA events per launch, warm-up, median; "
                      "no L2 flush (no memory traffic in the loop)",
            "clocks": "as found (not locked)",
            "ceiling_tflops": best["tflops"], "best": best, "results": rows,
            "command": command_line("benchmarks/hmma_ceiling.py", argv),
        }
        write_json(args.out, result)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
