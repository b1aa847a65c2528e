"""FlashAttention-3 style attention forward for Hopper (sm_90a) in CuTe DSL.

O = softmax(Q K^T * scale) V per (batch, head), bf16 or fp16 in and out, fp32 softmax and
accumulation. Tensors are (B, S, H, D) ("bshd", as flash-attn lays them out); D is 64 or 128;
any B, H and S (S not a multiple of the tile is masked); causal or not (queries and keys share S).

CTA = 1 producer warpgroup + 2 math warpgroups (3 with qk_mn (192, N)), one Q tile of 64 rows per
math warpgroup
against K/V blocks of 128 rows (or qk_mn[1], see below).
- Producer: warp 0 walks the persistent schedule (work = (query tile, head, batch), the query
  tiles of one head in a row so that its K and V stay in L2; causal: longest tiles first) and
  issues TMA loads. With dynamic_schedule (the default) a CTA's
  next work item is the next one not yet taken (a global counter, kernels/sm90/work_queue.py),
  handed to the math warps through shared memory; otherwise CTA c takes c, c + grid, ...
  Q has its own full/empty mbarrier pair: the math warps release it after the
  last Q K^T of a tile, and the next tile's Q is loaded while they finish P V and the epilogue.
  K and V go through two rings of `num_stages` buffers (kernels/sm90/pipeline.py, TmaRing), so
  Q K^T of a block can start before its V has landed. The producer warpgroup gives registers
  back (setmaxnreg 24), the math warpgroups take them (240).
- Math warpgroup: S = Q K^T by WGMMA from shared memory; masking (only the first block visited,
  n = last, can need it: keys past S, and the diagonal block when causal); online softmax in
  fp32 with exp2 (scale folded into log2 e); P converted to 16 bits in registers and fed as the
  register A operand of O += P V (V^T from shared memory, MN-major). The register layouts are
  checked when the kernel is built: every row of S lives in the four lanes of one quad (so one
  warp), S and O put a thread's values in the same two rows, and P's A fragment is S's
  accumulator in the same register order (kernels below: `check_fragments`).
- intra_wg_overlap: per block j the warpgroup issues Q K^T for block j+1 and P V for block j
  back to back, and runs the softmax of j+1 while P V runs.
- pingpong: the math warpgroups take turns issuing their WGMMAs (kernels/sm90/pingpong.py over
  AttentionBarrier.TURN_WG*), so one warpgroup's softmax overlaps the other's matrix products;
  with first_block_turn a tile's first Q K^T takes its turn too, so a tile starts staggered.
- Epilogue: O / rowsum -> 16 bits -> stmatrix into a shared buffer of its own -> TMA store
  (kernels/sm90/epilogue.py); TMA clips rows past S. With wg_epilogue each math warpgroup stores
  its own 64 rows (its buffers, barrier and store warp), so its epilogue runs while the others
  still compute. With o_reuses_q the buffer is Q's: the
  math warpgroups meet after their last Q K^T, and Q goes back to the producer once O's stores
  have read it.
- Key blocks: 128 wide (square tiles, any case) or, without the causal mask, any multiple of 16
  up to 256 within the register budget; tuned_config picks per shape.
- tail_parts (not causal): the keys of the grid's last, partial wave of tiles are cut into
  ranges that the otherwise idle CTAs run; the piece holding a tile's last key block merges the
  other pieces' softmax states (kernels/sm90/split_k.py) and stores O. The host's plan
  (tail_plan) prices each piece at its keys plus a measured overhead and picks what ends first:
  equal parts per tile, in rounds of CTAs, or (tail_cross_tiles) one round of equal ranges, a
  range that crosses a tile boundary being two pieces.
  cluster_size_m=2: a pair of CTAs shares each K and V block by TMA multicast (a knob; the fixed
  stride only).

This module (config, checks, compile and launch, the KernelSpec) does not import the DSL; the
kernel class is in kernel.py, imported when a variant is compiled.
"""

# No `from __future__ import annotations`: the DSL evaluates kernel annotations at compile time.
import functools
import math
import os
from dataclasses import dataclass, replace
from typing import Any, Callable

from kernelscope.kernels import cute_build, launch_cache
from kernelscope.kernels.config import KernelConfig
from kernelscope.kernels.sm90.device import SMEM_PER_BLOCK_BYTES, SMEM_RESERVED_BYTES, l2_bytes, sm_count
from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec

DTYPES = ("bfloat16", "float16")
HEAD_DIMS = (64, 128)
# Math warpgroups (64 query rows each) -> (producer, math) registers per thread after
# setmaxnreg: 128 x producer + 128 x math_wgs x math <= 65536.
REGISTER_SPLIT = {2: (24, 240), 3: (32, 160)}
COUNTER_WORDS = 2           # the work queue's global counter (kernels/sm90/work_queue.py)
EPI_N = 32                  # epilogue subtile width (columns of O)
LOG2E = 1.4426950408889634

