"""Run flash_attn's three-math-warpgroup variant without ping-pong, O staged in Q's buffer
(the variant whose test failed once on an H100, tests/test_flash_attn_stress_gpu.py), a few
launches at small shapes, for compute-sanitizer to watch:

    compute-sanitizer --tool racecheck --racecheck-report all python3 benchmarks/sanitize_flash_attn.py
    compute-sanitizer --tool synccheck python3 benchmarks/sanitize_flash_attn.py
    compute-sanitizer --tool memcheck python3 benchmarks/sanitize_flash_attn.py

Exits 1 when an output is wrong; the sanitizer's own summary says whether it found hazards.
"""

import os
import sys

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def main() -> int:
    import torch

    from kernelscope.kernels import flash_attn as fa

    if not torch.cuda.is_available():
        print("sanitize_flash_attn: needs a CUDA GPU", file=sys.stderr)
        return 3
    variant = fa.FlashAttnConfig(qk_mn=(192, 128), pingpong=False, o_reuses_q=True)
    bad = 0
    # The failing test's shape (one tile per CTA), then more tiles than CTAs on a small grid.
    for B, H, S in [(2, 3, 1111), (1, 1, 1), (1, 2, 700)]:
        inputs = fa.make_inputs({"B": B, "H": H, "S": S, "D": 64, "causal": 0}, "bfloat16", seed=S)
        fa.bind_flash_attn(variant, inputs)()
        torch.cuda.synchronize()
        got = inputs["out"].float()
        ref = fa.reference_fp32(inputs)
        err = (got - ref).abs().max().item()
        err_torch = (fa.torch_reference(inputs).float() - ref).abs().max().item()
        ok = bool(torch.isfinite(got).all()) and err <= 2 * err_torch
        bad += not ok
        print(f"B={B} H={H} S={S}: max error {err:.3g} (torch {err_torch:.3g}) {'ok' if ok else 'WRONG'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
