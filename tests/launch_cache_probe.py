"""Run in a fresh process by the launch-cache tests: compile (or load) one variant and print,
as one JSON line, what the launch cache did and what came out.

    python tests/launch_cache_probe.py fake-rmsnorm      # CPU: a fake-operand compile, artifacts only
    python tests/launch_cache_probe.py gpu KERNEL        # GPU: the kernel's launched variant, run and checked
"""

import json
import os
import sys

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def fake_rmsnorm() -> dict:
    import cutlass
    import cutlass.cute as cute

    from kernelscope.kernels import cute_build, launch_cache
    from kernelscope.kernels.rmsnorm.kernel import RMSNormRows

    n = 4096

    def build():
        m = cute.sym_int()
        x = cute.runtime.make_fake_compact_tensor(cutlass.BFloat16, (m, n), stride_order=(1, 0), assumed_align=16)
        y = cute.runtime.make_fake_compact_tensor(cutlass.BFloat16, (m, n), stride_order=(1, 0), assumed_align=16)
        w = cute.runtime.make_fake_compact_tensor(cutlass.BFloat16, (n,), assumed_align=16)
        return cute.compile(RMSNormRows(n, 256, 8), x, w, y, cutlass.Float32(1e-6), cute.runtime.make_fake_stream(),
                            options=cute_build.artifact_options("kernelscope-test-"))

    compiled = launch_cache.reusable("rmsnorm-test", (n, 256, 8), build)
    cubin, ptx = cute_build.artifacts(compiled)
    import hashlib
    return {"stats": launch_cache.stats, "loaded_type": type(compiled).__name__,
            "cubin_sha256": hashlib.sha256(cubin or b"").hexdigest(), "ptx_chars": len(ptx or "")}


def gpu(kernel: str) -> dict:
    import torch

    from kernelscope.kernels import launch_cache, registry
    from kernelscope.profiler.measure import check_output

    spec = registry.resolve(kernel)
    shape = {"gemm": {"M": 512, "N": 512, "K": 512}, "gemm_mma": {"M": 512, "N": 512, "K": 512},
             "gemm_rmsnorm": {"M": 512, "N": 512, "K": 512},
             "flash_attn": {"B": 1, "H": 2, "S": 512, "D": 128, "causal": 0}}[kernel]
    inputs = spec.make_inputs(shape, "bfloat16", 0, "cuda")
    compiled = spec.compile(spec.config_for(shape, "bfloat16"), shape, "bfloat16", "sm_90a")
    out = compiled.launch(inputs)
    torch.cuda.synchronize()
    report = check_output(spec, out, inputs, "bfloat16")
    return {"stats": launch_cache.stats, "correct": bool(report.ok), "max_abs_error": float(report.max_abs_error)}


if __name__ == "__main__":
    result = fake_rmsnorm() if sys.argv[1] == "fake-rmsnorm" else gpu(sys.argv[2])
    print(json.dumps(result))
