"""GEMM on the warp-level tensor-core path: ldmatrix.x4 + mma.sync m16n8k16, no WGMMA.

C[M, N] = A[M, K] @ B[K, N], bf16 or fp16 inputs, fp32 accumulation, output in the input dtype
(row-major). A is K-major (row-major M x K); B is N-major (row-major K x N) or K-major.

This is the instruction set of SM80 and of consumer Blackwell (sm_120), which has no WGMMA;
it also runs on Hopper (sm_90a), where it is measured against cuBLAS and against the device's
own mma.sync ceiling (benchmarks/hmma_ceiling.py).

Block = `warps_m x warps_n` MMA warps; warp 0 also issues the loads (one lane).
- Loads: TMA (cp.async.bulk.tensor) on both sm_90a and sm_120a. Both have the copy engine; one
  lane of warp 0 moves a whole stage with two instructions, completion is counted in bytes
  on the stage's mbarrier, and the 128-byte swizzle that makes ldmatrix conflict-free is applied
  by the copy itself. cp.async (SM80) would spend every thread on address math and needs a
  commit/wait-group pipeline instead of barriers; it is only needed on parts without TMA.
- Stages: a ring of `stages` A/B buffers with two mbarriers each (full: TMA bytes landed;
  empty: every MMA warp has read the stage). Waiters pass the parity of the phase they expect
  (kernels/sm90/pipeline.py's TmaRing).
- MMA warps: each owns a (tile_m / warps_m) x (tile_n / warps_n) piece of the output. Per 16-deep
  k-block it loads its A and B fragments from shared memory with ldmatrix.x4 (.trans for N-major B)
  and issues mma.sync m16n8k16. Fragment loads run `wk_iters` k-blocks ahead of the MMAs, across
  stage boundaries; with wk_iters = tile_k / 16 every k-iteration of a stage is held in registers
  and the stage goes back to the ring right after its last ldmatrix, before its MMAs.
- Persistent grid: as many blocks as SMs times the blocks that fit on one SM, computed from the
  compiled kernel's registers, its shared memory and its thread count (one for every shipped
  config); blocks stride over the output tiles in row, column or Morton order
  (kernels/sm90/tile_scheduler.py).
- Epilogue: accumulators rounded to the output dtype and stored straight from registers, two
  adjacent columns per store, masked at the M and N edges.
- Stream-K (config `stream_k`): the whole waves run as above, and the last partial wave's tiles
  are shared out over every block as one equal run of k-tiles each (kernels/split_k_plan.py, the
  exchange of kernels/sm90/split_k.py, 16 bytes an access); the loads run on from the last whole
  tile into the first piece and from piece to piece where the next one is long enough.
- Clusters (config `cluster`, sm_90a, not with stream-K): the 2 blocks of a cluster column share
  each B k-tile (of a row, each A k-tile); each loads half the box and multicasts it, and a stage
  is refilled once the MMA warps of both blocks released it. Measured slower than one block on
  the H200 (NOTES.md, "Clusters"), so no per-shape choice takes it.
Partial tiles: TMA zero-fills out-of-range loads, so K, M and N need no multiple of the tile; the
contiguous extent of A and B must be a multiple of 8 elements (16-byte TMA strides), N even.
"""


import functools
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

from kernelscope.kernels import gemm_problem, launch_cache
from kernelscope.kernels.cute_build import (
    artifact_options, artifacts, compiled_kernel, current_stream, dtype_name, fake_gemm_operands, fake_stream,
    fake_workspace, gpu_available, launcher, max_active_clusters, to_cute)
from kernelscope.kernels.config import KernelConfig
from kernelscope.kernels.gemm_problem import RASTERS, problem_dims, ring_depth
from kernelscope.kernels.sm90.device import SMEM_PER_BLOCK_BYTES, SMEM_PER_SM_BYTES, SMEM_RESERVED_BYTES, sm_count
from kernelscope.kernels.spec import CompiledKernel, ConfigRejected
from kernelscope.kernels.split_k_plan import StreamKPlan, allocate_workspace, stream_k_plan

