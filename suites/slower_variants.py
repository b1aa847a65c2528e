"""Deliberately slower variants of shipped kernels, to check that the gate catches them.

`rmsnorm_with_extra_traffic` is the rmsnorm target plus a device copy of `extra_mib`
MiB after every launch, inside the timed launcher. With extra_mib = 0 it is rmsnorm
itself (the same binary, so the same static facts); with more it is slower by about the
time that copy takes. A suite case keeps its name and swaps its target for this one:

    target = "suites/slower_variants.py:rmsnorm_with_extra_traffic"
    config = {extra_mib = 16}
"""

from __future__ import annotations

import dataclasses

from kernelscope.kernels.rmsnorm import SPEC as RMSNORM
from kernelscope.kernels.spec import CompiledKernel


def _compile_with_extra_traffic(config, shape, dtype, arch):
    config = dict(config)
    extra_mib = int(config.pop("extra_mib", 0))
    compiled = RMSNORM.compile(config, shape, dtype, arch)
    if extra_mib <= 0:
        return compiled

    def bind(inputs):
        import torch

        run = compiled.bound(inputs)
        src = torch.zeros(extra_mib << 20, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)

        def slower():
            result = run()
            dst.copy_(src)
            return result

        return slower

    return dataclasses.replace(compiled, bind=bind,
                               launch=lambda inputs: (bind(inputs)(), inputs["out"])[1])


def rmsnorm_with_extra_traffic():
    return dataclasses.replace(
        RMSNORM,
        name="rmsnorm_with_extra_traffic",
        description="rmsnorm followed by a device copy of extra_mib MiB (a deliberately slower variant)",
        default_config={**RMSNORM.default_config, "extra_mib": 0},
        config_space={**RMSNORM.config_space, "extra_mib": [0, 4, 16, 64]},
        compile=_compile_with_extra_traffic,
    )
