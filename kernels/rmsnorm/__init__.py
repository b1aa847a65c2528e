"""RMSNorm over rows in CuTe DSL: y = x * rsqrt(mean(x^2) + eps) * w.

bf16/fp16 in and out, fp32 math. One thread block per row: each thread loads its
slices of the row with 16-byte vector loads into registers (the row is read from
device memory once), squares and sums them in fp32, the block reduces by warp shuffles
and one shared-memory exchange, then each thread scales its registers and stores.

Config: `threads` (block size) and `vec` (elements per vector access). The row length
N is a compile-time constant, so a row must split evenly into threads * vec chunks and
fit in registers; other configs raise ConfigRejected.
"""

# No `from __future__ import annotations`: the DSL evaluates the kernel annotations at compile time.
import importlib.util
import os
import tempfile
from typing import Any

from kernelscope.kernels import cute_build
from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec

EPS = 1e-6
# fp32 values a thread may keep for its slice of the row before registers would spill.
MAX_VALUES_PER_THREAD = 64

_TORCH_DTYPES = ("bfloat16", "float16")


def check_config(config: dict[str, Any], shape: dict[str, int], dtype: str) -> tuple[int, int, int]:
    """Validate a config for a shape; returns (threads, vec, iters) or raises ConfigRejected."""
    unknown = set(config) - {"threads", "vec"}
    if unknown:
        raise ConfigRejected(f"rmsnorm: unknown config key(s) {', '.join(sorted(unknown))} (known: threads, vec)")
    if dtype not in _TORCH_DTYPES:
        raise ConfigRejected(f"rmsnorm supports bfloat16 and float16, not {dtype}")
    missing = {"M", "N"} - set(shape)
    if missing:
        raise ConfigRejected(f"rmsnorm needs shape keys M and N (missing {', '.join(sorted(missing))})")
    threads, vec, n = int(config["threads"]), int(config["vec"]), int(shape["N"])
    if threads % 32 or not 32 <= threads <= 1024:
        raise ConfigRejected(f"rmsnorm: threads={threads} must be a multiple of 32 in [32, 1024]")
    if vec not in (1, 2, 4, 8):
        raise ConfigRejected(f"rmsnorm: vec={vec} must be 1, 2, 4 or 8 (8 x 16-bit = one 16-byte access)")
    if n % (threads * vec):
        raise ConfigRejected(f"rmsnorm: N={n} is not a multiple of threads*vec={threads * vec}")
    iters = n // (threads * vec)
    if iters * vec > MAX_VALUES_PER_THREAD:
        raise ConfigRejected(
            f"rmsnorm: N={n} needs {iters * vec} fp32 values per thread at threads={threads} "
            f"(limit {MAX_VALUES_PER_THREAD}); use more threads")
    if shape["M"] < 1:
        raise ConfigRejected("rmsnorm: M must be positive")
    return threads, vec, iters


