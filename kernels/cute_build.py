"""Building and launching the shipped CuTe DSL kernels: dtype names, compile options with kept
artifacts, fake operands for GPU-less compiles, torch tensors and streams for launches, the
artifacts read back from a compiled kernel, cluster residency, and launchers with their
arguments marshalled once.

cutlass and torch are imported inside the functions: a kernel module stays importable where the
DSL or a GPU is missing.
"""

import functools
import os
import tempfile

from kernelscope.kernels.sm90.device import H100_SMS


def cutlass_dtype(name: str):
    import cutlass
    return {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16, "float32": cutlass.Float32}[name]


def dtype_name(torch_dtype) -> str:
    """"bfloat16" for torch.bfloat16."""
    return str(torch_dtype).replace("torch.", "")


def artifact_options(dump_prefix: str, arch: str | None = None) -> str:
    """cute.compile options that keep the cubin and the PTX, in a fresh scratch folder (never the
    working directory); with `arch`, the target architecture too."""
    options = f"--keep-cubin --keep-ptx --dump-dir={tempfile.mkdtemp(prefix=dump_prefix)}"
    if arch:
        options += f" --gpu-arch {arch}"
    return options


def fake_gemm_operands(dtype: str, out_dtype: str, a_major: str = "k", b_major: str = "n",
                       n_divisibility: int = 8):
    """Fake A (M, K), B seen as (N, K) and C (M, N) with dynamic extents, for compiling without a
    GPU. A K-major is row-major (M x K), M-major column-major; B "n" is a K x N row-major matrix
    (N contiguous in the (N, K) view), "k" an N x K one. K is declared a multiple of 8, M of
    nothing, N of `n_divisibility`."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor

    ab = cutlass_dtype(dtype)
    m = cute.sym_int32(divisibility=1)
    n = cute.sym_int32(divisibility=n_divisibility)
    k = cute.sym_int32(divisibility=8)
    if a_major == "k":
        fa = make_fake_compact_tensor(ab, (m, k), stride_order=(1, 0), assumed_align=16)
    else:
        # M contiguous: M is then a TMA row, 16-byte aligned.
        m8 = cute.sym_int32(divisibility=8)
        fa = make_fake_compact_tensor(ab, (m8, k), stride_order=(0, 1), assumed_align=16)
    b_order = (0, 1) if b_major == "n" else (1, 0)
    fb = make_fake_compact_tensor(ab, (n, k), stride_order=b_order, assumed_align=16)
    fc = make_fake_compact_tensor(cutlass_dtype(out_dtype), (m, n), stride_order=(1, 0), assumed_align=16)
    return fa, fb, fc


def fake_workspace():
    """Fake fp32 and int32 vectors (a split's partial results and its counters) for compiling
    without a GPU."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor
    return (make_fake_compact_tensor(cutlass.Float32, (cute.sym_int32(),), assumed_align=16),
            make_fake_compact_tensor(cutlass.Int32, (cute.sym_int32(),), assumed_align=16))


def fake_stream():
    from cutlass.cute.runtime import make_fake_stream
    return make_fake_stream()


def current_stream():
    import cuda.bindings.driver as cuda
    import torch
    return cuda.CUstream(torch.cuda.current_stream().cuda_stream)


def launcher(compiled, args):
    """A zero-argument launch of `compiled` with fixed `args`, the arguments marshalled once.

    Calling a compiled DSL function validates and converts every argument on each call: 25 to
    50 us of host time per launch on the H100 host (benchmarks/launch_overhead.py), as long as a
    small kernel itself, so a small kernel's launches could not keep the GPU busy and its timed
    launches included the GPU waiting for the host. The DSL's executor runs the packed arguments
    directly; the objects they point into are kept alive with the launcher.
    KERNELSCOPE_PER_CALL_ARGS=1 keeps the per-call conversion (for comparison)."""
    fn = getattr(compiled, "_fn", compiled)        # a launch-cache entry wraps the loaded function
    generate = getattr(fn, "generate_execution_args", None)
    executor_of = getattr(fn, "to", None)
    if generate is None or executor_of is None or os.environ.get("KERNELSCOPE_PER_CALL_ARGS", "") not in ("", "0"):
        def launch():
            return compiled(*args)
        return launch
    exe_args, adapted = generate(*args)
    run = executor_of(None).run_compiled_program

    def launch():
        return run(exe_args)
    launch.keep_alive = (args, adapted, fn)
    return launch


def to_cute(t, leading_dim: int | None = None, divisibility: tuple[int, ...] | None = None):
    """A torch tensor as a cute tensor with dynamic extents and its contiguous dimension kept:
    `leading_dim`, or for a 2-D tensor the one of stride 1. `divisibility` declares what the
    caller has checked each extent to be a multiple of, so the compile may vectorize on it (the
    fake operands of the inspected variant must declare the same)."""
    from cutlass.cute.runtime import from_dlpack
    if leading_dim is None:
        leading_dim = 1 if t.stride(1) == 1 else 0
    tensor = from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=leading_dim)
    for mode, multiple in enumerate(divisibility or ()):
        if multiple > 1:
            tensor = tensor.mark_compact_shape_dynamic(mode, stride_order=t.dim_order(), divisibility=multiple)
    return tensor


def gpu_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def artifacts(compiled) -> tuple[bytes | None, str | None]:
    """(cubin, PTX) kept by a compile (artifact_options)."""
    cubin = getattr(compiled, "__cubin__", None)
    ptx = getattr(compiled, "__ptx__", None)
    if isinstance(cubin, str):
        cubin = cubin.encode("latin-1")
    if isinstance(ptx, bytes):
        ptx = ptx.decode(errors="replace")
    return cubin, ptx


@functools.lru_cache(maxsize=None)
def max_active_clusters(cluster: tuple[int, int]) -> int:
    """Clusters resident at once with one CTA per SM (asks the driver when a GPU is present).
    The DSL's answer compiles a probe kernel each time it is asked, so it is kept per process
    and on disk per device (UUID) and driver."""
    size = cluster[0] * cluster[1]
    try:
        import torch
        if torch.cuda.is_available():
            return _device_max_active_clusters(size)
    except Exception:  # noqa: BLE001 - fall back to the SM count below
        pass
    return H100_SMS // size


def _device_max_active_clusters(size: int) -> int:
    import json

    import cuda.bindings.driver as driver
    import torch

    from kernelscope.toolchain.disk_cache import cache_root, write_json_atomically

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    err, version = driver.cuDriverGetVersion()
    path = cache_root() / "device-facts" / f"max-active-clusters-{props.uuid}-{version if not int(err) else 'x'}.json"
    known: dict = {}
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    if str(size) in known:
        return int(known[str(size)])
    import cutlass.utils as utils
    value = int(utils.HardwareInfo().get_max_active_clusters(size))
    write_json_atomically(path, {**known, str(size): value})
    return value


def compiled_kernel(build, bind=None):
    """The CompiledKernel of a kernel whose inspected variant `build()` compiles (a cute.compile
    result, from fake operands): its artifacts are built on first use (CompiledKernel), and
    where it can run here, bind(inputs) -> zero-argument launcher and launch(inputs), which
    binds, runs and returns inputs["out"]. bind=None: inspection only."""
    from kernelscope.kernels.spec import CompiledKernel

    def launch(inputs):
        bind(inputs)()
        return inputs["out"]

    return CompiledKernel(launch=launch if bind is not None else None, bind=bind,
                          artifacts=lambda: artifacts(build()))
