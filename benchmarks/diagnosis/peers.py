"""Real peer pairs for the diagnosis corpus: torch vs quack RMSNorm, cuDNN vs flash-attn-4 attention,
and kernelscope's own GEMM with 2x2 against 2x1 clusters.

    python3 peers.py            check each pair's outputs against each other, then time them
    python3 peers.py --profile  check, then one launch of each inside torch.cuda.profiler.start/stop
                                (for ncu --profile-from-start off), each in an NVTX range peer:NAME
    python3 peers.py --pairs gemm_cluster,rmsnorm   only those pairs (default: rmsnorm,attention)

Exits 1 if a pair's outputs disagree, 3 if a library is missing. Needs a CUDA GPU, quack and
flash_attn.cute (the GPU kit).
"""
import sys

import torch
import torch.nn.functional as F

RMS_ROWS, RMS_COLS, EPS = 16384, 8192, 1e-6
ATT_B, ATT_H, ATT_S, ATT_D = 4, 16, 4096, 128
GEMM_MNK = 2048


def rmsnorm_pair():
    from quack.rmsnorm import rmsnorm

    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(RMS_ROWS, RMS_COLS, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(RMS_COLS, device="cuda", dtype=torch.bfloat16, generator=gen)
    return ("rmsnorm_torch", lambda: F.rms_norm(x, (RMS_COLS,), w, EPS)), ("rmsnorm_quack", lambda: rmsnorm(x, w, eps=EPS))


def attention_pair():
    from flash_attn.cute import flash_attn_func
    from torch.nn.attention import SDPBackend, sdpa_kernel

    gen = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(ATT_B, ATT_S, ATT_H, ATT_D, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return out.transpose(1, 2)

    def fa4():
        out = flash_attn_func(q, k, v)
        return out[0] if isinstance(out, tuple) else out
    return ("attention_cudnn", cudnn), ("attention_fa4", fa4)


def gemm_cluster_pair():
    """The persistent TMA+WGMMA GEMM at 2048^3 (128 tiles of 128x256) with 2x2 clusters against its
    default 2x1: only 30 clusters of 4 fit at once on an H100 (120 CTAs for 128 tiles, so 8 CTAs run a
    second tile), 66 of 2 do (132 CTAs)."""
    from kernelscope.kernels import gemm

    gen = torch.Generator(device="cuda").manual_seed(2)
    a = torch.randn(GEMM_MNK, GEMM_MNK, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(GEMM_MNK, GEMM_MNK, device="cuda", dtype=torch.bfloat16, generator=gen)

    def bound(cluster):
        out = torch.empty(GEMM_MNK, GEMM_MNK, device="cuda", dtype=torch.bfloat16)
        cfg = gemm.GemmConfig.from_mapping({"tile_m": 128, "tile_n": 256, "cluster": cluster})
        launch = gemm.bind_gemm(cfg, {"a": a, "b": b, "out": out})

        def run():
            launch()
            return out
        return run
    return ("gemm_cluster_2x2", bound([2, 2])), ("gemm_cluster_2x1", bound([2, 1]))


PAIRS = {"rmsnorm": rmsnorm_pair, "attention": attention_pair, "gemm_cluster": gemm_cluster_pair}


def median_us(fn, reps=20):
    times = []
    for _ in range(reps + 3):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000)
    return sorted(times[3:])[reps // 2]


def main():
    args = sys.argv[1:]
    profile = "--profile" in args
    names = ["rmsnorm", "attention"]
    if "--pairs" in args:
        at = args.index("--pairs") + 1
        if at >= len(args):
            print(f"peers.py: --pairs needs a list of pairs ({', '.join(PAIRS)})", file=sys.stderr)
            return 2
        names = args[at].split(",")
    unknown = [n for n in names if n not in PAIRS]
    if unknown:
        print(f"peers.py: unknown pair(s) {', '.join(unknown)} (known: {', '.join(PAIRS)})", file=sys.stderr)
        return 2
    try:
        pairs = [PAIRS[name]() for name in names]
    except ImportError as e:
        print(f"peers.py: {e}", file=sys.stderr)
        return 3
    print(torch.cuda.get_device_name())
    failed = 0
    for (slow_name, slow), (fast_name, fast) in pairs:
        a, b = slow().float(), fast().float()  # also the warm-up (and FA4's compile)
        torch.cuda.synchronize()
        err = (a - b).abs().max().item()
        scale = b.abs().max().item()
        ok = err <= 0.02 * max(scale, 1.0)
        failed += not ok
        line = f"{slow_name} vs {fast_name}: {'ok  ' if ok else 'FAIL'} max |diff| {err:.3g} (max |out| {scale:.3g})"
        if profile:
            torch.cuda.profiler.start()
            for name, fn in ((slow_name, slow), (fast_name, fast)):
                with torch.cuda.nvtx.range(f"peer:{name}"):
                    fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        else:
            ts, tf = median_us(slow), median_us(fast)
            line += f"  {slow_name} {ts:.1f} us  {fast_name} {tf:.1f} us  gap {ts / tf:.2f}x"
        print(line, flush=True)
    if failed:
        print(f"{failed} pair(s) disagree", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
