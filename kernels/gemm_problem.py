"""The GEMM problem C[M, N] = A[M, K] @ B[K, N] that the `gemm` and `gemm_mma` kernels solve:
the shape suite, the inputs, the references and the work it takes (FLOPs, bytes).

Also the parts of a kernel's shape and config checks that every GEMM-shaped kernel spells the
same way (gemm_rmsnorm included): integer, positive M, N, K; the depth of the A/B ring that
shared memory holds.
"""

from kernelscope.kernels.config import KernelConfig
from kernelscope.kernels.sm90.device import SMEM_RESERVED_BYTES
from kernelscope.kernels.spec import ConfigRejected, KernelSpec

# Raster orders by their config names -> the tile scheduler's walk (kernels/sm90/tile_scheduler.py):
# "row" walks along N first (consecutive work items share A's row panel), "column" along M (they
# share B's column panel), "morton" a Z-order inside `group` x `group` blocks. `group` is the
# panel width (row, column) or the block side (morton), in (cluster) tiles.
RASTERS = {"row": "n", "column": "m", "morton": "morton"}
# Raster orders measured on the device for the WGMMA kernels (gemm, gemm_rmsnorm).
WGMMA_RASTERS = ("column", "row")

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
# What `run`/`profile` use without --shape (and the static gate without a case shape): the shape
# the notes report first, so a first number can be compared with them.
DEFAULT_SHAPE = {"M": 4096, "N": 4096, "K": 4096}


# Absolute and relative tolerance of the GEMMs (fp32 accumulation over K) against fp32.
TOLERANCE = {"bfloat16": (1e-2, 1e-2), "float16": (5e-3, 5e-3)}


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


def gemm_spec(**fields) -> KernelSpec:
    """The KernelSpec of a kernel that solves this problem: the shape suite (DEFAULT_SHAPE first),
    inputs, references, work and tolerance filled in; `fields` give the rest (name, config, compile, ...)."""
    shapes = [dict(DEFAULT_SHAPE)] + [dict(s) for s in SUITE if s != DEFAULT_SHAPE]
    return KernelSpec(**{
        "references": ["cublas"], "default_shapes": shapes, "make_inputs": make_inputs,
        "reference_fp32": reference_fp32, "torch_reference": torch_reference, "flops": flops,
        "bytes_moved": bytes_moved, "tolerance": TOLERANCE, **fields})


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


class PersistentGemmConfig(KernelConfig):
    """The config keys the warp-specialized WGMMA GEMMs (gemm, gemm_rmsnorm) share: `cluster`,
    `raster` and `group`. Their earlier names stay accepted: raster "m" / "n" and the group
    size as `swizzle`."""

    PAIRS = ("cluster",)
    KEY_ALIASES = {"swizzle": "group"}
    VALUE_ALIASES = {"raster": {"m": "column", "n": "row"}}

    def check_output_tile(self) -> None:
        """tile_n (one WGMMA's N, the accumulators of a consumer thread) and the epilogue
        subtile width epi_n; ConfigRejected unless both can be built."""
        if self.tile_n not in (64, 128, 192, 256):
            raise ConfigRejected(f"tile_n must be 64, 128, 192 or 256, got {self.tile_n}")
        if self.epi_n not in (16, 32, 64) or self.tile_n % self.epi_n:
            raise ConfigRejected(f"epi_n must be 16, 32 or 64 and divide tile_n={self.tile_n}, got {self.epi_n}")

    def schedule_policy(self):
        """The tile scheduler's policy; ConfigRejected when the raster order, group or cluster
        cannot be used."""
        from kernelscope.kernels.sm90.tile_scheduler import SchedulePolicy

        if self.raster not in WGMMA_RASTERS:
            raise ConfigRejected(f"raster must be one of {WGMMA_RASTERS}, got {self.raster!r}")
        policy = SchedulePolicy(tuple(self.cluster), RASTERS[self.raster], self.group)
        why = policy.validate()
        if why:
            raise ConfigRejected(why)
        return policy