# (dtype width, head dim, key block) -> (S row map, O row map, S column offsets) of the last
# kernel built with them: what check_fragments returned while tracing it.
FRAGMENT_ROW_MAPS: dict[tuple[int, int, int], tuple] = {}
# Named barriers: kernels/sm90/barriers.py, AttentionBarrier.


@dataclass(frozen=True)
class FlashAttnConfig(KernelConfig):
    KERNEL = "flash_attn"
    PAIRS = ("qk_mn",)
    TEXT_FLAGS = ("intra_wg_overlap", "pingpong", "o_reuses_q", "dynamic_schedule", "wg_epilogue", "first_block_turn")

    qk_mn: tuple[int, int] = (128, 128)
    num_stages: int = 2
    cluster_size_m: int = 1
    intra_wg_overlap: bool = True
    pingpong: bool = True
    # O staged in Q's shared memory (same size: tile_m x D) instead of a buffer of its own: frees
    # 16/32 KiB (3 stages, or wider key blocks, at D=128); the next tile's Q then waits until O's
    # TMA stores have read it.
    o_reuses_q: bool = False
    # Work items (query tiles) taken from a global counter by the next free CTA (kernels/sm90/
    # work_queue.py) instead of a fixed stride: the SMs finish together where tiles differ in
    # cost (causal) and where the tile count is not a multiple of the CTAs.
    dynamic_schedule: bool = True
    # Each math warpgroup stores its own 64 rows of O (its own buffers, named barrier and store
    # warp) instead of all math warpgroups storing the tile together: a warpgroup's epilogue then
    # runs while the others still issue their last matrix products, and the turn order survives
    # the tile boundary. Same shared memory (the O buffer split by warpgroup).
    wg_epilogue: bool = False
    # With ping-pong and the overlapped loop, a tile's first Q K^T also waits for its warpgroup's
    # turn, so the warpgroups start a tile staggered instead of all issuing at once and then all
    # running their first softmax while the tensor pipe idles (v8 in NOTES.md).
    first_block_turn: bool = True
    # Where the query tiles do not fill the last wave of the persistent grid (tiles % CTAs), the
    # last wave's tiles are cut along the keys into up to this many parts, run by the CTAs that
    # would otherwise idle; each tile's last part merges the others' softmax states
    # (kernels/sm90/split_k.py). 0 or 1: off. Not causal (tiles of unequal cost are the work
    # queue's to balance).
    tail_parts: int = 0
    # With tail_parts: the last wave's keys may also be cut into one round of ranges that cross
    # tile boundaries (as many as the CTAs, each the same share of the keys), where the plan
    # prices that ending sooner than equal parts per tile (tail_plan). Host only: the kernel
    # runs either plan.
    tail_cross_tiles: bool = True


def smem_bytes(cfg: FlashAttnConfig, head_dim: int) -> int:
    tm, tn = cfg.qk_mn
    q = tm * head_dim * 2
    kv = 2 * cfg.num_stages * tn * head_dim * 2
    o = 0 if cfg.o_reuses_q else tm * EPI_N * 2 * epi_stages(head_dim)
    work = 1024 if cfg.dynamic_schedule else 0      # the work queue's slots, one aligned buffer
    return q + kv + o + work + SMEM_RESERVED_BYTES


def epi_stages(head_dim: int) -> int:
    # Every subtile of O gets its own buffer: the stores of a tile never wait on each other.
    return head_dim // EPI_N


# Registers a math thread may lock in WGMMA fragments at once in the overlapped loop (S, P and
# O: tn/2 + tn/4 + D/2), leaving the softmax and the loop ~32 of its setmaxnreg budget.
LOCKED_REGS_MAX = {2: 208, 3: 128}


def math_warpgroups(cfg: "FlashAttnConfig") -> int:
    return cfg.qk_mn[0] // 64


