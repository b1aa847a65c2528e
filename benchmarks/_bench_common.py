"""What the GEMM benchmark scripts share: the --shapes list, random operands, interleaved timing
passes, the geomean over shapes, and the JSON result file with the run's environment and command.

The scripts run as `python benchmarks/<script>.py`, so this module is imported by its plain name
(the script's folder is first on sys.path).
"""

import json
import math
import os
import platform
import sys


def parse_shapes(text: str | None, suite) -> list[dict[str, int]]:
    """'4096x4096x4096,8192x8192x8192' (MxNxK) as shape dicts; the whole suite when empty."""
    if not text:
        return [dict(s) for s in suite]
    out = []
    for item in text.split(","):
        m, n, k = (int(x) for x in item.lower().split("x"))
        out.append({"M": m, "N": n, "K": k})
    return out


def gemm_operands(torch, shape, tdt):
    """A (M, K) and B (K, N) row-major on the GPU, seeded by the shape, and a NaN-filled C."""
    M, N, K = shape["M"], shape["N"], shape["K"]
    g = torch.Generator(device="cpu").manual_seed(M * 31 + N * 7 + K)
    a = torch.randn((M, K), generator=g).to(tdt).cuda()
    b = torch.randn((K, N), generator=g).to(tdt).cuda()
    out = torch.full((M, N), float("nan"), dtype=tdt, device="cuda")
    return a, b, out


def interleaved_passes(launchers, passes: int, rep_ms: float):
    """`passes` rounds, each timing every launcher once in order (L2 flushed before each launch):
    one list of Timings per round. Interleaving shows the drift between rounds."""
    from kernelscope.profiler.timing import time_callable

    return [[time_callable(f, rep_ms=rep_ms, flush_l2=True) for f in launchers] for _ in range(passes)]


def launch_and_check(torch, run, out, ref32) -> tuple[float, bool]:
    """One launch into `out` refilled with NaN: (relative Frobenius error against ref32, every
    element written)."""
    out.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    rel = ((out.float() - ref32).norm() / ref32.norm()).item()
    finite = bool(torch.isfinite(out).all().item())
    return rel, finite


def mean_of_medians(passes) -> list[float]:
    """Per launcher, the mean over the passes of its median time (ms)."""
    return [sum(p[j].median_ms for p in passes) / len(passes) for j in range(len(passes[0]))]


def versus_cublas(flops: float, ms: float, ms_ref: float) -> dict:
    """The result row's timing columns: ours and cuBLAS in ms and TFLOP/s, and cuBLAS time / ours."""
    from kernelscope.profiler.timing import tflops

    return {"ms": ms, "tflops": tflops(flops, ms),
            "cublas_ms": ms_ref, "cublas_tflops": tflops(flops, ms_ref),
            "ratio_vs_cublas": ms_ref / ms}


def best_ratio_geomean(rows) -> tuple[float, int]:
    """Per shape the row with the highest ratio_vs_cublas; (geomean of those ratios, shapes)."""
    best = {}
    for r in rows:
        key = (r["shape"]["M"], r["shape"]["N"], r["shape"]["K"])
        if key not in best or r["ratio_vs_cublas"] > best[key]["ratio_vs_cublas"]:
            best[key] = r
    geo = math.exp(sum(math.log(r["ratio_vs_cublas"]) for r in best.values()) / len(best))
    return geo, len(best)


def environment(dev, torch) -> dict:
    """The device and software a result was measured with."""
    import cutlass
    return {"device": dev.name, "sm_count": dev.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cutlass_dsl": getattr(cutlass, "__version__", None), "python": platform.python_version()}


def command_line(script: str, argv, python: str = "python3") -> str:
    """The command that reproduces this run, as the result file records it."""
    return " ".join([python, script] + list(argv or sys.argv[1:]))


def write_json(path: str, result: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
