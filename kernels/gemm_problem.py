"""The GEMM problem C[M, N] = A[M, K] @ B[K, N] that the `gemm` and `gemm_mma` kernels solve:
the shape suite, the inputs, the references and the work it takes (FLOPs, bytes).

Also the parts of a kernel's shape and config checks that every GEMM-shaped kernel spells the
same way (gemm_rmsnorm included): integer, positive M, N, K; the depth of the A/B ring that
shared memory holds.
"""

from kernelscope.kernels.sm90.device import SMEM_RESERVED_BYTES
from kernelscope.kernels.spec import ConfigRejected

# Raster orders by their config names -> the tile scheduler's walk (kernels/sm90/tile_scheduler.py):
# "row" walks along N first (consecutive work items share A's row panel), "column" along M (they
# share B's column panel), "morton" a Z-order inside `group` x `group` blocks. `group` is the
# panel width (row, column) or the block side (morton), in (cluster) tiles.
RASTERS = {"row": "n", "column": "m", "morton": "morton"}
# Raster orders measured on the device for the WGMMA kernels (gemm, gemm_rmsnorm).
WGMMA_RASTERS = ("column", "row")
# The names gemm and gemm_rmsnorm used before: raster "m" / "n" and the group size as `swizzle`.
EARLIER_RASTER_NAMES = {"m": "column", "n": "row"}
EARLIER_GROUP_KEY = {"swizzle": "group"}

SUITE = [
    {"M": 2048, "N": 2048, "K": 2048},
    {"M": 4096, "N": 4096, "K": 4096},
    {"M": 8192, "N": 8192, "K": 8192},
    {"M": 8192, "N": 4096, "K": 4096},
    {"M": 8192, "N": 11008, "K": 4096},
    {"M": 8192, "N": 4096, "K": 11008},
    {"M": 8192, "N": 14336, "K": 4096},
    {"M": 8192, "N": 4096, "K": 14336},
    {"M": 128, "N": 4096, "K": 4096},
    {"M": 512, "N": 4096, "K": 4096},
]


def make_inputs(shape, dtype: str = "bfloat16", seed: int = 0, device: str = "cuda"):
    import torch
    M, N, K = int(shape["M"]), int(shape["N"]), int(shape["K"])
    g = torch.Generator(device="cpu").manual_seed(seed)
    tdt = getattr(torch, dtype)
    a = torch.randn((M, K), generator=g, dtype=torch.float32).to(tdt).to(device)
    b = torch.randn((K, N), generator=g, dtype=torch.float32).to(tdt).to(device)
    # NaN-poisoned output: an element the kernel never writes shows up as an error.
    out = torch.full((M, N), float("nan"), dtype=tdt, device=device)
    return {"a": a, "b": b, "out": out}


def reference_fp32(inputs):
    return inputs["a"].float() @ inputs["b"].float()


def torch_reference(inputs):
    return inputs["a"] @ inputs["b"]


def flops(shape) -> float:
    return 2.0 * shape["M"] * shape["N"] * shape["K"]


def bytes_moved(shape, out_dtype: str) -> float:
    """A and B read once (16-bit), C written once in `out_dtype`."""
    out_bytes = 4 if out_dtype == "float32" else 2
    return 2.0 * (shape["M"] * shape["K"] + shape["K"] * shape["N"]) + out_bytes * shape["M"] * shape["N"]


def problem_dims(shape, kernel: str) -> tuple[int, int, int]:
    """(M, N, K) of a shape mapping; ConfigRejected, naming the kernel, unless all are positive
    integers."""
    try:
        M, N, K = int(shape["M"]), int(shape["N"]), int(shape["K"])
    except (KeyError, TypeError, ValueError):
        raise ConfigRejected(f"{kernel} shape needs integer M, N, K, got {dict(shape)}") from None
    if min(M, N, K) < 1:
        raise ConfigRejected(f"{kernel} shape must be positive, got M={M} N={N} K={K}")
    return M, N, K


def ring_depth(tile_mnk: tuple[int, int, int], requested: int | None, most: int, other_bytes: int,
               capacity: int, target: str = "") -> int:
    """Stages of a ring of 16-bit A and B tiles: `requested`, or (None) as many as fit in
    `capacity` bytes of shared memory beside `other_bytes` (epilogue buffers) and the reserved
    bytes, at most `most`. ConfigRejected, naming the `target` architecture when given, unless
    at least two fit."""
    m, n, k = tile_mnk
    stage_bytes = (m + n) * k * 2
    fit = (capacity - SMEM_RESERVED_BYTES - other_bytes) // stage_bytes
    limit = f"{capacity} bytes of shared memory" + (f" on {target}" if target else "")
    if requested is None:
        if fit < 2:
            raise ConfigRejected(f"tile {m}x{n}x{k} leaves room for {fit} stage(s) in {limit}; "
                                 "at least 2 are needed")
        return min(fit, most)
    if requested < 2:
        raise ConfigRejected(f"stages must be at least 2, got {requested}")
    if requested > fit:
        need = requested * stage_bytes + other_bytes + SMEM_RESERVED_BYTES
        raise ConfigRejected(f"{requested} stages of {m}x{n}x{k} need {need} bytes of shared memory, "
                             f"the limit is {limit} (at most {fit} stages fit)")
    return requested
