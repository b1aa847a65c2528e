"""Hopper GEMM in CuTe DSL: warp-specialized, persistent, TMA + WGMMA, TMA-store epilogue.

C[M, N] = A[M, K] @ B[K, N], bf16 or fp16 inputs (A and B either major order), fp32
accumulation, bf16 / fp16 / fp32 output (row-major).

CTA = 1 producer warpgroup + 1 or 2 consumer warpgroups.
- Warp 0 of the producer warpgroup walks the tile schedule and fills a `stages`-deep ring of
  A/B tiles in shared memory with TMA (multicast across the cluster: A along the cluster's N
  dimension, B along its M dimension); its warpgroup gives registers back (setmaxnreg).
- Each consumer warpgroup owns 64 rows of the tile (one m64 WGMMA atom; with tile_m 128 per
  warpgroup, two row blocks of 64, the tiled MMA repeated along M): it waits on the ring's full barrier, issues
  WGMMAs straight from shared memory (one group in flight, so the stage before is released as
  soon as the current one is issued) and runs the epilogue (kernels/sm90/epilogue.py).
- The grid is persistent: one CTA per SM, clusters stride over the work list of
  kernels/sm90/tile_scheduler.py; the producer runs ahead into the next tile while the consumers
  finish the epilogue of the current one.
- Split-K (config `splits`, or `tail_split`): slices of K per tile on different CTAs, the last
  slice adding the others' fp32 partials before the epilogue (kernels/sm90/split_k.py); the
  heuristic uses it for few tiles over a long K, and the tail plan where it cuts the last wave.
- Stream-K (config `stream_k`): the last partial wave's tiles shared out as one equal run of
  k-tiles per cluster (kernels/split_k_plan.py); the heuristic takes it where the last wave is
  about half full, or three quarters full over a long K (_stream_k_layout).
- The per-shape heuristic (`heuristic_config`, what run/profile/the gate/the benchmark launch)
  picks the tile, the cluster, the epilogue subtile width and the split plan; its numbers are
  in kernels/gemm/NOTES.md.
Any M, N, K whose contiguous extents are 16-byte aligned work: TMA zero-fills out-of-range loads
and clips out-of-range stores, so partial tiles need no masking.

This module (config, checks, compile and launch, the KernelSpec) does not import the DSL; the
kernel class is in kernel.py, imported when a variant is compiled.
"""


import dataclasses
import functools
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

from kernelscope.kernels import gemm_problem, launch_cache
from kernelscope.kernels.cute_build import (
    artifact_options, compiled_kernel, current_stream, dtype_name, fake_gemm_operands, fake_stream, fake_workspace,
    gpu_available,
    launcher, max_active_clusters, to_cute)
from kernelscope.kernels.gemm_problem import PersistentGemmConfig, problem_dims, ring_depth
from kernelscope.kernels.split_k_plan import (STREAM_K_LAYOUTS, SplitPlan, StreamKPlan, allocate_workspace, plan,
                                               stream_k_plan)
from kernelscope.kernels.sm90.device import H100_SMS, SMEM_PER_BLOCK_BYTES, SMEM_RESERVED_BYTES, sm_count
from kernelscope.kernels.spec import CompiledKernel, ConfigRejected

DTYPES = ("bfloat16", "float16")
OUT_DTYPES = ("bfloat16", "float16", "float32")
MAJORS_A = ("k", "m")
MAJORS_B = ("n", "k")      # B is K x N: "n" = row-major (N contiguous), "k" = column-major
MAX_SPLITS = 16


LOAD_HINTS = ("none", "normal", "first", "last")   # L2 eviction hints of a TMA load ("none": no hint)