def compile_rmsnorm(config: dict[str, Any], shape: dict[str, int], dtype: str, arch: str = "sm_90a") -> CompiledKernel:
    """Compile for (N, dtype, config). M stays dynamic. Works without a GPU (launch=None)."""
    threads, vec, _ = check_config(config, shape, dtype)
    os.environ.setdefault("CUTE_DSL_ARCH", arch)
    import cutlass
    import cutlass.cute as cute

    from kernelscope.kernels.rmsnorm.kernel import RMSNormRows

    cdtype = cute_build.cutlass_dtype(dtype)
    n = int(shape["N"])
    on_gpu = cute_build.gpu_available()
    use_ffi = on_gpu and importlib.util.find_spec("tvm_ffi") is not None
    m_sym = cute.sym_int()
    align = 16
    x = cute.runtime.make_fake_compact_tensor(cdtype, (m_sym, n), stride_order=(1, 0), assumed_align=align)
    y = cute.runtime.make_fake_compact_tensor(cdtype, (m_sym, n), stride_order=(1, 0), assumed_align=align)
    w = cute.runtime.make_fake_compact_tensor(cdtype, (n,), assumed_align=align)
    stream = cute.runtime.make_fake_stream(use_tvm_ffi_env_stream=use_ffi)
    # The DSL keeps artifacts only by writing them to a dump folder (default: the current
    # directory); a temporary one keeps the user's folder clean.
    with tempfile.TemporaryDirectory(prefix="kernelscope-dsl-") as dump:
        options = f"--keep-cubin --keep-ptx --dump-dir={dump}" + (" --enable-tvm-ffi" if use_ffi else "")
        compiled = cute.compile(RMSNormRows(n, threads, vec), x, w, y, cutlass.Float32(EPS), stream,
                                options=options)
        cubin, ptx = cute_build.artifacts(compiled)

    launch = None
    bind = None
    if on_gpu:
        if use_ffi:
            def launch(inputs):
                compiled(inputs["x"], inputs["w"], inputs["out"], EPS)
                return inputs["out"]

            def bind(inputs):
                xt, wt, ot = inputs["x"], inputs["w"], inputs["out"]
                return lambda: compiled(xt, wt, ot, EPS)
        else:
            def bind(inputs):
                # Conversions happen once here so that timed launches carry no host-side setup.
                import torch
                from cuda.bindings import driver as cuda
                from cutlass.cute.runtime import from_dlpack

                args = [from_dlpack(inputs[k], assumed_align=16) for k in ("x", "w", "out")]
                st = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
                return cute_build.launcher(compiled, [*args, cutlass.Float32(EPS), st])

            def launch(inputs):
                bind(inputs)()
                return inputs["out"]
    # The SASS listing is built when first read: a timed run never needs it.
    return CompiledKernel(launch=launch, bind=bind, artifacts=lambda: (cubin, ptx))


# --- inputs, reference, costs -------------------------------------------------------------

def make_inputs(shape, dtype: str, seed: int, device: str):
    import torch

    m, n = int(shape["M"]), int(shape["N"])
    tdtype = getattr(torch, dtype)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(m, n, generator=gen, dtype=torch.float32).to(device=device, dtype=tdtype)
    # Weights near 1 but not equal, so a kernel that ignores or misindexes them is caught.
    w = (1.0 + 0.5 * torch.randn(n, generator=gen, dtype=torch.float32)).to(device=device, dtype=tdtype)
    # NaN-poisoned output: an element the kernel fails to write shows up as an error.
    out = torch.full((m, n), float("nan"), dtype=tdtype, device=device)
    return {"x": x, "w": w, "out": out}


def reference_fp32(inputs):
    import torch

    x = inputs["x"].float()
    w = inputs["w"].float()
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def torch_reference(inputs):
    import torch.nn.functional as F

    x = inputs["x"]
    return F.rms_norm(x, (x.shape[-1],), inputs["w"], EPS)


def flops(shape) -> float:
    # per element: square, add, scale by rstd, scale by w
    return 4.0 * shape["M"] * shape["N"]


def bytes_moved(shape, dtype: str) -> float:
    elem = 2  # bf16 / fp16
    return float(elem * (2 * shape["M"] * shape["N"] + shape["N"]))


SPEC = KernelSpec(
    name="rmsnorm",
    description="RMSNorm over rows (CuTe DSL): one block per row, 16-byte loads, fp32 math",
    references=["torch.rmsnorm", "quack.rmsnorm"],
    default_shapes=[{"M": 16384, "N": 4096}, {"M": 4096, "N": 8192}],
    default_config={"threads": 256, "vec": 8},
    dtypes=list(_TORCH_DTYPES),
    make_inputs=make_inputs,
    compile=compile_rmsnorm,
    reference_fp32=reference_fp32,
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance={"bfloat16": (2e-2, 2e-2), "float16": (4e-3, 4e-3)},
    config_space={"threads": [128, 256, 512, 1024], "vec": [2, 4, 8]},
    # 16-byte loads/stores, warp shuffle reduction, rsqrt, one block barrier.
    expected_sass=["LDG", "STG", "SHFL", "MUFU", "BAR"],
    output_dims=("row", "col"),
    torch_reference=torch_reference,
)