DTYPES = ("bfloat16", "float16")
B_MAJORS = ("n", "k")          # B is K x N: "n" = row-major (N contiguous), "k" = column-major
ARCHS = ("sm_90a", "sm_120a")
# Shared memory a block may use (opt-in maximum) per architecture, and per-SM limits used to
# derive how many blocks are resident at once.
SMEM_PER_BLOCK = {"sm_90a": SMEM_PER_BLOCK_BYTES, "sm_120a": 101376}
SMEM_PER_SM = {"sm_90a": SMEM_PER_SM_BYTES, "sm_120a": 102400}
REGISTERS_PER_SM = 65536
THREADS_PER_SM = {"sm_90a": 2048, "sm_120a": 1536}
MAX_BLOCKS_PER_SM = 32
MMA_K = 16


@dataclass(frozen=True)
class MmaGemmConfig(KernelConfig):
    KERNEL = "gemm_mma"
    PAIRS = ("cluster",)

    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    warps_m: int = 2
    warps_n: int = 4
    wk_iters: int = 1               # k-blocks (16 deep) of fragments held in registers ahead of the MMAs
    stages: int | None = None       # None: as many as shared memory holds (at most 6)
    raster: str = "row"             # "row", "column" or "morton"
    group: int = 8                  # panel width (row/column) or Morton block side, in tiles
    refill_at: int = 0              # k-block of each k-tile at which warp 0 issues the next TMA load
    stream_k: bool = False          # the last partial wave shared out as equal runs of k-tiles
    # Blocks per cluster along (M, N): the blocks of a cluster column share each B k-tile, those of
    # a row each A k-tile, every block loading its share of the box and multicasting it (sm_90a).
    cluster: tuple[int, int] = (1, 1)

    @classmethod
    def from_mapping(cls, cfg: dict[str, Any] | None) -> "MmaGemmConfig":
        """b_major belongs to the operands (a compile argument), not to the config: dropped."""
        return super().from_mapping({k: v for k, v in dict(cfg or {}).items() if k != "b_major"})

    @property
    def mma_warps(self) -> int:
        return self.warps_m * self.warps_n

    @property
    def threads(self) -> int:
        return 32 * self.mma_warps

    @property
    def k_blocks(self) -> int:
        return self.tile_k // MMA_K

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1]


@dataclass(frozen=True)
class ResolvedMmaGemm:
    cfg: MmaGemmConfig
    arch: str
    stages: int
    smem_bytes: int


def resolve_config(cfg: MmaGemmConfig, arch: str = "sm_90a") -> ResolvedMmaGemm:
    """Check a config for an architecture and derive the ring depth; ConfigRejected says why not."""
    from kernelscope.kernels.sm90.tile_scheduler import SchedulePolicy

    if arch not in ARCHS:
        raise ConfigRejected(f"gemm_mma builds for {', '.join(ARCHS)}, not {arch}")
    if cfg.tile_k != 64:
        raise ConfigRejected(f"tile_k must be 64 (one 128-byte swizzled row of 16-bit data), got {cfg.tile_k}")
    if cfg.warps_m < 1 or cfg.warps_n < 1 or cfg.mma_warps > 16:
        raise ConfigRejected(f"warps_m x warps_n must be 1..16 warps, got {cfg.warps_m}x{cfg.warps_n}")
    # Each warp's piece is whole ldmatrix.x4 loads: 16 rows of A, 16 columns of B.
    if cfg.tile_m % (16 * cfg.warps_m) or cfg.tile_m > 256:
        raise ConfigRejected(f"tile_m={cfg.tile_m} must be a multiple of 16 x warps_m={cfg.warps_m} and at most 256")
    if cfg.tile_n % (16 * cfg.warps_n) or cfg.tile_n > 256 or cfg.tile_n % 64:
        raise ConfigRejected(
            f"tile_n={cfg.tile_n} must be a multiple of 64 and of 16 x warps_n={cfg.warps_n}, at most 256")
    if cfg.wk_iters not in range(1, cfg.k_blocks + 1) or cfg.k_blocks % cfg.wk_iters:
        raise ConfigRejected(
            f"wk_iters={cfg.wk_iters} must divide the {cfg.k_blocks} k-blocks of a {cfg.tile_k}-deep stage")
    # The refill must come no later than the k-block at which the fragment loads wait for the next
    # stage: with two stages that next stage is the one being refilled.
    if cfg.refill_at not in range(cfg.k_blocks - cfg.wk_iters + 1):
        raise ConfigRejected(
            f"refill_at={cfg.refill_at} must be a k-block index no later than k_blocks - wk_iters = "
            f"{cfg.k_blocks - cfg.wk_iters}, where the next stage is waited for")
    if cfg.raster not in RASTERS:
        raise ConfigRejected(f"raster must be one of {sorted(RASTERS)}, got {cfg.raster!r}")
    if cfg.stream_k not in (True, False):
        raise ConfigRejected(f"stream_k must be true or false, got {cfg.stream_k!r}")
    if len(cfg.cluster) != 2 or any(c not in (1, 2) for c in cfg.cluster):
        raise ConfigRejected(f"cluster must be 1 or 2 blocks along each of M and N, got {cfg.cluster}")
    if cfg.cluster_size > 1 and arch != "sm_90a":
        raise ConfigRejected(f"clusters with multicast loads are built for sm_90a only, not {arch}")
    if cfg.cluster_size > 1 and cfg.stream_k:
        raise ConfigRejected("stream_k and a cluster of more than one block are not built together")
    why = SchedulePolicy(tuple(cfg.cluster), RASTERS[cfg.raster], cfg.group).validate()
    if why:
        raise ConfigRejected(why)
    acc_regs = cfg.tile_m * cfg.tile_n // (32 * cfg.mma_warps)
    if acc_regs > 192:
        raise ConfigRejected(
            f"{acc_regs} fp32 accumulators per thread (tile {cfg.tile_m}x{cfg.tile_n} over "
            f"{cfg.mma_warps} warps) leave no registers for fragments; use more warps or a smaller tile")
    stages = ring_depth((cfg.tile_m, cfg.tile_n, cfg.tile_k), cfg.stages, 6, 0, SMEM_PER_BLOCK[arch], arch)
    stage_bytes = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * 2
    return ResolvedMmaGemm(cfg, arch, stages, stages * stage_bytes + SMEM_RESERVED_BYTES)