def validate(cfg: FlashAttnConfig, head_dim: int | None = None, causal: bool | None = None) -> None:
    """Raise ConfigRejected with the reason when the config (and head dim, causal flag) cannot
    be built."""
    tm, tn = tuple(cfg.qk_mn)
    if tm not in (128, 192):
        raise ConfigRejected(f"qk_mn[0] must be 128 or 192 (two or three math warpgroups of 64 query "
                             f"rows), got {tm}")
    if tn != 128 and not (64 <= tn <= 256 and tn % 16 == 0):
        raise ConfigRejected(f"qk_mn[1] (keys per block) must be a multiple of 16 in 64..256, got {tn}")
    if causal and (tm, tn) != (128, 128):
        raise ConfigRejected(
            f"causal attention needs square tiles, qk_mn=(128, 128) (only the diagonal block is "
            f"masked), got {(tm, tn)}")
    wgs = tm // 64
    if head_dim is not None and tn // 2 + tn // 4 + head_dim // 2 > LOCKED_REGS_MAX[wgs]:
        raise ConfigRejected(
            f"qk_mn={(tm, tn)} at head dim {head_dim} locks {tn // 2 + tn // 4 + head_dim // 2} "
            f"registers per thread in S, P and O, over the {LOCKED_REGS_MAX[wgs]} that {wgs} math "
            f"warpgroups ({REGISTER_SPLIT[wgs][1]} registers each) can spare")
    if cfg.num_stages not in (2, 3):
        raise ConfigRejected(f"num_stages must be 2 or 3, got {cfg.num_stages}")
    if cfg.cluster_size_m not in (1, 2):
        raise ConfigRejected(f"cluster_size_m must be 1 or 2 (K/V multicast to a pair of query tiles), "
                             f"got {cfg.cluster_size_m}")
    if cfg.cluster_size_m == 2:
        if causal:
            raise ConfigRejected("cluster_size_m=2 needs non-causal attention: the two query tiles of "
                                 "a cluster must visit the same key blocks")
        if cfg.dynamic_schedule:
            raise ConfigRejected("cluster_size_m=2 needs dynamic_schedule=false: the work queue hands "
                                 "out single query tiles, a cluster takes pairs")
    if not all(isinstance(f, bool) for f in (cfg.intra_wg_overlap, cfg.pingpong, cfg.o_reuses_q,
                                             cfg.dynamic_schedule, cfg.wg_epilogue, cfg.first_block_turn,
                                             cfg.tail_cross_tiles)):
        raise ConfigRejected("intra_wg_overlap, pingpong, o_reuses_q, dynamic_schedule, wg_epilogue, "
                             "first_block_turn and tail_cross_tiles must be true or false")
    if not isinstance(cfg.tail_parts, int) or isinstance(cfg.tail_parts, bool) or not 0 <= cfg.tail_parts <= 16:
        raise ConfigRejected(f"tail_parts must be an integer in 0..16, got {cfg.tail_parts!r}")
    if cfg.tail_parts >= 2:
        if causal:
            raise ConfigRejected("tail_parts needs non-causal attention (causal tiles differ in cost; the "
                                 "work queue balances them)")
        if cfg.cluster_size_m != 1 or cfg.o_reuses_q:
            raise ConfigRejected("tail_parts cannot be combined with cluster_size_m=2 or o_reuses_q")
    if cfg.wg_epilogue and cfg.o_reuses_q:
        raise ConfigRejected("wg_epilogue needs O's own buffer: O staged in Q's buffer (o_reuses_q) "
                             "is stored by all math warpgroups together")
    if head_dim is not None:
        if head_dim not in HEAD_DIMS:
            raise ConfigRejected(f"head dim must be one of {HEAD_DIMS}, got {head_dim}")
        need = smem_bytes(cfg, head_dim)
        if need > SMEM_PER_BLOCK_BYTES:
            raise ConfigRejected(
                f"num_stages={cfg.num_stages} at head dim {head_dim} needs {need} bytes of shared "
                f"memory (Q, {cfg.num_stages} K and V stages"
                f"{'' if cfg.o_reuses_q else ', an O buffer of its own (o_reuses_q=true saves it)'}), "
                f"the limit is {SMEM_PER_BLOCK_BYTES}")


# What a piece of a split tile costs beyond its key blocks (its state written, waited for and
# merged, its Q and first blocks loaded again), in multiply-adds: about 7 key blocks of a 128 x 160
# tile at D=128. Fitted on an H100 at 1x16x16384x128 (68 tiles in the last wave, 103 key blocks a
# tile), timed in turns against 7 parts: 3 parts 0.997, 5 parts 0.997, no split 1.003
# (kernels/flash_attn/NOTES.md, v10). Without it the plan took 7 parts there, 4 rounds of them.
PIECE_OVERHEAD_MACS = 7 * 128 * 160 * 128


def part_overhead_blocks(tile_m: int, tile_n: int, head_dim: int) -> float:
    """PIECE_OVERHEAD_MACS (a piece's cost beyond its keys) in key blocks of this tile."""
    return PIECE_OVERHEAD_MACS / (tile_m * tile_n * head_dim)


