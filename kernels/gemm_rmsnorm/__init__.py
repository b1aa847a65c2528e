"""Fused RMSNorm -> GEMM for Hopper in CuTe DSL: Y = rmsnorm(X; g, eps) @ W in one kernel.

    Y[m, :] = rsqrt(mean_k X[m, k]^2 + eps) * (X[m, :] @ (diag(g) W))

X (M x K, row-major) and W (K x N, row-major, or N x K as an nn.Linear weight) are bf16 or fp16;
Y (M x N, row-major) has X's dtype; all arithmetic on the way is fp32.

The gain g is folded into W ahead of the call (`fold_gain`: W' = g[:, None] * W, once per weight,
as a weight is prepared for inference). Why not apply g to A in registers: that costs a load of g
and one multiply per A element in every k-tile of every output tile (N / tile_n times per row of
X), on the same consumer warps that feed the tensor cores, and a re-rounding of A to 16 bits;
folded, the per-call work is the GEMM plus one multiply per output element.

Structure (shares kernels/sm90/ with the `gemm` kernel: the ring and its producer, the
warp-specialized set-up, the tile scheduler, the epilogue; kernel.py holds the kernel class,
imported when a variant is compiled, so that this module does not import the DSL):
- CTA = 1 producer warpgroup + 2 consumer warpgroups; tile 128 x tile_n x 64. Warp 0 walks the
  persistent tile schedule and fills a ring of X and W' tiles with TMA (W' multicast along the
  cluster's M dimension, X along its N dimension).
- Each consumer warpgroup owns 64 rows. Per k-tile it copies its X slice from shared memory into
  registers with ldmatrix, in the register layout of WGMMA's A operand, and issues WGMMAs that
  take A from those registers and W' from shared memory. The same registers are squared and
  summed in fp32: in that layout a thread holds two rows (r and r + 8 of its warp's 16), and
  the four lanes of a quad together hold all 16 columns of a k-block, so after the main loop two
  butterfly shuffles (lane ^ 1, lane ^ 2) give every lane the full sum of squares of its two rows.
  A row never spans warps (each warp owns 16 rows of the tile and sees every k), so no
  cross-warp step is needed. X is read from memory once per output tile, exactly as by a GEMM.
- Two register buffers for A alternate between k-tiles, so the ldmatrix of tile k + 1 overlaps the
  WGMMAs of tile k (one WGMMA group in flight, as in `gemm`).
- Epilogue: rsqrt(sum / K + eps) in fp32 scales the accumulators of each row (the accumulator
  layout puts a thread's values in the same two rows as its A fragment; checked at trace time),
  then the shared TMA-store epilogue writes the tile.
- pingpong=True (off by default: 14% slower on H200, see the NOTES): each consumer warpgroup
  owns whole output tiles of 64 x tile_n (the CTA's tiles alternate between the two), so one
  warpgroup's epilogue (rsqrt scaling, stores) runs while the other issues its WGMMAs. Two
  named barriers hand the turn to issue the main loop back and forth (kernels/sm90/pingpong.py); the producer fills the
  one ring in tile order and each warpgroup skips the other's k-tiles in it. Each warpgroup
  has its own epilogue buffers and barrier, so the epilogues need no ordering. The row
  ownership inside a warpgroup is the same as above (64 rows, two per thread, quads), checked
  on the one-warpgroup MMA.
"""

# No `from __future__ import annotations`: the DSL evaluates kernel annotations at compile time.
import functools
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

from kernelscope.kernels import gemm_problem, launch_cache
from kernelscope.kernels.cute_build import (
    artifact_options, compiled_kernel, current_stream, dtype_name, fake_gemm_operands, fake_stream, gpu_available,
    launcher, max_active_clusters, to_cute)
from kernelscope.kernels.gemm_problem import PersistentGemmConfig, problem_dims, ring_depth
from kernelscope.kernels.sm90.device import SMEM_PER_BLOCK_BYTES
from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec

DTYPES = ("bfloat16", "float16")
W_MAJORS = ("n", "k")       # W as K x N row-major ("n") or as an N x K weight ("k")
TILE_M = 128                # two consumer warpgroups of 64 rows
PINGPONG_TILE_M = 64        # pingpong: one warpgroup's own tile
TILE_K = 64                 # one 128-byte swizzle row of 16-bit data
DEFAULT_EPS = 1e-6


@dataclass(frozen=True)
class GemmRmsNormConfig(PersistentGemmConfig):
    KERNEL = "gemm_rmsnorm"

    tile_n: int = 256
    stages: int | None = None           # None: as many as shared memory holds (at most 8)
    cluster: tuple[int, int] = (2, 1)   # CTAs per cluster along (M, N)
    raster: str = "column"              # "column" or "row" (kernels/gemm_problem.py, RASTERS)
    group: int = 8                      # raster panel width, in cluster tiles
    epi_n: int = 32                     # epilogue subtile width
    epi_stages: int = 4
    a_buffers: int = 2                  # register buffers for the A operand (1: no overlap)
    pingpong: bool = False              # each consumer warpgroup its own 64-row tiles, taking turns
    square_unpack: str = "bits"         # bf16 -> fp32 for the squares: "bits" (mask, shift) or "cvt"


def tile_m_of(cfg: GemmRmsNormConfig) -> int:
    """Rows of one output tile: the CTA's 128 (two warpgroups) or, with pingpong, one warpgroup's 64."""
    return PINGPONG_TILE_M if cfg.pingpong else TILE_M