# Per-shape candidates, largest tile first. The big tile reuses each loaded operand most; the
# smaller ones fit two blocks per SM (fewer stages), so one block's epilogue and pipeline fill
# hide under the other's MMAs.
SHAPE_CANDIDATES = (
    {},                                                                  # 128x256, one block per SM
    {"tile_n": 128, "warps_n": 2, "stages": 3},                          # 128x128
    {"tile_n": 64, "warps_m": 4, "warps_n": 1, "stages": 4},             # 128x64
    {"tile_m": 64, "tile_n": 64, "warps_m": 2, "warps_n": 2},            # 64x64
)


# Stream-K pays where the last partial wave leaves at least this share of the SMs idle: timed in
# turns on an H200 (gemm_mma-h200-stream-k*.json in results/gemm_mma-history.tar.xz, NOTES.md v4),
# 24-85 % idle gained 0.8-2.3 % against cuBLAS, 12 % idle (4096^3) lost 1.0-1.3 % in three runs.
# Less than the idle share promises; a guess, not measured: under the power cap a partial wave on
# fewer SMs runs at a higher clock than the full one that replaces it.
STREAM_K_MIN_IDLE_SHARE = 0.2


def tuned_config(shape, dtype: str = "bfloat16", sms: int | None = None) -> dict[str, Any]:
    """Per-shape choice over MmaGemmConfig(): the largest candidate tile that gives every SM at
    least one tile, else the smallest. From H100 sweeps (gemm_mma-h100-skinny-sweep.json and
    -sweep2.json in benchmarks/results/gemm_mma-history.tar.xz, ratios to cuBLAS in one run): 128x4096x4096 0.34 -> 0.82 with 64x64 tiles; 512x4096x4096
    0.47 -> 0.74 with 128x64; 2048^3 0.65 -> 0.69 with 128x128; from 4096^3 up 128x256 stays
    best (128x128 at 0.85-0.96 of it). The same candidates ranked the same on an H200
    (gemm_mma-h200-candidates.json in gemm_mma-history.tar.xz). The 128x256 tile over several
    waves takes stream-K where the last wave leaves STREAM_K_MIN_IDLE_SHARE of the SMs idle or more."""
    M, N, K = problem_dims(shape, "gemm_mma")
    sms = sms or sm_count()
    for fields in SHAPE_CANDIDATES:
        cfg = MmaGemmConfig.from_mapping(fields)
        tiles = -(-M // cfg.tile_m) * -(-N // cfg.tile_n)
        if tiles >= sms:
            if not fields and _stream_k_pays(cfg, tiles, M, N, K, sms):
                return {"stream_k": True}
            return dict(fields)
    return dict(SHAPE_CANDIDATES[-1])


def _stream_k_pays(cfg: MmaGemmConfig, tiles: int, M: int, N: int, K: int, sms: int) -> bool:
    last = tiles % sms
    return (tiles > sms and last > 0 and 1 - last / sms >= STREAM_K_MIN_IDLE_SHARE
            and stream_k_share_out_of(cfg, M, N, K, sms).split_tiles > 0)


def resident_blocks_per_sm(registers: int, threads: int, smem_bytes: int, arch: str = "sm_90a") -> int:
    """Blocks of this kernel one SM holds at once, from its own resource usage: registers are
    allocated per warp in units of 256, shared memory per block plus 1 KiB the system reserves."""
    warps = -(-threads // 32)
    regs_per_warp = -(-max(registers, 1) * 32 // 256) * 256
    by_regs = REGISTERS_PER_SM // (regs_per_warp * warps)
    by_smem = SMEM_PER_SM[arch] // (smem_bytes + 1024) if smem_bytes else MAX_BLOCKS_PER_SM
    by_threads = THREADS_PER_SM[arch] // (warps * 32)
    return max(0, min(by_regs, by_smem, by_threads, MAX_BLOCKS_PER_SM))


def check_shape(shape: dict[str, int], dtype: str, b_major: str = "n"):
    M, N, K = problem_dims(shape, "gemm_mma")
    if dtype not in DTYPES:
        raise ConfigRejected(f"input dtype must be one of {DTYPES}, got {dtype}")
    if b_major not in B_MAJORS:
        raise ConfigRejected(f"b_major must be one of {B_MAJORS}, got {b_major!r}")
    b_contig = N if b_major == "n" else K
    if K % 8 or b_contig % 8:
        raise ConfigRejected(
            f"TMA needs 16-byte aligned rows: K={K} and the contiguous extent of B ({b_contig}) "
            "must be multiples of 8 elements")
    if N % 2:
        raise ConfigRejected(f"N={N} must be even (the epilogue stores column pairs)")
    return M, N, K


# ---------------------------------------------------------------------------------------------
# Compile / launch
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def _compiled(cfg: MmaGemmConfig, dtype: str, b_major: str, arch: str, use_gpu_tensors: bool):
    """Compile one variant. With a GPU the signature comes from real (dynamic-layout) tensors, so
    the result is directly callable with from_dlpack tensors; without, from fake tensors."""
    import cutlass.cute as cute

    from kernelscope.kernels.gemm_mma.kernel import MmaSyncGemm

    resolved = resolve_config(cfg, arch)
    gemm = MmaSyncGemm(resolved, dtype, b_major)
    if use_gpu_tensors:
        a, b_nk, c = _example_inputs(dtype, b_major)
        args = launch_operands(a, b_nk, c, b_major)
        stream = current_stream()
    else:
        args = list(fake_gemm_operands(dtype, dtype, "k", b_major, n_divisibility=_n_multiple(b_major)))
        stream = fake_stream()
    stream_k_args = []
    if cfg.stream_k:
        if use_gpu_tensors:
            partials, counters = _stream_k_workspace(StreamKPlan(1, 0, 1), cfg)
            stream_k_args = [to_cute(partials, leading_dim=0), to_cute(counters, leading_dim=0), 0]
        else:
            stream_k_args = [*fake_workspace(), 0]

    def build():
        return cute.compile(gemm, *args, 1, stream, *stream_k_args,
                            options=artifact_options("kernelscope-gemm-mma-", arch))

    key = (cfg, dtype, b_major, arch)
    return (launch_cache.reusable("gemm_mma", key, build) if use_gpu_tensors else build()), resolved


def _stream_k_workspace(share_out: StreamKPlan, cfg: MmaGemmConfig):
    """The partial sums and counters of a launch's share-out (a block is its own cluster)."""
    return allocate_workspace(share_out, 1, cfg.tile_m, cfg.tile_n, cfg.mma_warps)


def stream_k_share_out_of(cfg: MmaGemmConfig, M: int, N: int, K: int, blocks: int) -> StreamKPlan:
    """Which tiles a stream-K launch of `blocks` persistent blocks shares out (none where it
    does not pay, kernels/split_k_plan.py)."""
    tiles = -(-M // cfg.tile_m) * -(-N // cfg.tile_n)
    return stream_k_plan(tiles, blocks, -(-K // cfg.tile_k))


def _n_multiple(b_major: str) -> int:
    """What check_shape guarantees N to be a multiple of: 8 where N is B's contiguous extent
    (a TMA row), else 2 (the epilogue's column pairs)."""
    return 8 if b_major == "n" else 2


def launch_operands(a, b_nk, c, b_major: str) -> list:
    """A (M, K), B as (N, K) and C (M, N) as cute tensors declaring exactly what check_shape
    guarantees (K a multiple of 8, N of _n_multiple), as the inspected variant's fake operands
    do: both then compile to one kernel, and the launched epilogue stores column pairs."""
    n = _n_multiple(b_major)
    return [to_cute(a, divisibility=(1, 8)), to_cute(b_nk, divisibility=(n, 8)), to_cute(c, divisibility=(1, n))]


def _example_inputs(dtype, b_major, M=256, N=256, K=256):
    import torch
    tdt = getattr(torch, dtype)
    a = torch.empty((M, K), dtype=tdt, device="cuda")
    b_nk = torch.empty((K, N), dtype=tdt, device="cuda").t() if b_major == "n" else \
        torch.empty((N, K), dtype=tdt, device="cuda")
    c = torch.empty((M, N), dtype=tdt, device="cuda")
    return a, b_nk, c


def kernel_resources(cfg: MmaGemmConfig, dtype: str = "bfloat16", b_major: str = "n",
                     arch: str = "sm_90a", compiled=None) -> dict[str, int]:
    """Registers per thread, shared memory per block and the resident blocks per SM that follow,
    read from the compiled cubin (cuobjdump's resource report)."""
    resolved = resolve_config(cfg, arch)
    if compiled is None:
        compiled, _ = _compiled(cfg, dtype, b_major, arch, False)
    cubin, _ = artifacts(compiled)
    return _resources_of(cubin, cfg.threads, resolved.smem_bytes, arch)


@functools.lru_cache(maxsize=64)
def _resources_of(cubin: bytes, threads: int, ring_bytes: int, arch: str) -> dict[str, int]:
    from kernelscope.toolchain.cubin import function_resources

    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        resources, _ = function_resources(f.name)
    fn = next(r for r in resources.values() if r.registers is not None)
    # The ring is dynamic shared memory: the cubin's static figure does not include it.
    smem = ring_bytes + (fn.shared_bytes or 0)
    blocks = resident_blocks_per_sm(fn.registers, threads, smem, arch)
    return {"registers": fn.registers, "threads": threads, "smem_bytes": smem,
            "local_bytes": fn.local_bytes or 0, "stack_bytes": fn.stack_bytes or 0,
            "resident_blocks_per_sm": blocks}


def persistent_grid(cfg: MmaGemmConfig, dtype: str, b_major: str, compiled=None) -> tuple[int, dict[str, int]]:
    """Blocks to launch: the SM count times the blocks one SM holds (one for the shipped configs),
    from the kernel's own registers, shared memory and threads; with a cluster, the blocks of the
    clusters resident at once (the driver's answer)."""
    import torch
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    arch = _device_arch()
    res = kernel_resources(cfg, dtype, b_major, arch, compiled)
    if res["resident_blocks_per_sm"] < 1:
        raise ConfigRejected(f"gemm_mma {cfg}: no block fits on an SM ({res})")
    if cfg.cluster_size > 1:
        if res["resident_blocks_per_sm"] > 1:
            raise ConfigRejected(f"gemm_mma {cfg}: a cluster is built for one block per SM, this config fits "
                                 f"{res['resident_blocks_per_sm']}")
        return max_active_clusters(tuple(cfg.cluster)) * cfg.cluster_size, res
    return props.multi_processor_count * res["resident_blocks_per_sm"], res


def compile_gemm_mma(config: dict[str, Any] | MmaGemmConfig | None, shape: dict[str, int] | None = None,
                     dtype: str = "bfloat16", arch: str = "sm_90a", *, b_major: str = "n") -> CompiledKernel:
    """KernelSpec.compile: builds without a GPU (launch=None then) for sm_90a or sm_120a."""
    if arch not in ARCHS:
        raise ConfigRejected(f"gemm_mma builds for {', '.join(ARCHS)}, not {arch}")
    os.environ.setdefault("CUTE_DSL_ARCH", arch)
    extra = dict(config) if isinstance(config, dict) else {}
    b_major = extra.get("b_major", b_major)
    cfg = config if isinstance(config, MmaGemmConfig) else MmaGemmConfig.from_mapping(extra)
    if shape is not None:
        check_shape(shape, dtype, b_major)
    resolve_config(cfg, arch)
    runs_here = gpu_available() and arch == _device_arch()
    return compiled_kernel(lambda: _compiled(cfg, dtype, b_major, arch, False)[0],
                           (lambda inputs: bind_gemm_mma(cfg, inputs)) if runs_here else None)


def bind_gemm_mma(cfg: MmaGemmConfig, inputs) -> Callable[[], Any]:
    """Zero-argument launcher for {"a": (M, K), "b": (K, N), "out": (M, N)} (GPU only); the
    variant follows the tensors (dtype, B major), compiled once and cached."""
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    dtype = dtype_name(a.dtype)
    if b.dtype != a.dtype or out.dtype != a.dtype:
        raise ConfigRejected(f"A, B and out must share a dtype, got {a.dtype}, {b.dtype}, {out.dtype}")
    if a.stride(1) != 1:
        raise ConfigRejected("gemm_mma needs A row-major (K contiguous)")
    if out.stride(1) != 1:
        raise ConfigRejected("the output must be row-major")
    b_major = "n" if b.stride(1) == 1 else "k"
    M, K = a.shape
    K2, N = b.shape
    if K2 != K or tuple(out.shape) != (M, N):
        raise ConfigRejected(f"shapes do not chain: A {tuple(a.shape)}, B {tuple(b.shape)}, out {tuple(out.shape)}")
    check_shape({"M": M, "N": N, "K": K}, dtype, b_major)
    arch = _device_arch()
    resolve_config(cfg, arch)
    compiled, _ = _compiled(cfg, dtype, b_major, arch, True)
    blocks, _ = persistent_grid(cfg, dtype, b_major, compiled)
    args = [*launch_operands(a, b.t(), out, b_major), blocks, current_stream()]
    workspace = ()
    if cfg.stream_k:
        share_out = stream_k_share_out_of(cfg, M, N, K, blocks)
        workspace = _stream_k_workspace(share_out, cfg)
        args += [to_cute(t, leading_dim=0) for t in workspace] + [share_out.split_from]
    launch = launcher(compiled, tuple(args))
    launch.stream_k_workspace = workspace      # alive as long as the launcher
    return launch


def _device_arch() -> str:
    import torch
    return "sm_120a" if torch.cuda.get_device_properties(torch.cuda.current_device()).major == 12 else "sm_90a"


# ---------------------------------------------------------------------------------------------
# KernelSpec
# ---------------------------------------------------------------------------------------------

GEMM_MMA_SPEC = gemm_problem.gemm_spec(
    name="gemm_mma",
    description="ldmatrix.x4 + mma.sync m16n8k16 GEMM (the SM80/SM120 path): TMA stage ring, "
                "persistent grid, row/column/Morton raster",
    default_config=MmaGemmConfig().to_dict(),
    dtypes=list(DTYPES),
    compile=compile_gemm_mma,                  # the output has the input dtype (bytes_moved)
    shape_config=tuned_config,
    config_space={
        "tile_n": [128, 256],
        "warps_n": [2, 4],
        "wk_iters": [1, 2, 4],
        "stages": [None, 3, 4],
        "raster": ["row", "column", "morton"],
        "group": [4, 8, 16],
        "refill_at": [0, 1, 2],
        "stream_k": [False, True],
        "cluster": [[1, 1], [2, 1], [1, 2]],
    },
    expected_sass=["HMMA", "LDSM", "UTMALDG"],
    archs=list(ARCHS),
    tile=(128, 256),
)