def tail_plan(tiles: int, takers: int, key_blocks: int, max_parts: int,
              overhead_blocks: float = 0.0, cross_tiles: bool = True) -> tuple[int, int]:
    """(split_from, ranges) of one launch: the tiles from split_from on are the last, partial
    wave's; their key blocks, laid end to end (tile after tile), are cut into `ranges` equal
    ranges, one work item each; (tiles, 0) when nothing is split.

    Two kinds of plan, each priced in tiles, a piece of work costing its key blocks plus
    `overhead_blocks` (what a part costs beyond its keys: its state written, waited for and
    merged, its Q and first blocks loaded again):
    - every tile in `parts` equal parts (2..max_parts, at most the key blocks), ranges = tail x
      parts, taken in rounds of `takers`: rounds x (1 / parts + overhead);
    - with cross_tiles, one round of `ranges` (tail < ranges <= takers) that may cross a tile
      boundary: a range that does is two pieces (the start of one tile, the end of the one
      before), so the round ends with the longest range plus its pieces' overheads.
    The plan that ends first wins, the equal parts among equals; no split unless it beats the
    whole tiles' 1. Tiles cut into more than max_parts pieces are not considered."""
    tail = tiles % takers
    if tail == 0 or max_parts < 2:
        return tiles, 0
    best, best_ranges = 1.0, 0
    blocks = tail * key_blocks

    def fits(ranges: int) -> bool:      # the kernel's 32-bit range arithmetic
        return (ranges + 1) * blocks < 2 ** 31

    for parts in range(2, min(max_parts, key_blocks) + 1):
        finish = math.ceil(tail * parts / takers) * (1 / parts + overhead_blocks / key_blocks)
        if finish < best - 1e-9 and fits(tail * parts):
            best, best_ranges = finish, tail * parts
    if cross_tiles:
        for ranges in range(tail + 1, min(takers, blocks) + 1):
            if ranges % tail == 0 or not fits(ranges):
                continue    # equal parts, priced above
            pieces = tail_pieces(tail, key_blocks, ranges)
            per_tile = [0] * tail
            per_range = [0.0] * ranges
            for p in pieces:
                per_tile[p.tile] += 1
                per_range[p.range] += p.blocks + overhead_blocks
            if max(per_tile) > max_parts:
                continue
            finish = max(per_range) / key_blocks
            if finish < best - 1e-9:
                best, best_ranges = finish, ranges
    return (tiles - tail, best_ranges) if best_ranges else (tiles, 0)


@dataclass(frozen=True)
class TailPiece:
    """A piece of a split tile's keys: range `range` of the plan, `piece` 0 or 1 of it."""
    range: int
    piece: int
    tile: int           # among the split tiles
    first_block: int    # of the tile's key blocks
    blocks: int
    reducer: bool       # holds the tile's last key block: merges the others' states, stores O
    first_writer: int   # reducer only: the tile's first range; ranges first_writer.. range - 1 write


def tail_pieces(tail_tiles: int, key_blocks: int, ranges: int) -> list[TailPiece]:
    """The pieces of a plan in work order, by the integer arithmetic the kernel does per work
    item (FlashAttentionSm90.work_item): range c covers blocks [c L / R, (c + 1) L / R) of the
    tiles' L = tail_tiles x key_blocks blocks. A range inside one tile is one piece; one that
    crosses a tile boundary is two, the later tile's start first (piece 0, a writer: it never
    waits) and then the earlier tile's end (piece 1, that tile's reducer), so a reducer waits
    only on first pieces of lower ranges, which wait on nothing."""
    n, total = key_blocks, tail_tiles * key_blocks
    out = []
    for c in range(ranges):
        b0, b1 = c * total // ranges, (c + 1) * total // ranges
        a = b0 // n
        boundary = (a + 1) * n
        crosses = b1 > boundary
        spans = [(a + 1, boundary, b1), (a, b0, boundary)] if crosses else [(a, b0, b1)]
        for j, (t, start, end) in enumerate(spans):
            reducer = end == (t + 1) * n
            first_writer = ((t * n + 1) * ranges + total - 1) // total - 1
            out.append(TailPiece(c, j, t, start - t * n, end - start, reducer, first_writer))
    return out


def tail_state_values(head_dim: int) -> int:
    """fp32 values a math thread exchanges per part: its O accumulators (64 rows x D over 128
    threads) and two rows' maximum and sum."""
    return head_dim // 2 + 4