def ring_stages(cfg: GemmRmsNormConfig) -> int:
    """Depth of the X/W' ring; raises ConfigRejected when the config cannot work."""
    cfg.check_output_tile()
    if cfg.epi_stages < 1 or (cfg.tile_n // cfg.epi_n) % cfg.epi_stages:
        raise ConfigRejected(f"epi_stages={cfg.epi_stages} must divide the "
                             f"{cfg.tile_n // cfg.epi_n} epilogue subtiles of a tile")
    if cfg.a_buffers not in (1, 2):
        raise ConfigRejected(f"a_buffers must be 1 or 2, got {cfg.a_buffers}")
    if not isinstance(cfg.pingpong, bool):
        raise ConfigRejected(f"pingpong must be true or false, got {cfg.pingpong!r}")
    if cfg.square_unpack not in ("cvt", "bits"):
        raise ConfigRejected(f"square_unpack must be 'cvt' or 'bits', got {cfg.square_unpack!r}")
    cfg.schedule_policy()
    tile_m = tile_m_of(cfg)
    # pingpong: one set of epilogue buffers per warpgroup.
    epi_bytes = tile_m * cfg.epi_n * 2 * cfg.epi_stages * (2 if cfg.pingpong else 1)
    return ring_depth((tile_m, cfg.tile_n, TILE_K), cfg.stages, 8, epi_bytes, SMEM_PER_BLOCK_BYTES)


def check_shape(shape, dtype: str):
    M, N, K = problem_dims(shape, "gemm_rmsnorm")
    if dtype not in DTYPES:
        raise ConfigRejected(f"gemm_rmsnorm input dtype must be one of {DTYPES}, got {dtype}")
    if K % 8 or N % 8:
        raise ConfigRejected(f"TMA needs 16-byte aligned rows: K={K} and N={N} must be multiples of 8")
    return M, N, K


def fold_gain(gamma, w):
    """W' = diag(gamma) @ W in fp32, rounded once to W's dtype; keeps W's layout
    ((K, N) row-major, or the (K, N) view of an (N, K) weight)."""
    folded = gamma.float().unsqueeze(1) * w.float()
    if w.stride(1) == 1:
        return folded.to(w.dtype).contiguous()
    return folded.t().contiguous().to(w.dtype).t()      # the (K, N) view of an (N, K) tensor


def row_halves(tv_layout, threads: int, values: int, tile_m: int):
    """For a WGMMA register fragment (A or C) given by its (thread, value) -> flat-index layout
    over a tile with `tile_m` rows: half[v] in {0, 1}, the row of value v relative to the
    thread's first row being 0 or 8. Raises if the fragment does not have that shape (two rows
    per thread, the same value -> row map for every thread, quads of lanes sharing rows)."""
    half = None
    for t in range(threads):
        rows = [tv_layout((t, v)) % tile_m for v in range(values)]
        base = min(rows)
        h = [r - base for r in rows]
        if set(h) != {0, 8}:
            raise AssertionError(f"thread {t} holds rows {sorted(set(rows))}, expected r and r + 8")
        h = [x // 8 for x in h]
        if half is None:
            half = h
        elif h != half:
            raise AssertionError(f"thread {t} maps values to rows differently from thread 0")
        quad_base = min(tv_layout((t & ~3, v)) % tile_m for v in range(values))
        if quad_base != base:
            raise AssertionError(f"thread {t} does not share its rows with its quad")
    return tuple(half)


def check_rows_owned_by_quads(tv_layout, threads: int, values: int, tile_m: int):
    """Every row of the `tile_m`-row tile is held by exactly the four lanes of one quad: then the
    quad's shuffle sums see all of the row's columns and no other quad holds part of it."""
    owners: dict[int, set[int]] = {}
    for t in range(threads):
        for v in range(values):
            owners.setdefault(tv_layout((t, v)) % tile_m, set()).add(t)
    if sorted(owners) != list(range(tile_m)):
        raise AssertionError(f"the fragment covers {len(owners)} of the tile's {tile_m} rows")
    for row, held_by in owners.items():
        quad = min(held_by) & ~3
        if held_by != set(range(quad, quad + 4)):
            raise AssertionError(f"row {row} is held by threads {sorted(held_by)}, not by one quad")


def row_maps(tiled_mma, threads: int, tile_m: int):
    """(A half map, accumulator half map) of a register-A tiled MMA, after checking that every
    thread's A values and accumulators lie in the same two rows and that each row belongs to one
    quad (plain Python: the layouts are static, so this runs at trace time and a violation stops
    the compile)."""
    import cutlass.cute as cute

    tv_a, tv_c = tiled_mma.tv_layout_A_tiled, tiled_mma.tv_layout_C_tiled
    a_values, c_values = cute.size(tv_a, mode=[1]), cute.size(tv_c, mode=[1])
    check_rows_owned_by_quads(tv_a, threads, a_values, tile_m)
    a_half = row_halves(tv_a, threads, a_values, tile_m)
    c_half = row_halves(tv_c, threads, c_values, tile_m)
    for t in range(threads):
        a_rows = {tv_a((t, v)) % tile_m for v in range(a_values)}
        c_rows = {tv_c((t, v)) % tile_m for v in range(c_values)}
        if a_rows != c_rows:
            raise AssertionError(f"thread {t}: A rows {sorted(a_rows)} != accumulator rows {sorted(c_rows)}")
    return a_half, c_half


# ---------------------------------------------------------------------------------------------
# Compile / launch
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=32)
def _compiled(cfg: GemmRmsNormConfig, dtype: str, w_major: str, on_gpu: bool):
    """One compiled variant. On a GPU the signature comes from real tensors (directly callable
    with from_dlpack tensors); without one, from fake tensors and a fake stream."""
    import cutlass
    import cutlass.cute as cute

    from kernelscope.kernels.gemm_rmsnorm.kernel import FusedRmsNormGemm

    kernel = FusedRmsNormGemm(cfg, dtype)
    if on_gpu:
        import torch
        tdt = getattr(torch, dtype)
        x = torch.empty((256, 256), dtype=tdt, device="cuda")
        w = torch.empty((256, 256), dtype=tdt, device="cuda")
        w_nk = w.t() if w_major == "n" else w                    # (N, K) view
        y = torch.empty((256, 256), dtype=tdt, device="cuda")
        args = [to_cute(x), to_cute(w_nk), to_cute(y)]
        stream = current_stream()
    else:
        # The kernel sees W as (N, K): a K x N row-major W is N-contiguous, an N x K weight K-contiguous.
        args = list(fake_gemm_operands(dtype, dtype, "k", w_major))
        stream = fake_stream()
    def build():
        return cute.compile(kernel, *args, cutlass.Float32(DEFAULT_EPS), 1, stream,
                            options=artifact_options("kernelscope-gemm-rmsnorm-"))

    return launch_cache.reusable("gemm_rmsnorm", (cfg, dtype, w_major), build) if on_gpu else build()


def compile_gemm_rmsnorm(config=None, shape=None, dtype: str = "bfloat16", arch: str = "sm_90a", *,
                         w_major: str = "n") -> CompiledKernel:
    """KernelSpec.compile: builds with or without a GPU (launch is None without one)."""
    if arch not in ("sm_90a", "sm_90"):
        raise ConfigRejected(f"the gemm_rmsnorm kernel is built for sm_90a, not {arch}")
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    extra = dict(config) if isinstance(config, dict) else {}
    w_major = extra.pop("w_major", w_major)
    if w_major not in W_MAJORS:
        raise ConfigRejected(f"w_major must be one of {W_MAJORS}, got {w_major!r}")
    cfg = config if isinstance(config, GemmRmsNormConfig) else GemmRmsNormConfig.from_mapping(extra)
    if shape is not None:
        check_shape(shape, dtype)
    elif dtype not in DTYPES:
        raise ConfigRejected(f"gemm_rmsnorm input dtype must be one of {DTYPES}, got {dtype}")
    ring_stages(cfg)
    return compiled_kernel(lambda: _compiled(cfg, dtype, w_major, False),
                           (lambda inputs: bind_gemm_rmsnorm(cfg, inputs)) if gpu_available() else None)


def bind_gemm_rmsnorm(cfg: GemmRmsNormConfig, inputs) -> Callable[[], Any]:
    """Zero-argument launcher for inputs {"x": (M, K), "gamma": (K,), "w": (K, N), "eps", "out":
    (M, N)} (GPU only). The gain is folded into W here, once per bind (the weight preparation),
    so a timed launch is the fused kernel alone. A pre-folded weight may be passed as
    "w_folded" (then gamma and w are not read)."""
    x, out = inputs["x"], inputs["out"]
    w_folded = inputs.get("w_folded")
    if w_folded is None:
        w, gamma = inputs["w"], inputs.get("gamma", inputs.get("g"))
        if gamma is None:
            raise ConfigRejected("gemm_rmsnorm needs the rmsnorm gain as input 'gamma'")
        if w.shape[0] != x.shape[1] and w.shape[1] == x.shape[1]:
            w = w.t()                                   # an (N, K) weight seen as (K, N)
        if gamma.shape != (x.shape[1],):
            raise ConfigRejected(f"gamma {tuple(gamma.shape)} is not a gain of length {x.shape[1]}")
        w_folded = fold_gain(gamma, w)
    dtype = dtype_name(x.dtype)
    M, K = x.shape
    K2, N = w_folded.shape
    if K2 != K or tuple(out.shape) != (M, N):
        raise ConfigRejected(f"shapes do not chain: x {tuple(x.shape)}, w {tuple(w_folded.shape)}, "
                             f"out {tuple(out.shape)}")
    if w_folded.dtype != x.dtype or out.dtype != x.dtype:
        raise ConfigRejected("x, w and out must share one dtype")
    if x.stride(1) != 1 or out.stride(1) != 1:
        raise ConfigRejected("x and out must be row-major")
    check_shape({"M": M, "N": N, "K": K}, dtype)
    w_major = "n" if w_folded.stride(1) == 1 else "k"
    compiled = _compiled(cfg, dtype, w_major, True)
    import cutlass
    eps = cutlass.Float32(float(inputs.get("eps", DEFAULT_EPS)))
    args = (to_cute(x), to_cute(w_folded.t()), to_cute(out), eps,
            max_active_clusters(tuple(cfg.cluster)), current_stream())
    return launcher(compiled, args)


# ---------------------------------------------------------------------------------------------
# KernelSpec
# ---------------------------------------------------------------------------------------------

SUITE = [{"M": m, "N": n, "K": k} for m in (4096, 8192, 16384) for k in (4096, 8192) for n in (4096, 8192)]


def make_inputs(shape, dtype: str = "bfloat16", seed: int = 0, device: str = "cuda",
                row_scale_decades: float = 3.0):
    """x with rows of very different norms (each row scaled by 10^u, u uniform in
    [-decades, decades]), so a per-row scale applied to the wrong row or broadcast the wrong
    way shows up as a large error; gamma near 1 but not 1; NaN-poisoned output."""
    import torch
    M, N, K = int(shape["M"]), int(shape["N"]), int(shape["K"])
    g = torch.Generator(device="cpu").manual_seed(seed)
    tdt = getattr(torch, dtype)
    scale = 10.0 ** ((torch.rand((M, 1), generator=g) * 2 - 1) * row_scale_decades)
    x = (torch.randn((M, K), generator=g) * scale).to(tdt).to(device)
    gamma = (1.0 + 0.5 * torch.randn((K,), generator=g)).to(tdt).to(device)
    w = (torch.randn((K, N), generator=g) / math.sqrt(K)).to(tdt).to(device)
    out = torch.full((M, N), float("nan"), dtype=tdt, device=device)
    return {"x": x, "gamma": gamma, "w": w, "eps": DEFAULT_EPS, "out": out}


def reference_fp32(inputs):
    """rmsnorm and matmul in fp32 on the (rounded) inputs."""
    import torch
    x = inputs["x"].float()
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + float(inputs.get("eps", DEFAULT_EPS)))
    w = inputs["w"].float()
    if w.shape[0] != x.shape[1]:
        w = w.t()
    return (x * rstd * inputs["gamma"].float()) @ w