@dataclass(frozen=True)
class GemmConfig(PersistentGemmConfig):
    KERNEL = "gemm"

    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    stages: int | None = None          # None: as many as shared memory holds (at most 8)
    cluster: tuple[int, int] = (2, 1)  # CTAs per cluster along (M, N)
    raster: str = "column"             # "column" or "row" (kernels/gemm_problem.py, RASTERS)
    group: int = 8                     # raster panel width, in cluster tiles
    consumer_wgs: int = 2              # 1 or 2 consumer warpgroups (64 or 128 rows of the tile each)
    epi_n: int = 32                    # epilogue subtile width (columns)
    epi_stages: int | None = None      # None: 4 for 16-bit outputs, 2 for fp32 (capped by subtiles)
    splits: int = 1                    # split-K: every tile cut into this many slices of K
    tail_split: bool = False           # split-K of the last partial wave's tiles only
    stream_k: bool = False             # the last partial wave shared out as equal runs of k-tiles
    stream_k_layout: str = "runs"      # how: "runs" or "heads" (all four: kernels/split_k_plan.py)
    a_load_hint: str = "none"          # L2 eviction hint of the A (B) loads: none (no hint), normal,
    b_load_hint: str = "none"          # first or last (kernels/sm90/pipeline.py, L2_POLICY)
    ring_epi_n: int = 0                # > 0: each CTA's last tile is stored through the ring's shared
                                       # memory (free by then) in subtiles this wide, a buffer each

    def split_k_capable(self) -> bool:
        """Whether the compiled variant carries the split-K exchange (its plan is per launch)."""
        return self.splits > 1 or self.tail_split or self.stream_k


def _width(dtype: str) -> int:
    return 32 if dtype == "float32" else 16


@dataclass(frozen=True)
class ResolvedGemm:
    """A validated config with every derived quantity filled in."""

    cfg: GemmConfig
    stages: int
    epi_stages: int
    smem_bytes: int
    epi_m: int          # epilogue subtile height: one m64 atom's rows per consumer warpgroup
    ring_subtiles: int = 0   # subtiles (= buffers) of the last tile's store through the ring