def tail_workspace_sizes(cfg: "FlashAttnConfig", head_dim: int, tiles: int, split_from: int,
                         ranges: int) -> tuple[int, int]:
    """(fp32 partial-state words, int32 counters) of a launch's tail plan (at least 1 each): a
    state slot per range (its writer piece's), a counter per split tile and math warp."""
    threads = 128 * math_warpgroups(cfg)
    split_tiles = tiles - split_from
    return (max(1, ranges * tail_state_values(head_dim) * threads),
            max(1, split_tiles * threads // 32))


def check_shape(shape, dtype: str) -> tuple[int, int, int, int, bool]:
    try:
        B, H, S, D = (int(shape[k]) for k in ("B", "H", "S", "D"))
    except (KeyError, TypeError, ValueError):
        raise ConfigRejected(f"flash_attn shape needs integer B, H, S, D, got {dict(shape)}") from None
    if min(B, H, S) < 1:
        raise ConfigRejected(f"flash_attn shape must be positive, got B={B} H={H} S={S}")
    if D not in HEAD_DIMS:
        raise ConfigRejected(f"head dim D must be one of {HEAD_DIMS}, got {D}")
    if dtype not in DTYPES:
        raise ConfigRejected(f"dtype must be one of {DTYPES}, got {dtype}")
    return B, H, S, D, bool(int(shape.get("causal", 0)))


# ---------------------------------------------------------------------------------------------
# Register fragments: the checks the softmax relies on (plain Python, run while tracing).
# ---------------------------------------------------------------------------------------------

def _coords(tv, t: int, v: int, rows: int) -> tuple[int, int]:
    idx = tv((t, v))
    return idx % rows, idx // rows


def check_fragments(tv_s, tv_o, tv_p, threads: int, tile_m: int, s_values: int, o_values: int,
                    p_values_per_block: int, k_block: int):
    """For (thread, value) -> flat-index layouts of S (accumulator of Q K^T), O (accumulator of
    P V) and P (register A operand of P V, one k-block): returns (S row map, O row map, S column
    offsets): the row (0 or 1: first or second of the thread's two rows) of each value, and the
    column of each S value relative to the thread's value 0 (the same for every thread).
    Raises AssertionError when a row's values are spread beyond one warp, when a thread's O
    rows differ from its S rows, when P's registers do not hold S's values in S's order, or
    when the column offsets depend on the thread."""
    s_half = o_half = s_cols = None
    holders: dict[int, set[int]] = {}
    for t in range(threads):
        s_rows = [_coords(tv_s, t, v, tile_m)[0] for v in range(s_values)]
        o_rows = [_coords(tv_o, t, v, tile_m)[0] for v in range(o_values)]
        for r in s_rows:
            holders.setdefault(r, set()).add(t)
        base = min(s_rows)
        if set(s_rows) != {base, base + 8} or set(o_rows) != set(s_rows):
            raise AssertionError(f"thread {t}: S rows {sorted(set(s_rows))}, O rows {sorted(set(o_rows))}; "
                                 "expected the same two rows r and r + 8")
        sh = tuple((r - base) // 8 for r in s_rows)
        oh = tuple((r - base) // 8 for r in o_rows)
        c0 = _coords(tv_s, t, 0, tile_m)[1]
        sc = tuple(_coords(tv_s, t, v, tile_m)[1] - c0 for v in range(s_values))
        if sh[0] != 0:
            raise AssertionError(f"thread {t}: value 0 is not in the thread's first row")
        if s_half is None:
            s_half, o_half, s_cols = sh, oh, sc
        elif sh != s_half or oh != o_half or sc != s_cols:
            raise AssertionError(f"thread {t} maps values to rows or columns differently from thread 0")
        for i in range(s_values):
            blk, v = divmod(i, p_values_per_block)
            pm, pk = _coords(tv_p, t, v, tile_m)
            if (pm, pk + blk * k_block) != _coords(tv_s, t, i, tile_m):
                raise AssertionError(f"thread {t}: P register {i} holds element {(pm, pk + blk * k_block)}, "
                                     f"S register {i} element {_coords(tv_s, t, i, tile_m)}")
    for r, ts in holders.items():
        if len({t // 32 for t in ts}) != 1 or len(ts) != 4:
            raise AssertionError(f"row {r} of S is held by threads {sorted(ts)}, not one quad of one warp")
    return s_half, o_half, s_cols


# ---------------------------------------------------------------------------------------------
# Compile / launch
# ---------------------------------------------------------------------------------------------

def _fake_operands(dtype: str, head_dim: int):
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor

    dt = cute_build.cutlass_dtype(dtype)
    b, s, h = cute.sym_int32(), cute.sym_int32(), cute.sym_int32()
    # (B, S, H, D) row-major; the head dim is static, so every stride but D's is a multiple of it.
    return [make_fake_compact_tensor(dt, (b, s, h, head_dim), stride_order=(3, 2, 1, 0), assumed_align=16)
            for _ in range(4)] + [make_fake_compact_tensor(cutlass.Int32, (cute.sym_int32(),))]


@functools.lru_cache(maxsize=64)
def _compiled(cfg: FlashAttnConfig, dtype: str, head_dim: int, causal: bool, use_gpu_tensors: bool):
    """Compile one variant. With a GPU the signature comes from real (dynamic-layout) tensors, so
    the result is callable with from_dlpack tensors; without, from fake tensors."""
    import cutlass
    import cutlass.cute as cute

    from kernelscope.kernels.flash_attn.kernel import FlashAttentionSm90

    kernel = FlashAttentionSm90(cfg, dtype, head_dim, causal)
    if use_gpu_tensors:
        import torch
        x = torch.empty((1, 128, 1, head_dim), dtype=getattr(torch, dtype), device="cuda")
        args = [cute_build.to_cute(x, leading_dim=3) for _ in range(4)] + [_work_counter(x.device)]
        stream = cute_build.current_stream()
    else:
        args = _fake_operands(dtype, head_dim)
        stream = cute_build.fake_stream()
    tail_args = []
    if cfg.tail_parts >= 2:
        # Shapes only: a launch binds its own workspace and plan.
        if use_gpu_tensors:
            import torch
            tail_args = [cute_build.to_cute(torch.empty(1, dtype=t, device="cuda"), leading_dim=0)
                         for t in (torch.float32, torch.int32)] + [0, 1]
        else:
            tail_args = [*cute_build.fake_workspace(), 0, 1]

    def build():
        return cute.compile(kernel, *args, cutlass.Float32(1.0), 1, 1, stream, *tail_args,
                            options=cute_build.artifact_options("kernelscope-flash-"))

    key = (cfg, dtype, head_dim, causal)
    return launch_cache.reusable("flash_attn", key, build) if use_gpu_tensors else build()


def _work_counter(device):
    """The work queue's global words (kernels/sm90/work_queue.py), zero, owned by one launcher
    (the kernel leaves them zero after each launch). Passed to every variant; only those with
    dynamic_schedule read them."""
    import torch
    return cute_build.to_cute(torch.zeros(COUNTER_WORDS, dtype=torch.int32, device=device), leading_dim=0)


def _config_of(config) -> FlashAttnConfig:
    return config if isinstance(config, FlashAttnConfig) else FlashAttnConfig.from_mapping(config)


def compile_flash_attn(config: dict[str, Any] | FlashAttnConfig | None, shape: dict[str, int] | None = None,
                       dtype: str = "bfloat16", arch: str = "sm_90a") -> CompiledKernel:
    """KernelSpec.compile: works without a GPU (launch=None then). The variant is fixed by the
    config, dtype, head dim and causal flag of `shape` (default D=128, not causal)."""
    if arch not in ("sm_90a", "sm_90"):
        raise ConfigRejected(f"the flash_attn kernel is built for sm_90a, not {arch}")
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    cfg = _config_of(config)
    shape = dict(shape or {"B": 1, "H": 1, "S": 128, "D": 128, "causal": 0})
    _, _, _, D, causal = check_shape(shape, dtype)
    validate(cfg, D, causal)
    bind = (lambda inputs: bind_flash_attn(cfg, inputs)) if cute_build.gpu_available() else None
    return cute_build.compiled_kernel(lambda: _compiled(cfg, dtype, D, causal, False), bind)


def section_heads(seqlen: int, head_dim: int, elem_bytes: int, pairs: int, l2: int | None = None) -> int:
    """(batch, head) pairs per section of the causal schedule: as many as have their K and V in
    half of L2 together (the other half for Q, O and what the other sections leave), at least
    one, at most all."""
    kv_per_pair = 2 * seqlen * head_dim * elem_bytes
    budget = (l2 if l2 is not None else l2_bytes()) // 2
    return max(1, min(pairs, budget // max(kv_per_pair, 1)))


def bind_flash_attn(cfg: FlashAttnConfig, inputs) -> Callable[[], Any]:
    """Zero-argument launcher for inputs {q, k, v, out: (B, S, H, D), causal, softmax_scale}
    (GPU only). Compiled once per variant; operands converted here, once."""
    q, k, v, out = inputs["q"], inputs["k"], inputs["v"], inputs["out"]
    if inputs.get("layout", "bshd") != "bshd":
        raise ConfigRejected("flash_attn takes (B, S, H, D) tensors (layout bshd)")
    if not (q.shape == k.shape == v.shape == out.shape) or q.dim() != 4:
        raise ConfigRejected(f"q, k, v, out must share one (B, S, H, D) shape, got "
                             f"{tuple(q.shape)} {tuple(k.shape)} {tuple(v.shape)} {tuple(out.shape)}")
    if any(not t.is_contiguous() for t in (q, k, v, out)):
        raise ConfigRejected("q, k, v and out must be contiguous (B, S, H, D) tensors")
    if len({q.dtype, k.dtype, v.dtype, out.dtype}) != 1:
        raise ConfigRejected("q, k, v and out must share a dtype")
    if out.data_ptr() == q.data_ptr():
        raise ConfigRejected("out must be a buffer separate from q")
    dtype = str(q.dtype).replace("torch.", "")
    B, S, H, D = q.shape
    causal = bool(inputs.get("causal", False))
    check_shape({"B": B, "H": H, "S": S, "D": D}, dtype)
    validate(cfg, D, causal)
    scale = inputs.get("softmax_scale")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    import cutlass
    # The persistent grid's size in work takers: CTAs, or clusters of cluster_size_m CTAs.
    takers = sm_count() if cfg.cluster_size_m == 1 else cute_build.max_active_clusters((cfg.cluster_size_m, 1))
    if cfg.tail_parts >= 2:
        tm, tn = cfg.qk_mn
        tiles = math.ceil(S / tm) * B * H
        split_from, ranges = tail_plan(tiles, takers, math.ceil(S / tn), cfg.tail_parts,
                                       part_overhead_blocks(tm, tn, D), cfg.tail_cross_tiles)
        if ranges == 0:
            # Nothing to split (the tiles fill whole waves): the variant without the split, whose
            # tiles run faster (at 128 x 160, D=128: 1.1 % on an H100, kernels/flash_attn/NOTES.md v11).
            cfg = replace(cfg, tail_parts=0)
    compiled = _compiled(cfg, dtype, D, causal, True)
    args = [*(cute_build.to_cute(t, leading_dim=3) for t in (q, k, v, out)), _work_counter(q.device),
            cutlass.Float32(scale * LOG2E),
            takers, section_heads(S, D, q.element_size(), B * H), cute_build.current_stream()]
    workspace = ()
    if cfg.tail_parts >= 2:
        import torch
        words, counters = tail_workspace_sizes(cfg, D, tiles, split_from, ranges)
        # The counters return to zero at the end of every launch.
        workspace = (torch.empty(words, dtype=torch.float32, device=q.device),
                     torch.zeros(counters, dtype=torch.int32, device=q.device))
        args += [cute_build.to_cute(t, leading_dim=0) for t in workspace] + [split_from, ranges]
    launch = cute_build.launcher(compiled, args)
    launch.tail_workspace = workspace      # alive as long as the launcher
    return launch


# ---------------------------------------------------------------------------------------------
# KernelSpec
# ---------------------------------------------------------------------------------------------

SUITE = [
    {"B": 2, "H": 8, "S": 8192, "D": 64, "causal": 0},
    {"B": 4, "H": 16, "S": 8192, "D": 128, "causal": 0},
    {"B": 4, "H": 16, "S": 8192, "D": 128, "causal": 1},
    {"B": 16, "H": 16, "S": 2048, "D": 128, "causal": 0},
    {"B": 1, "H": 16, "S": 16384, "D": 128, "causal": 0},
]


def tuned_config(shape, dtype: str = "bfloat16") -> dict[str, Any]:
    """Per-shape choice over FlashAttnConfig(), from paired round-robin timings on an H200
    (benchmarks/results/flash_attn-history.tar.xz, in git at b714dac): without the causal mask, wider key blocks cut
    the per-block softmax and barrier work per score: at D=128 (128, 160) took 0.966-1.007x
    the time of (128, 128) over three runs and three shapes, ~1.4% less on average (wider still
    needs O in Q's buffer, whose later Q load costs more than it gains). At D=64 three math
    warpgroups, (192, 128): 1.7% faster than (128, 192) with 3 stages, which was ~1% faster
    than (128, 128); the exponentials cost as much as the matrix products there, and more warps
    interleave them better. Causal keeps square tiles (the mask needs them).
    The work queue (dynamic_schedule, the default) against the fixed stride, in turns on an H100
    (two runs) and an H200: faster causal (1.8-2.9 %), at D=64 (0.9-1.3 %) and at S=2048 (0.5-1.2 %);
    0.3-0.9 % slower non-causal at D=128 from S=8192 (long tiles of equal cost) on its own.
    An epilogue per math warpgroup (wg_epilogue), in turns on an H200 and an H100: at D=128 with
    S < 8192 (short key loops, where a tile's epilogue is a larger share) 2.8-2.9 % faster at
    16x16x2048x128, 1.5 % at S=4096, 4.8 % at S=1024, 1.0-1.2 % causal at S=2048 and 4096;
    2.2-2.4 % slower with three math warpgroups (D=64). From S=8192 non-causal it is within 0.2 %
    with the fixed stride, but with the work queue (and a tile's first Q K^T taking its turn,
    v8) 0.6-1.0 % faster than the fixed stride alone (three runs, both GPUs): so there too.
    Causal from S=8192: within 0.2 % either way, left off.
    The last wave split along the keys (tail_parts=8; without the causal mask), in turns on an
    H100 (three runs) and an H200: 7.8-8.8 % faster at 2x8x8192x64 (688 tiles of 192 rows on 132
    SMs: the sixth wave holds 28), 1.1-1.2 % at 4x16x8192x128, 0.2-0.5 % at 16x16x2048x128 and
    1x16x16384x128 (v9 in NOTES.md); 0.6 % at 1x16x16384x128 since the plan prices each round of
    parts (3 parts instead of 7; v10, three H100 runs)."""
    if int(shape.get("causal", 0)):
        short = int(shape["D"]) == 128 and int(shape["S"]) < 8192
        return {"wg_epilogue": True} if short else {}
    if int(shape["D"]) == 128:
        return {"qk_mn": (128, 160), "wg_epilogue": True, "tail_parts": 8}
    return {"qk_mn": (192, 128), "tail_parts": 8}


def check_config(config, shape, dtype: str = "bfloat16") -> None:
    """KernelSpec.config_check: ConfigRejected when `config` cannot be built for `shape`."""
    _, _, _, D, causal = check_shape(shape, dtype)
    validate(_config_of(config), D, causal)


def make_inputs(shape, dtype: str = "bfloat16", seed: int = 0, device: str = "cuda"):
    import torch
    B, H, S, D, causal = check_shape(shape, dtype)
    g = torch.Generator(device="cpu").manual_seed(seed)
    tdt = getattr(torch, dtype)
    q, k, v = (torch.randn((B, S, H, D), generator=g, dtype=torch.float32).to(tdt).to(device)
               for _ in range(3))
    # NaN-poisoned output: an element the kernel never writes shows up as an error.
    out = torch.full((B, S, H, D), float("nan"), dtype=tdt, device=device)
    return {"q": q, "k": k, "v": v, "out": out, "layout": "bshd", "causal": causal}


def _attention(q, k, v, causal: bool, scale: float | None):
    """Plain attention in the precision of q, k, v; (B, S, H, D) in and out."""
    import torch
    D = q.shape[-1]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
    s = torch.matmul(qh, kh.transpose(-1, -2)) * scale
    if causal:
        S = q.shape[1]
        keep = torch.ones((S, S), dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s.float(), dim=-1).to(q.dtype)
    return torch.matmul(p, vh).transpose(1, 2)


def reference_fp32(inputs):
    return _attention(inputs["q"].float(), inputs["k"].float(), inputs["v"].float(),
                      bool(inputs.get("causal", False)), inputs.get("softmax_scale"))


def torch_reference(inputs):
    return _attention(inputs["q"], inputs["k"], inputs["v"], bool(inputs.get("causal", False)),
                      inputs.get("softmax_scale"))


def attention_flops(shape) -> float:
    B, H, S, D = (int(shape[k]) for k in ("B", "H", "S", "D"))
    full = 4.0 * B * H * S * S * D
    # Causal: the unmasked half (the convention flash-attn and cuDNN benchmarks use).
    return full / 2 if int(shape.get("causal", 0)) else full


FLASH_ATTN_SPEC = KernelSpec(
    name="flash_attn",
    description="FlashAttention-3 style forward for sm_90a: TMA Q/K/V rings, WGMMA S = Q K^T and "
                "O += P V with P in registers, online exp2 softmax, intra-warpgroup overlap, "
                "ping-pong math warpgroups, persistent schedule, TMA-store epilogue",
    references=["sdpa", "sdpa.cudnn", "sdpa.flash", "fa4"],
    default_shapes=[dict(s) for s in SUITE],
    default_config=FlashAttnConfig().to_dict(),
    dtypes=list(DTYPES),
    make_inputs=make_inputs,
    compile=compile_flash_attn,
    reference_fp32=reference_fp32,
    flops=attention_flops,
    bytes_moved=lambda s, dt: 2.0 * 4 * s["B"] * s["S"] * s["H"] * s["D"],
    tolerance={"bfloat16": (2e-2, 2e-2), "float16": (5e-3, 5e-3)},
    config_space={
        "num_stages": [2, 3],
        "intra_wg_overlap": [True, False],
        "pingpong": [True, False],
        "dynamic_schedule": [True, False],
        "wg_epilogue": [True, False],
        "tail_parts": [0, 8],
    },
    expected_sass=["HGMMA", "UTMALDG", "UTMASTG"],
    output_dims=("batch", "seq", "head", "dim"),
    tile=(1, 128, 1, 128),
    torch_reference=torch_reference,
    shape_config=tuned_config,
    config_check=check_config,
)