def torch_reference(inputs):
    import torch
    import torch.nn.functional as F
    x, w = inputs["x"], inputs["w"]
    if w.shape[0] != x.shape[1]:
        w = w.t()
    return torch.matmul(F.rms_norm(x, (x.shape[1],), inputs["gamma"], float(inputs.get("eps", DEFAULT_EPS))), w)


GEMM_RMSNORM_SPEC = KernelSpec(
    name="gemm_rmsnorm",
    description="Fused RMSNorm -> GEMM for sm_90a: register-A WGMMA, row sums of squares from the "
                "A registers, rsqrt scaling in a TMA-store epilogue (gain folded into W)",
    references=["rmsnorm+matmul", "torch"],
    default_shapes=[dict(s) for s in SUITE],
    default_config=GemmRmsNormConfig().to_dict(),
    dtypes=list(DTYPES),
    make_inputs=make_inputs,
    compile=compile_gemm_rmsnorm,
    reference_fp32=reference_fp32,
    flops=lambda s: 2.0 * s["M"] * s["N"] * s["K"] + 3.0 * s["M"] * s["K"],
    bytes_moved=lambda s, dt: 2.0 * (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]),
    tolerance=gemm_problem.TOLERANCE,
    config_space={
        "tile_n": [128, 192, 256],
        "cluster": [(1, 1), (2, 1), (1, 2)],
        "raster": ["column", "row"],
        "group": [1, 4, 8, 16],
        "stages": [None, 3, 4],
        "a_buffers": [1, 2],
        "pingpong": [False, True],
    },
    expected_sass=["HGMMA", "UTMALDG", "UTMASTG", "LDSM", "SHFL"],
    tile=(TILE_M, 256),
    torch_reference=torch_reference,
)
