"""Host time per launch of the gemm kernel's launcher, per config, with the arguments marshalled
once (kernels/cute_build.launcher) and converted on every call (the compiled function called
directly): what one launch costs the CPU, measured with time.perf_counter over many calls of a
small problem, the queue drained every 64 calls so launches never block on a full queue.

Why it matters: the benchmarks time launch by launch with CUDA events, the L2 flushed between;
when a launch costs the CPU more than the flush and the previous kernel take on the GPU, the
GPU waits for it inside the timed events, and a small kernel's time includes host overhead.

    python3 benchmarks/launch_overhead.py --configs '[{}, {"tail_split": true}]' --out $OUT/x.json
The first config also warms the process: list a throwaway config first for steady numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default='[{}]', help="JSON list of gemm configs")
    ap.add_argument("--shape", default="256x256x256", help="MxNxK of the launched problem")
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)

    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    import torch
    from kernelscope.kernels import gemm

    if not torch.cuda.is_available():
        print("launch_overhead: needs a CUDA GPU", file=sys.stderr)
        return 3
    M, N, K = (int(x) for x in args.shape.split("x"))
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    rows = []
    for fields in json.loads(args.configs):
        for mode, per_call in (("arguments marshalled once", "0"), ("arguments converted per call", "1")):
            os.environ["KERNELSCOPE_PER_CALL_ARGS"] = per_call     # read when the launcher is bound
            cfg = gemm.GemmConfig.from_mapping(fields)
            launch = gemm.bind_gemm(cfg, {"a": a, "b": b, "out": out})
            for _ in range(50):
                launch()
            torch.cuda.synchronize()
            per_batch = []
            for _ in range(0, args.calls, 64):
                t0 = time.perf_counter()
                for _ in range(64):
                    launch()
                per_batch.append((time.perf_counter() - t0) / 64 * 1e6)
                torch.cuda.synchronize()
            row = {"config": fields, "mode": mode, "host_us_per_launch_median": statistics.median(per_batch),
                   "host_us_per_launch_min": min(per_batch), "batches": len(per_batch)}
            rows.append(row)
            print(f"{json.dumps(fields):45s} {mode:30s} host {row['host_us_per_launch_median']:7.1f} us/launch "
                  f"(min {row['host_us_per_launch_min']:.1f})")
    os.environ.pop("KERNELSCOPE_PER_CALL_ARGS", None)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"benchmark": "launch_overhead", "device": torch.cuda.get_device_name(),
                       "shape": args.shape, "command": " ".join(["python3"] + sys.argv), "rows": rows},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
