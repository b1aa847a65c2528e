"""A tiny CuTe DSL kernel for compile-only inspection tests: y = reverse each block of x.

Each block stages `threads` elements in shared memory, waits at a block barrier and
writes them back reversed, so its SASS must hold STS, BAR and LDS. With
`scratch` > 0 each thread also keeps a `scratch`-element array written at an index
known only at run time; at scratch=256 the compiler places it in local memory
(a stack frame, STL/LDL).

Compile-only: there is no launcher; use `kernelscope inspect tests/examples/smem_reverse.py:SPEC`.
"""

import os

from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec


def _compile(config, shape, dtype, arch="sm_90a"):
    threads, scratch, n = int(config["threads"]), int(config["scratch"]), int(shape["N"])
    if threads % 32 or not 32 <= threads <= 1024:
        raise ConfigRejected(f"smem_reverse: threads={threads} must be a multiple of 32 in [32, 1024]")
    if n % threads:
        raise ConfigRejected(f"smem_reverse: N={n} is not a multiple of threads={threads}")
    if dtype != "float32":
        raise ConfigRejected(f"smem_reverse supports float32, not {dtype}")
    os.environ.setdefault("CUTE_DSL_ARCH", arch)
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def reverse_kernel(gX: cute.Tensor, gY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        stage = smem.allocate_tensor(cutlass.Float32, cute.make_layout(threads), byte_alignment=16)
        i = bidx * threads + tidx
        value = gX[i]
        if cutlass.const_expr(scratch > 0):
            # Written and read at indices known only at run time: the array cannot live in registers.
            keep = cute.make_rmem_tensor((scratch,), cutlass.Float32)
            for j in cutlass.range_constexpr(scratch):
                keep[j] = value + cutlass.Float32(j)
            keep[(tidx * 7) % scratch] = value * value
            value = keep[(bidx + tidx) % scratch]
        stage[tidx] = value
        cute.arch.sync_threads()
        gY[i] = stage[threads - 1 - tidx]

    @cute.jit
    def reverse(mX: cute.Tensor, mY: cute.Tensor):
        reverse_kernel(mX, mY).launch(grid=[n // threads, 1, 1], block=[threads, 1, 1])

    x = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (n,), assumed_align=16)
    y = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (n,), assumed_align=16)
    compiled = cute.compile(reverse, x, y, options=f"--keep-cubin --gpu-arch {arch}")
    return CompiledKernel(launch=None, cubin=compiled.__cubin__)


def _make_inputs(shape, dtype, seed, device):
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(int(shape["N"]), generator=gen).to(device)
    return {"x": x, "out": torch.empty_like(x)}


def _reference(inputs, threads=128):
    x = inputs["x"].float()
    return x.view(-1, threads).flip(-1).reshape(-1)


SPEC = KernelSpec(
    name="smem_reverse",
    description="Reverse each block of a vector through shared memory (compile-only test kernel)",
    references=[],
    default_shapes=[{"N": 8192}],
    default_config={"threads": 128, "scratch": 0},
    dtypes=["float32"],
    make_inputs=_make_inputs,
    compile=_compile,
    reference_fp32=_reference,
    flops=lambda shape: 0.0,
    bytes_moved=lambda shape, dtype: 8.0 * shape["N"],
    config_space={"threads": [64, 128, 256], "scratch": [0, 256]},
    expected_sass=["STS", "BAR", "LDS"],
    archs=["sm_90a", "sm_120a"],
    output_dims=("col",),
)

# The same kernel declaring a Hopper opcode it does not contain: `inspect` must flag it.
SPEC_EXPECTING_HGMMA = KernelSpec(**{**SPEC.__dict__, "name": "smem_reverse_expecting_hgmma",
                                     "expected_sass": ["STS", "HGMMA"], "archs": ["sm_90a"]})