def resolve_config(cfg: GemmConfig, out_dtype: str = "bfloat16") -> ResolvedGemm:
    """Check a config and derive the ring depth; raise ConfigRejected with the reason."""
    if cfg.consumer_wgs not in (1, 2):
        raise ConfigRejected(f"consumer_wgs must be 1 or 2, got {cfg.consumer_wgs}")
    if cfg.tile_m not in (64 * cfg.consumer_wgs, 128 * cfg.consumer_wgs):
        raise ConfigRejected(
            f"tile_m must be 64 or 128 per consumer warpgroup (one or two m64 WGMMA atoms): "
            f"{64 * cfg.consumer_wgs} or {128 * cfg.consumer_wgs} with consumer_wgs={cfg.consumer_wgs}, "
            f"got {cfg.tile_m}")
    cfg.check_output_tile()
    if cfg.tile_k != 64:
        raise ConfigRejected(f"tile_k must be 64 (one 128-byte swizzle row of 16-bit data), got {cfg.tile_k}")
    cfg.schedule_policy()
    if out_dtype not in OUT_DTYPES:
        raise ConfigRejected(f"output dtype must be one of {OUT_DTYPES}, got {out_dtype}")
    if not isinstance(cfg.splits, int) or not 1 <= cfg.splits <= MAX_SPLITS:
        raise ConfigRejected(f"splits must be an integer from 1 to {MAX_SPLITS}, got {cfg.splits!r}")
    if cfg.tail_split not in (True, False):
        raise ConfigRejected(f"tail_split must be true or false, got {cfg.tail_split!r}")
    for name in ("a_load_hint", "b_load_hint"):
        if getattr(cfg, name) not in LOAD_HINTS:
            raise ConfigRejected(f"{name} must be one of {', '.join(LOAD_HINTS)}, got {getattr(cfg, name)!r}")
    if cfg.stream_k not in (True, False):
        raise ConfigRejected(f"stream_k must be true or false, got {cfg.stream_k!r}")
    if cfg.stream_k_layout not in STREAM_K_LAYOUTS:
        raise ConfigRejected(f"stream_k_layout must be one of {', '.join(STREAM_K_LAYOUTS)}, "
                             f"got {cfg.stream_k_layout!r}")
    if sum((cfg.splits > 1, cfg.tail_split, cfg.stream_k)) > 1:
        raise ConfigRejected("splits > 1 (every tile), tail_split and stream_k (the last wave's tiles) "
                             "exclude each other")
    # Registers: each consumer thread holds tile_m x tile_n / (128 x consumer_wgs) fp32
    # accumulators, at most 128 (one m64n256 atom's, or two m64n128 atoms').
    if cfg.tile_n > 256:
        raise ConfigRejected("tile_n above 256 does not fit the accumulators in registers")
    if cfg.tile_m * cfg.tile_n > 64 * 256 * cfg.consumer_wgs:
        raise ConfigRejected(
            f"a {cfg.tile_m}x{cfg.tile_n} tile does not fit the accumulators in registers: "
            f"at most 64 x 256 (or 128 x 128) elements per consumer warpgroup")

    # The epilogue stores row blocks of one atom's rows per warpgroup (kernels/sm90/epilogue.py).
    epi_m = 64 * cfg.consumer_wgs
    subtiles = (cfg.tile_m // epi_m) * (cfg.tile_n // cfg.epi_n)
    want = cfg.epi_stages if cfg.epi_stages is not None else (4 if _width(out_dtype) == 16 else 2)
    if want < 1:
        raise ConfigRejected(f"epi_stages must be positive, got {want}")
    # Buffer indices repeat every tile, so the ring of epilogue buffers must divide the subtiles.
    epi_stages = max(s for s in range(1, min(want, subtiles) + 1) if subtiles % s == 0)
    if cfg.epi_stages is not None and epi_stages != cfg.epi_stages:
        raise ConfigRejected(
            f"epi_stages={cfg.epi_stages} must divide the {subtiles} epilogue subtiles of a tile")
    epi_bytes = epi_m * cfg.epi_n * _width(out_dtype) // 8 * epi_stages
    tile_mnk = (cfg.tile_m, cfg.tile_n, cfg.tile_k)
    stages = ring_depth(tile_mnk, cfg.stages, _MOST_STAGES, epi_bytes, SMEM_PER_BLOCK_BYTES)
    ring_bytes = stages * (cfg.tile_m + cfg.tile_n) * cfg.tile_k * 2
    smem = ring_bytes + epi_bytes + SMEM_RESERVED_BYTES
    return ResolvedGemm(cfg, stages, epi_stages, smem, epi_m,
                        _ring_subtiles(cfg, epi_m, out_dtype, ring_bytes))


def _ring_subtiles(cfg: GemmConfig, epi_m: int, out_dtype: str, ring_bytes: int) -> int:
    """How many subtiles the last tile's store through the ring takes (0: it stores as the
    others); ConfigRejected unless the ring holds a buffer for each."""
    if cfg.ring_epi_n == 0:
        return 0
    if cfg.ring_epi_n not in (16, 32, 64) or cfg.tile_n % cfg.ring_epi_n:
        raise ConfigRejected(f"ring_epi_n must be 0 (off), 16, 32 or 64 and divide tile_n={cfg.tile_n}, "
                             f"got {cfg.ring_epi_n!r}")
    if cfg.split_k_capable():
        raise ConfigRejected("ring_epi_n > 0 stores a CTA's last whole tile; it does not combine with "
                             "splits, tail_split or stream_k")
    subtiles = (cfg.tile_m // epi_m) * (cfg.tile_n // cfg.ring_epi_n)
    need = cfg.tile_m * cfg.tile_n * _width(out_dtype) // 8
    if need > ring_bytes:
        raise ConfigRejected(f"the last tile's {need} bytes of {out_dtype} do not fit in the ring's "
                             f"{ring_bytes} bytes (ring_epi_n > 0)")
    return subtiles


def check_shape(shape: dict[str, int], dtype: str, out_dtype: str, a_major: str, b_major: str):
    """TMA needs 16-byte aligned strides: the contiguous extent of every operand a multiple of
    8 (16-bit) or 4 (fp32) elements."""
    M, N, K = problem_dims(shape, "gemm")
    if dtype not in DTYPES:
        raise ConfigRejected(f"input dtype must be one of {DTYPES}, got {dtype}")
    if a_major not in MAJORS_A or b_major not in MAJORS_B:
        raise ConfigRejected(f"a_major must be in {MAJORS_A} and b_major in {MAJORS_B}")
    a_contig = K if a_major == "k" else M
    b_contig = N if b_major == "n" else K
    if a_contig % 8 or b_contig % 8:
        raise ConfigRejected(
            f"TMA needs 16-byte aligned rows: the contiguous extent of A ({a_contig}) and of B "
            f"({b_contig}) must be multiples of 8 elements")
    if N % (128 // _width(out_dtype)):
        raise ConfigRejected(f"TMA needs 16-byte aligned rows: N={N} must be a multiple of "
                             f"{128 // _width(out_dtype)} for {out_dtype} output")
    return M, N, K


# ---------------------------------------------------------------------------------------------
# Compile / launch
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def _compiled(cfg: GemmConfig, dtype: str, out_dtype: str, a_major: str, b_major: str,
              use_gpu_tensors: bool):
    """Compile one variant. With a GPU the signature comes from real (dynamic-layout) tensors, so
    the result is directly callable with from_dlpack tensors; without, from fake tensors."""
    import cutlass.cute as cute

    from kernelscope.kernels.gemm.kernel import HopperGemm

    resolved = resolve_config(cfg, out_dtype)
    gemm = HopperGemm(resolved, dtype, out_dtype)
    if use_gpu_tensors:
        x = _example_inputs(dtype, out_dtype, a_major, b_major)
        args = [to_cute(t) for t in x]
        stream = current_stream()
    else:
        args = list(fake_gemm_operands(dtype, out_dtype, a_major, b_major))
        stream = fake_stream()
    split_args = []
    if cfg.split_k_capable():
        partials, counters = (_split_k_workspace(SplitPlan(0, 1, 0), cfg) if use_gpu_tensors
                              else fake_workspace())
        split_args = [to_cute(partials, leading_dim=0) if use_gpu_tensors else partials,
                      to_cute(counters, leading_dim=0) if use_gpu_tensors else counters, 0, 1]

    def build():
        return cute.compile(gemm, *args, 1, stream, *split_args,
                            options=artifact_options("kernelscope-gemm-"))

    key = (cfg, dtype, out_dtype, a_major, b_major)
    return (launch_cache.reusable("gemm", key, build) if use_gpu_tensors else build()), resolved


def _split_k_workspace(split: SplitPlan | StreamKPlan, cfg: GemmConfig):
    """The split-K (or stream-K) partial sums and counters of a launch's plan."""
    return allocate_workspace(split, cfg.cluster[0] * cfg.cluster[1], cfg.tile_m, cfg.tile_n, 4 * cfg.consumer_wgs)


def split_plan(cfg: GemmConfig, M: int, N: int, K: int, clusters: int) -> SplitPlan | StreamKPlan:
    """The split-K (or stream-K) plan of one launch over `clusters` resident clusters
    (kernels/split_k_plan.py)."""
    cm, cn = cfg.cluster
    cluster_tiles = math.ceil(math.ceil(M / cfg.tile_m) / cm) * math.ceil(math.ceil(N / cfg.tile_n) / cn)
    if cfg.stream_k:
        return stream_k_plan(cluster_tiles, clusters, math.ceil(K / cfg.tile_k), cfg.stream_k_layout)
    return plan(cluster_tiles, clusters, math.ceil(K / cfg.tile_k), cfg.splits, cfg.tail_split, MAX_SPLITS,
                cluster_ctas=cm * cn, tile_k=cfg.tile_k)


def _example_inputs(dtype, out_dtype, a_major, b_major, M=256, N=256, K=256):
    import torch
    tdt = getattr(torch, dtype)
    a = torch.empty((M, K), dtype=tdt, device="cuda") if a_major == "k" else \
        torch.empty((K, M), dtype=tdt, device="cuda").t()
    bT = torch.empty((K, N), dtype=tdt, device="cuda").t() if b_major == "n" else \
        torch.empty((N, K), dtype=tdt, device="cuda")
    c = torch.empty((M, N), dtype=getattr(torch, out_dtype), device="cuda")
    return a, bT, c


def compile_gemm(config: dict[str, Any] | GemmConfig | None, shape: dict[str, int] | None = None,
                 dtype: str = "bfloat16", arch: str = "sm_90a", *, out_dtype: str | None = None,
                 a_major: str = "k", b_major: str = "n") -> CompiledKernel:
    """KernelSpec.compile: works without a GPU (launch=None then)."""
    if arch not in ("sm_90a", "sm_90"):
        raise ConfigRejected(f"the gemm kernel is built for sm_90a, not {arch}")
    # Before the first cutlass import: the DSL reads the target at import.
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    cfg = config if isinstance(config, GemmConfig) else GemmConfig.from_mapping(
        {k: v for k, v in dict(config or {}).items() if k not in ("out_dtype", "a_major", "b_major")})
    extra = dict(config) if isinstance(config, dict) else {}
    out_dtype = out_dtype or extra.get("out_dtype") or dtype
    a_major = extra.get("a_major", a_major)
    b_major = extra.get("b_major", b_major)
    if shape is not None:
        check_shape(shape, dtype, out_dtype, a_major, b_major)
    resolve_config(cfg, out_dtype)

    gpu = gpu_available()
    # The inspected variant: compiled from fake tensors, so it builds with or without a GPU.
    return compiled_kernel(lambda: _compiled(cfg, dtype, out_dtype, a_major, b_major, False)[0],
                           (lambda inputs: bind_gemm(cfg, inputs)) if gpu else None)


def bind_gemm(cfg: GemmConfig, inputs) -> Callable[[], Any]:
    """Zero-argument launcher for inputs {"a": (M, K), "b": (K, N), "out": (M, N)} (GPU only).
    The variant (dtypes, major orders) follows the tensors; it is compiled once and cached, and
    the operands are converted here, once, so a timed launch is one call of the compiled kernel."""
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    dtype = dtype_name(a.dtype)
    out_dtype = dtype_name(out.dtype)
    if dtype_name(b.dtype) != dtype:
        raise ConfigRejected(f"A and B must share a dtype, got {dtype} and {dtype_name(b.dtype)}")
    a_major, b_major = major_of_a(a), major_of_b(b)
    M, K = a.shape
    K2, N = b.shape
    if K2 != K or tuple(out.shape) != (M, N):
        raise ConfigRejected(f"shapes do not chain: A {tuple(a.shape)}, B {tuple(b.shape)}, out {tuple(out.shape)}")
    if out.stride(1) != 1:
        raise ConfigRejected("the output must be row-major")
    check_shape({"M": M, "N": N, "K": K}, dtype, out_dtype, a_major, b_major)
    compiled, _ = _compiled(cfg, dtype, out_dtype, a_major, b_major, True)
    clusters = max_active_clusters(tuple(cfg.cluster))
    args = [to_cute(a), to_cute(b.t()), to_cute(out), clusters, current_stream()]
    workspace = ()
    if cfg.split_k_capable():
        split = split_plan(cfg, M, N, K, clusters)
        workspace = _split_k_workspace(split, cfg)
        args += [to_cute(t, leading_dim=0) for t in workspace] + [split.split_from, split.slices]

    launch = launcher(compiled, args)
    launch.split_k_workspace = workspace      # alive as long as the launcher
    return launch


def major_of_a(a) -> str:
    return "k" if a.stride(1) == 1 else "m"


def major_of_b(b) -> str:
    return "n" if b.stride(1) == 1 else "k"


# ---------------------------------------------------------------------------------------------
# KernelSpec
# ---------------------------------------------------------------------------------------------

# Relative WGMMA-pipe efficiency of a 128x128 tile against 128x256 (more epilogue and more
# operand bytes per FLOP); from the H200 sweeps in kernels/gemm/NOTES.md.
_SMALL_TILE_EFFICIENCY = 0.93


# Epilogue subtile width at which a 128x256 tile's four subtiles fit the four epilogue buffers
# (with 32 columns, subtiles 5-8 reuse the buffers of 1-4). It costs a ring stage (3 instead of
# 4): slower where a CTA has a single tile (2048^3: 0.96 against 0.99 of cuBLAS on the H100, 0.98
# against 0.99 on the H200), 0.3-1.5 % faster wherever CTAs run several tiles (timed in turns,
# results/gemm-{h100,h200}-epilogue-sweep-paired*.json.xz, gemm-h100-big-sweep-paired.json.xz).
# Why is not proven: kernels/gemm/NOTES.md v5 has what kernelscope's profile shows.
_WHOLE_TILE_EPI_N = 64
# Subtile width of a lone tile's store through the ring (heuristic_config).
_ONE_TILE_RING_EPI_N = 32


def _tail_wave_cost(cfg: GemmConfig, M: int, N: int, K: int | None, sms: int) -> float | None:
    """The last partial wave's cost, in waves, when the tail plan cuts it (kernels/split_k_plan.py);
    None where the plan keeps every tile whole (or K is unknown). Measured in turns (H100;
    results/gemm-h100-tail-split-paired*.json.xz): 4096x4352x4096 0.936 -> 1.028-1.039 of cuBLAS
    (last wave 12 % full), 8192x14336x4096 0.996 -> 1.005 (15 %; H200 0.996 -> 1.002), 8192^3
    1.027 -> 1.032 (52 %). Where the plan keeps the tiles whole, the split-capable variant only
    costs (0.9 % at 8192x4096x4096 on the H100, 0.4-0.7 % at 4096^3 and 8192x4096x11008 on the
    H200), so it is not taken there."""
    if K is None:
        return None
    clusters = sms // (cfg.cluster[0] * cfg.cluster[1])
    tail = split_plan(dataclasses.replace(cfg, tail_split=True), M, N, int(K), clusters)
    if tail.slices == 1:
        return None
    return math.ceil(tail.split_tiles * tail.slices / clusters) / tail.slices


def _stream_k_layout(cfg: GemmConfig, M: int, N: int, K: int | None, sms: int) -> str | None:
    """Stream-K (kernels/split_k_plan.py) where it was measured faster than the whole last wave
    and the tail plan, in the layout measured best there; None elsewhere. H200, timed in turns
    against cuBLAS (results/gemm-h200-stream-k-*-paired.json.xz; last wave's fill, k-tiles):
    - "runs" at a last wave between a quarter and 60 % full: 52 %: 8192^3 1.044-1.047 against
      1.032-1.034 with the tail plan (heads 1.043-1.044), 8192x8192x4096 1.038-1.039 against 1.023
      (heads 1.034); and at most 78 % full over >= 128 k-tiles: 76 %: 8192x4096x11008 (172)
      1.003-1.004 against 0.999-1.000 whole, but 8192x4096x4096 (64) 1.000 against 1.001-1.002
      whole. The 128 k-tile threshold lies between those two and is not measured against the whole
      wave: 8192x4096x8192 (128) took 1.006 with runs (heads 0.994).
    - "heads" over >= 200 k-tiles at 60-78 %: 76 %: 8192x4096x14336 1.009 (twice) against 1.002-1.004
      with runs, 4096x8192x16384 1.011 against 1.001 (8192x4096x11008, 172 k-tiles: 1.004 against
      1.003). Over fewer k-tiles the helpers' many short pieces cost more than the heads gain
      (4096^3 0.841, 8192x4096x4096 0.966).
    15 %: 8192x14336x4096 is left to the tail plan (1.008-1.009; stream-K 1.009-1.010).
    Nearly full last waves lose in either layout: 82 % 0.977-0.980 against 1.000 (6144x4096x8192),
    85 % 0.98-0.99 of the whole wave (8192x11008x4096), 88 % 0.970-0.972 (4096^3) and 0.944-0.946
    (4096x4096x8192): kernelscope's diff of the runs against the whole wave at 4096x4096x8192 shows
    1.9x the DRAM reads (runs at their own k offsets no longer share A and B k-tiles through L2
    with their neighbours, as a whole-tile wave does; kernels/gemm/NOTES.md, v7)."""
    if K is None:
        return None
    cm, cn = cfg.cluster
    clusters = sms // (cm * cn)
    cluster_tiles = math.ceil(math.ceil(M / cfg.tile_m) / cm) * math.ceil(math.ceil(N / cfg.tile_n) / cn)
    k_tiles = math.ceil(int(K) / cfg.tile_k)
    if cluster_tiles <= clusters or stream_k_plan(cluster_tiles, clusters, k_tiles).split_tiles == 0:
        return None
    fill = (cluster_tiles % clusters) / clusters
    if 0.25 <= fill <= 0.60:
        return "runs"
    if 0.60 < fill <= 0.78 and k_tiles >= 128:
        return "heads" if k_tiles >= 200 else "runs"
    return None


def _long_k_splits(tiles: int, k_tiles: int, sms: int) -> int:
    """Split-K for few tiles over a long K: the most slices (2 or 4) that keep every slice at
    >= 32 k-tiles and the work items within one wave. Measured with 64x128 tiles
    (results/gemm-{h100,h200}-split-k-skinny.json.xz, gemm-h200-m128-split2-paired.json.xz):
    128x1024x16384 0.54 -> 0.91 of cuBLAS with 4 slices (H100; H200 0.46 -> 0.84),
    256x2048x8192 0.78-0.83 -> 0.92 with 2 (H200 0.84 -> 0.99), 128x4096x4096 0.92 -> 0.93 with
    2 (H100; H200 timed in turns: 0.887 -> 0.939); 4 slices of 16 k-tiles lose there (H100 0.74)."""
    best = 1
    for s in (2, 4):
        if tiles * s <= sms and k_tiles >= 32 * s:
            best = s
    return best


# Ring stages when a config leaves them to fit: as many as fit, at most this. Only tiles of
# 64x64 fit more than 8 (13); a skinny GEMM streaming B from DRAM wants every one of them
# (128x4096x4096, H100, timed in turns: 0.908 of cuBLAS with 8 stages, 0.979 with 10, 1.036 with
# 13; results/gemm-h100-m128-deep-ring-paired.json.xz). Every other tile fits 8 or fewer.
_MOST_STAGES = 16


def _deep_ring_skinny(M: int, N: int, sms: int) -> GemmConfig | None:
    """64 < M <= 128 with enough 64x64 tiles to fill 3/4 of the SMs: 64x64 tiles, B multicast over
    a 2x1 cluster and the deepest ring, no split. Such a problem streams B (N x K) from DRAM once
    per launch; bytes in flight per SM set its speed (kernels/gemm/NOTES.md, launch context)."""
    if not 64 < M <= 128 or math.ceil(M / 64) * math.ceil(N / 64) < 0.75 * sms:
        return None
    return GemmConfig(tile_m=64, tile_n=64, consumer_wgs=1, cluster=(2, 1))


def heuristic_config(shape: dict[str, int], sms: int = H100_SMS) -> GemmConfig:
    """Per-shape default. 64 < M <= 128 with enough 64x64 tiles: those, with the deepest ring
    (_deep_ring_skinny). M <= 256 with few tiles and enough K: 64x128 tiles cut into slices of K
    (_long_k_splits). M <= 128: 64x128 tiles with B multicast over a 2x1 cluster (skinny
    problems are bound by reading B). 128x64 tiles where 128x128 ones would fill less than half a
    wave (_narrow_tiles_fill_the_wave). Otherwise the tile (128x256 or 128x128) whose waves of
    persistent work cost least: ceil(tiles / SMs) x tile area / tile efficiency.
    128x256 tiles: the whole tile in the epilogue buffers where CTAs run more than one tile, and
    the last wave's tiles cut into slices of K where the tail plan cuts them (_tail_wave_cost,
    which then also prices that wave in the cost). 128x128 tiles: B multicast over a 2x1
    cluster (M=512, timed in turns: 0.972-0.977 against 0.957-0.961 with 1x2 on the H100, 0.981
    against 0.974 on the H200; results/gemm-{h100,h200}-m512-*-paired*.json.xz). Where no CTA
    runs more than one tile of either size, that tile is stored through the ring in 32-column
    subtiles with a buffer each (ring_epi_n; H200, timed in turns, two runs: M=512 0.990-0.993
    against 0.985-0.986 without, 2048^3 0.990-0.994 against 0.988-0.993; NOTES.md)."""
    M, N = int(shape["M"]), int(shape["N"])
    deep_ring = _deep_ring_skinny(M, N, sms)
    if deep_ring is not None:
        return deep_ring
    if M <= 256 and "K" in shape:
        skinny = GemmConfig(tile_m=64, tile_n=128, consumer_wgs=1, cluster=(2, 1) if M > 64 else (1, 1))
        splits = _long_k_splits(math.ceil(M / 64) * math.ceil(N / 128), math.ceil(int(shape["K"]) / 64), sms)
        if splits > 1:
            return dataclasses.replace(skinny, splits=splits)
    if M <= 128:
        return GemmConfig(tile_m=64, tile_n=128, consumer_wgs=1, cluster=(2, 1) if M > 64 else (1, 1))

    def cost(tile_n, eff, last_wave=None):
        tiles = math.ceil(M / 128) * math.ceil(N / tile_n)
        waves = math.ceil(tiles / sms) if last_wave is None else tiles // sms + last_wave
        return waves * 128 * tile_n / eff

    big = GemmConfig(epi_n=_WHOLE_TILE_EPI_N)
    several_tiles_per_cta = math.ceil(M / 128) * math.ceil(N / 256) > sms
    layout = _stream_k_layout(big, M, N, shape.get("K"), sms) if several_tiles_per_cta else None
    stream_k = layout is not None
    tail_wave = (_tail_wave_cost(big, M, N, shape.get("K"), sms)
                 if several_tiles_per_cta and not stream_k else None)
    if stream_k:
        # The shared-out last wave takes about its fill of a wave.
        tiles = math.ceil(M / 128) * math.ceil(N / 256)
        tail_wave = (tiles % sms) / sms
    if _narrow_tiles_fill_the_wave(M, N, sms):
        return GemmConfig(tile_m=128, tile_n=64, cluster=(2, 1))
    if cost(256, 1.0, tail_wave) <= cost(128, _SMALL_TILE_EFFICIENCY):
        if several_tiles_per_cta:
            return dataclasses.replace(big, tail_split=tail_wave is not None and not stream_k,
                                       stream_k=stream_k, stream_k_layout=layout or "runs")
        return GemmConfig(ring_epi_n=_ONE_TILE_RING_EPI_N)
    one_tile_each = math.ceil(M / 128) * math.ceil(N / 128) <= sms
    return GemmConfig(tile_m=128, tile_n=128, cluster=(2, 1),
                      ring_epi_n=_ONE_TILE_RING_EPI_N if one_tile_each else 0)


def _narrow_tiles_fill_the_wave(M: int, N: int, sms: int) -> bool:
    """128x64 tiles where 128x128 tiles would leave more than half the SMs idle and the narrow
    ones still fit one wave. H100, timed in turns against cuBLAS, 128x64 against 128x128
    (results/gemm-h100-m256-sweep-paired.json.xz, gemm-h100-narrow-tiles-paired.json.xz):
    256x4096x4096 1.037 against 0.932, 512x2048x4096 1.012 against 0.828, 1024x1024x4096 0.795
    against 0.744; 192x4096x4096 0.836 against 0.848 (the one loss: its second row of tiles is half
    empty either way). Where the narrow tiles would take two waves (256x8192x4096: 0.914 against
    1.024) the 128x128 tiles stay, so no wider rule is taken."""
    tiles_128 = math.ceil(M / 128) * math.ceil(N / 128)
    tiles_64 = math.ceil(M / 128) * math.ceil(N / 64)
    return tiles_128 <= sms // 2 and tiles_64 <= sms


def tuned_config(shape: dict[str, int], dtype: str = "bfloat16") -> dict:
    """KernelSpec.shape_config: the per-shape heuristic for the current GPU's SM count, so that
    `run`, `profile` and the gate launch what the benchmark times."""
    return heuristic_config(shape, sm_count()).to_dict()


GEMM_SPEC = gemm_problem.gemm_spec(
    name="gemm",
    description="Hopper warp-specialized persistent TMA + WGMMA GEMM with a TMA-store epilogue",
    default_config=GemmConfig().to_dict(),
    dtypes=list(DTYPES),
    compile=compile_gemm,
    shape_config=tuned_config,
    config_space={
        "tile_n": [128, 192, 256],
        "cluster": [(1, 1), (2, 1), (1, 2)],
        "raster": ["column", "row"],
        "group": [1, 4, 8, 16],
        "consumer_wgs": [1, 2],
        "stages": [None, 3, 4, 5],
    },
    expected_sass=["HGMMA", "UTMALDG", "UTMASTG", "STSM"],
    tile=(128, 256),
)
