"""A kernel defined outside the kernelscope package: y[i, j] = x[i, j] * s[j].

Used as `kernelscope run tests/examples/my_scale.py:SPEC` (and `profile`, `sweep`):
the file only needs to define a KernelSpec. Each thread scales `vec` contiguous
elements with one 16-byte load of x, one of s and one store.
"""

import os
import tempfile

from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec


def _compile(config, shape, dtype, arch="sm_90a"):
    os.environ.setdefault("CUTE_DSL_ARCH", arch)
    import cutlass
    import cutlass.cute as cute
    import torch

    threads, vec = int(config["threads"]), int(config["vec"])
    m, n = int(shape["M"]), int(shape["N"])
    if n % vec or (m * n // vec) % threads:
        raise ConfigRejected(f"my_scale: M*N/vec must be a multiple of threads={threads} and N of vec={vec}")
    cdtype = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}.get(dtype)
    if cdtype is None:
        raise ConfigRejected(f"my_scale supports bfloat16 and float16, not {dtype}")

    @cute.kernel
    def scale_kernel(gX: cute.Tensor, gS: cute.Tensor, gY: cute.Tensor, chunks_per_row: cutlass.Constexpr):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        chunk = bidx * threads + tidx
        col_chunk = chunk % chunks_per_row
        x = gX[(None, chunk)].load().to(cutlass.Float32)
        s = gS[(None, col_chunk)].load().to(cutlass.Float32)
        gY[(None, chunk)].store((x * s).to(gY.element_type))

    @cute.jit
    def scale(mX: cute.Tensor, mS: cute.Tensor, mY: cute.Tensor, stream):
        # Flat views in 16-byte chunks: ((vec), (M*N/vec)).
        gX = cute.zipped_divide(cute.make_tensor(mX.iterator, cute.make_layout(m * n)), (vec,))
        gY = cute.zipped_divide(cute.make_tensor(mY.iterator, cute.make_layout(m * n)), (vec,))
        gS = cute.zipped_divide(mS, (vec,))
        scale_kernel(gX, gS, gY, n // vec).launch(grid=[m * n // vec // threads, 1, 1],
                                                  block=[threads, 1, 1], stream=stream)

    x = cute.runtime.make_fake_compact_tensor(cdtype, (m, n), stride_order=(1, 0), assumed_align=16)
    y = cute.runtime.make_fake_compact_tensor(cdtype, (m, n), stride_order=(1, 0), assumed_align=16)
    s = cute.runtime.make_fake_compact_tensor(cdtype, (n,), assumed_align=16)
    gpu = torch.cuda.is_available()
    with tempfile.TemporaryDirectory() as dump:   # the DSL writes kept artifacts to a folder
        compiled = cute.compile(scale, x, s, y, cute.runtime.make_fake_stream(),
                                options=f"--keep-cubin --dump-dir={dump}")
        cubin = getattr(compiled, "__cubin__", None)

    bind = launch = None
    if gpu:
        def bind(inputs):
            from cuda.bindings import driver as cuda
            from cutlass.cute.runtime import from_dlpack

            args = [from_dlpack(inputs[k], assumed_align=16) for k in ("x", "s", "out")]
            stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
            return lambda: compiled(*args, stream)

        def launch(inputs):
            bind(inputs)()
            return inputs["out"]
    return CompiledKernel(launch=launch, bind=bind, cubin=cubin if isinstance(cubin, bytes) else None)


def _inputs(shape, dtype, seed, device):
    import torch

    g = torch.Generator().manual_seed(seed)
    tdtype = getattr(torch, dtype)
    m, n = shape["M"], shape["N"]
    return {
        "x": torch.randn(m, n, generator=g).to(device=device, dtype=tdtype),
        "s": torch.randn(n, generator=g).to(device=device, dtype=tdtype),
        "out": torch.full((m, n), float("nan"), dtype=tdtype, device=device),
    }


SPEC = KernelSpec(
    name="my_scale",
    description="per-column scale, y = x * s (a user kernel outside the package)",
    references=["torch"],
    default_shapes=[{"M": 8192, "N": 8192}],
    default_config={"threads": 256, "vec": 8},
    dtypes=["bfloat16", "float16"],
    make_inputs=_inputs,
    compile=_compile,
    reference_fp32=lambda inp: inp["x"].float() * inp["s"].float(),
    flops=lambda shape: float(shape["M"] * shape["N"]),
    bytes_moved=lambda shape, dtype: 2.0 * (2 * shape["M"] * shape["N"] + shape["N"]),
    tolerance={"bfloat16": (1e-2, 1e-2), "float16": (2e-3, 2e-3)},
    config_space={"threads": [128, 256, 512], "vec": [4, 8]},
    torch_reference=lambda inp: inp["x"] * inp["s"],
)
