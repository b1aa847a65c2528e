"""FlashAttention-3 style attention forward for Hopper (sm_90a) in CuTe DSL.

O = softmax(Q K^T * scale) V per (batch, head), bf16 or fp16 in and out, fp32 softmax and
accumulation. Tensors are (B, S, H, D) ("bshd", as flash-attn lays them out); D is 64 or 128;
any B, H and S (S not a multiple of the tile is masked); causal or not (queries and keys share S).

CTA = 1 producer warpgroup + 2 math warpgroups (3 with qk_mn (192, N)), one Q tile of 64 rows per
math warpgroup
against K/V blocks of 128 rows (or qk_mn[1], see below).
- Producer: warp 0 walks the persistent schedule (work = (query tile, head, batch), the query
  tiles of one head in a row so that its K and V stay in L2; causal: longest tiles first) and
  issues TMA loads. Q has its own full/empty mbarrier pair: the math warps release it after the
  last Q K^T of a tile, and the next tile's Q is loaded while they finish P V and the epilogue.
  K and V go through two rings of `num_stages` buffers (kernels/sm90_pipeline.py, TmaRing), so
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
- pingpong: the two math warpgroups take turns issuing their WGMMAs (named barriers 2 and 3),
  so one warpgroup's softmax overlaps the other's matrix products.
- Epilogue: O / rowsum -> 16 bits -> stmatrix into a shared buffer of its own -> TMA store
  (kernels/sm90_epilogue.py); TMA clips rows past S. With o_reuses_q the buffer is Q's: the
  math warpgroups meet after their last Q K^T, and Q goes back to the producer once O's stores
  have read it.
- Key blocks: 128 wide (square tiles, any case) or, without the causal mask, any multiple of 16
  up to 256 within the register budget; tuned_config picks per shape.
"""

# No `from __future__ import annotations`: the DSL evaluates kernel annotations at compile time.
import functools
import math
import os
import tempfile
from dataclasses import asdict, dataclass
from typing import Any, Callable

from kernelscope.kernels import cute_build
from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec
from kernelscope.toolchain.sass import disassemble_cubin

SMEM_CAPACITY = 232448      # bytes of shared memory a block may use on sm_90
SMEM_RESERVED = 1024        # barrier words and alignment slack
DTYPES = ("bfloat16", "float16")
HEAD_DIMS = (64, 128)
# Math warpgroups (64 query rows each) -> (producer, math) registers per thread after
# setmaxnreg: 128 x producer + 128 x math_wgs x math <= 65536.
REGISTER_SPLIT = {2: (24, 240), 3: (32, 160)}
EPI_N = 32                  # epilogue subtile width (columns of O)
H100_SMS = 132
LOG2E = 1.4426950408889634

# (dtype width, head dim) -> (S row map, O row map, S column offsets) of the last kernel built:
# what check_fragments returned while tracing it.
FRAGMENT_ROW_MAPS: dict[tuple[int, int], tuple] = {}

# Named barriers: 0 is __syncthreads, 1 the epilogue's (kernels/sm90_epilogue.py); the
# ping-pong turn of math warpgroup w is 2 + w (a ring: w hands the turn to w + 1).
PINGPONG_BARRIER_BASE = 2
PINGPONG_THREADS = 256      # the warpgroup waiting for its turn and the one handing it over
# With o_reuses_q: every math warpgroup is past its last Q K^T before O is staged over Q.
Q_READ_BARRIER = 5


@dataclass(frozen=True)
class FlashSM90:
    qk_mn: tuple[int, int] = (128, 128)
    num_stages: int = 2
    cluster_size_m: int = 1
    intra_wg_overlap: bool = True
    pingpong: bool = True
    # O staged in Q's shared memory (same size: tile_m x D) instead of a buffer of its own: frees
    # 16/32 KiB (3 stages, or wider key blocks, at D=128); the next tile's Q then waits until O's
    # TMA stores have read it.
    o_reuses_q: bool = False

    @classmethod
    def from_mapping(cls, cfg: dict[str, Any] | None) -> "FlashSM90":
        cfg = dict(cfg or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(cfg) - known)
        if unknown:
            raise ConfigRejected(f"unknown flash_attn config keys {unknown}; known: {sorted(known)}")
        if "qk_mn" in cfg:
            q = cfg["qk_mn"]
            if isinstance(q, str):
                q = q.lower().replace("x", ",").split(",")
            cfg["qk_mn"] = tuple(int(x) for x in q)
        for flag in ("intra_wg_overlap", "pingpong", "o_reuses_q"):
            if flag in cfg and isinstance(cfg[flag], str):
                cfg[flag] = cfg[flag].lower() in ("1", "true", "yes")
        return cls(**cfg)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["qk_mn"] = list(self.qk_mn)
        return d


def smem_bytes(cfg: FlashSM90, head_dim: int) -> int:
    tm, tn = cfg.qk_mn
    q = tm * head_dim * 2
    kv = 2 * cfg.num_stages * tn * head_dim * 2
    o = 0 if cfg.o_reuses_q else tm * EPI_N * 2 * epi_stages(head_dim)
    return q + kv + o + SMEM_RESERVED


def epi_stages(head_dim: int) -> int:
    # Every subtile of O gets its own buffer: the stores of a tile never wait on each other.
    return head_dim // EPI_N


# Registers a math thread may lock in WGMMA fragments at once in the overlapped loop (S, P and
# O: tn/2 + tn/4 + D/2), leaving the softmax and the loop ~32 of its setmaxnreg budget.
LOCKED_REGS_MAX = {2: 208, 3: 128}


def math_warpgroups(cfg: "FlashSM90") -> int:
    return cfg.qk_mn[0] // 64


def validate(cfg: FlashSM90, head_dim: int | None = None, causal: bool | None = None) -> None:
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
    if cfg.cluster_size_m != 1:
        raise ConfigRejected(
            f"cluster_size_m must be 1 (K/V multicast across query tiles is not built), "
            f"got {cfg.cluster_size_m}")
    if not all(isinstance(f, bool) for f in (cfg.intra_wg_overlap, cfg.pingpong, cfg.o_reuses_q)):
        raise ConfigRejected("intra_wg_overlap, pingpong and o_reuses_q must be true or false")
    if head_dim is not None:
        if head_dim not in HEAD_DIMS:
            raise ConfigRejected(f"head dim must be one of {HEAD_DIMS}, got {head_dim}")
        need = smem_bytes(cfg, head_dim)
        if need > SMEM_CAPACITY:
            raise ConfigRejected(
                f"num_stages={cfg.num_stages} at head dim {head_dim} needs {need} bytes of shared "
                f"memory (Q, {cfg.num_stages} K and V stages"
                f"{'' if cfg.o_reuses_q else ', an O buffer of its own (o_reuses_q=true saves it)'}), "
                f"the limit is {SMEM_CAPACITY}")


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
# The kernel (imports cutlass lazily: the module stays importable where the DSL is missing).
# ---------------------------------------------------------------------------------------------

def check_compact(*fragments) -> None:
    """Register i of each fragment holds value i (in the order of the fragment's shape)."""
    for frag in fragments:
        size = 1
        for extent in _flatten(frag.shape):
            size *= extent
        if any(frag.layout(i) != i for i in range(size)):
            raise AssertionError(f"register fragment {frag.layout} is not compact in value order")


def _flatten(shape):
    if isinstance(shape, int):
        return [shape]
    return [x for part in shape for x in _flatten(part)]


def _tree_reduce(values: list, op, chains: int = 4):
    """Reduction in `chains` interleaved chains, then pairwise (plain Python, unrolled while
    tracing): short dependency chains, and only `chains` temporaries live at once (a full tree
    over 32 values would hold 16, which the overlapped loop at head dim 128 cannot spare)."""
    acc = list(values[:chains])
    for i, v in enumerate(values[chains:]):
        acc[i % chains] = op(acc[i % chains], v)
    while len(acc) > 1:
        paired = [op(acc[2 * i], acc[2 * i + 1]) for i in range(len(acc) // 2)]
        acc = paired + acc[len(paired) * 2:]
    return acc[0]


def _cutlass_dtype(name: str):
    import cutlass
    return {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}[name]


@functools.lru_cache(maxsize=None)
def _kernel_class():
    import cutlass
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.cute.nvgpu import cpasync, warpgroup
    from cutlass.memory import SmemAllocator
    from cutlass.tensor_utils import LayoutEnum

    from kernelscope.kernels.sm90_epilogue import TmaStoreEpilogue
    from kernelscope.kernels.sm90_pipeline import TmaRing

    from cutlass._mlir.dialects import llvm
    from cutlass.cutlass_dsl import T

    def pack_16bit(lo, hi, ptx_type: str):
        """Two fp32 values -> one 32-bit register of two 16-bit values (round to nearest), as
        one inline-asm cvt. Why not the DSL's conversion: LLVM folds the two conversions that
        feed P (before the loop and at the end of each iteration) into one conversion of a
        loop-carried S, which then keeps 64 fp32 registers alive across the next Q K^T; at
        head dim 128 that exceeds the registers of the overlapped loop and ptxas serializes
        the WGMMAs (C7512). An asm statement is not folded through the loop's phi."""
        return cutlass.Int32(llvm.inline_asm(
            T.i32(), [cutlass.Float32(hi).ir_value(), cutlass.Float32(lo).ir_value()],
            f"cvt.rn.{ptx_type}x2.f32 $0, $1, $2;", "=r,f,f",
            has_side_effects=False, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT))

    class FlashAttentionSm90:
        """One compiled variant: (config, dtype, head dim, causal). B, H, S stay dynamic."""

        def __init__(self, cfg: FlashSM90, dtype: str, head_dim: int, causal: bool):
            validate(cfg, head_dim, causal)
            self.cfg = cfg
            self.dtype = _cutlass_dtype(dtype)
            self.head_dim = head_dim
            self.causal = causal
            self.tile_m, self.tile_n = cfg.qk_mn
            self.stages = cfg.num_stages
            self.math_wgs = math_warpgroups(cfg)
            self.math_threads = 128 * self.math_wgs
            self.threads = 128 + self.math_threads
            self.epilogue = TmaStoreEpilogue(
                self.dtype, (self.tile_m, head_dim), EPI_N, epi_stages(head_dim),
                consumer_threads=self.math_threads, store_warp=4)

        @cute.jit
        def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
                     scale_log2: cutlass.Float32, max_ctas: cutlass.Int32, section_heads: cutlass.Int32,
                     stream):
            D = self.head_dim
            tm, tn = self.tile_m, self.tile_n
            # (B, S, H, D) -> (S, D, H, B): rows and the contiguous head dim first, as TMA tiles them;
            # V as V^T (D, S, H, B), the MN-major B operand of P V.
            q = cute.make_tensor(mQ.iterator, cute.select(mQ.layout, mode=[1, 3, 2, 0]))
            k = cute.make_tensor(mK.iterator, cute.select(mK.layout, mode=[1, 3, 2, 0]))
            vt = cute.make_tensor(mV.iterator, cute.select(mV.layout, mode=[3, 1, 2, 0]))
            o = cute.make_tensor(mO.iterator, cute.select(mO.layout, mode=[1, 3, 2, 0]))

            K_MAJOR = warpgroup.OperandMajorMode.K
            tiled_mma_qk = sm90_utils.make_trivial_tiled_mma(
                self.dtype, self.dtype, K_MAJOR, K_MAJOR, cutlass.Float32,
                (self.math_wgs, 1, 1), tiler_mn=(64, tn))
            tiled_mma_pv = sm90_utils.make_trivial_tiled_mma(
                self.dtype, self.dtype, K_MAJOR, warpgroup.OperandMajorMode.MN, cutlass.Float32,
                (self.math_wgs, 1, 1), tiler_mn=(64, D), a_source=warpgroup.OperandSource.RMEM)
            tv_p = tiled_mma_pv.tv_layout_A_tiled
            maps = FRAGMENT_ROW_MAPS[(self.dtype.width, D)] = check_fragments(
                tiled_mma_qk.tv_layout_C_tiled, tiled_mma_pv.tv_layout_C_tiled, tv_p,
                self.math_threads, tm, tn * 64 // 128, D * 64 // 128,
                cute.size(tv_p, mode=[1]), 16)
            self.s_half, self.o_half, self.s_cols = maps

            sQ_layout = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (tm, tn, D), self.dtype, 1)
            sK_layout = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (tm, tn, D), self.dtype,
                                                      self.stages)
            sV_layout = sm90_utils.make_smem_layout_b(LayoutEnum.COL_MAJOR, (tm, D, tn), self.dtype,
                                                      self.stages)
            sO_layout = self.epilogue.make_smem_layout()

            g2s = cpasync.CopyBulkTensorTileG2SOp()
            tma_q, tQ = cpasync.make_tiled_tma_atom(g2s, q, cute.slice_(sQ_layout, (None, None, 0)), (tm, D))
            tma_k, tK = cpasync.make_tiled_tma_atom(g2s, k, cute.slice_(sK_layout, (None, None, 0)), (tn, D))
            tma_v, tV = cpasync.make_tiled_tma_atom(g2s, vt, cute.slice_(sV_layout, (None, None, 0)), (D, tn))
            tma_o, tO = self.epilogue.make_tma_store(o, sO_layout)

            seqlen = q.shape[0]
            heads = q.shape[2]
            batch = q.shape[3]
            m_blocks = (seqlen + tm - 1) // tm
            num_work = m_blocks * heads * batch
            ctas = cutlass.max(cutlass.min(num_work, max_ctas), 1)

            if cutlass.const_expr(self.cfg.o_reuses_q):
                # O's staging buffers must fit in Q's: true for every head dim (tile_m x D each).
                assert cute.cosize(sO_layout) <= cute.cosize(sQ_layout), "O staging larger than Q"

                @cute.struct
                class SharedQO:
                    barriers: cute.struct.MemRange[cutlass.Int64, 4 * self.stages + 2]
                    sQ: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sQ_layout)], 1024]
                    sK: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sK_layout)], 1024]
                    sV: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sV_layout)], 1024]

                self.storage = SharedQO
            else:
                @cute.struct
                class Storage:
                    barriers: cute.struct.MemRange[cutlass.Int64, 4 * self.stages + 2]
                    sQ: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sQ_layout)], 1024]
                    sK: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sK_layout)], 1024]
                    sV: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sV_layout)], 1024]
                    sO: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sO_layout)], 1024]

                self.storage = Storage
            self.kernel(tma_q, tQ, tma_k, tK, tma_v, tV, tma_o, tO, tiled_mma_qk, tiled_mma_pv,
                        sQ_layout, sK_layout, sV_layout, sO_layout, seqlen, heads, m_blocks, num_work,
                        scale_log2, section_heads).launch(
                grid=[ctas, 1, 1], block=[self.threads, 1, 1], min_blocks_per_mp=1, stream=stream)

        @cute.kernel
        def kernel(self, tma_q: cute.CopyAtom, tQ: cute.Tensor, tma_k: cute.CopyAtom, tK: cute.Tensor,
                   tma_v: cute.CopyAtom, tV: cute.Tensor, tma_o: cute.CopyAtom, tO: cute.Tensor,
                   tiled_mma_qk: cute.TiledMma, tiled_mma_pv: cute.TiledMma,
                   sQ_layout: cute.ComposedLayout, sK_layout: cute.ComposedLayout,
                   sV_layout: cute.ComposedLayout, sO_layout: cute.ComposedLayout,
                   seqlen: cutlass.Int32, heads: cutlass.Int32, m_blocks: cutlass.Int32,
                   num_work: cutlass.Int32, scale_log2: cutlass.Float32, section_heads: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            first_work, _, _ = cute.arch.block_idx()
            work_stride, _, _ = cute.arch.grid_dim()

            if warp_idx == 0:
                cpasync.prefetch_descriptor(tma_q)
                cpasync.prefetch_descriptor(tma_k)
                cpasync.prefetch_descriptor(tma_v)
                cpasync.prefetch_descriptor(tma_o)

            smem = SmemAllocator()
            storage = smem.allocate(self.storage)
            bars = storage.barriers.data_ptr()
            k_bytes = cute.size_in_bytes(self.dtype, cute.slice_(sK_layout, (None, None, 0)))
            v_bytes = cute.size_in_bytes(self.dtype, cute.slice_(sV_layout, (None, None, 0)))
            q_bytes = cute.size_in_bytes(self.dtype, cute.slice_(sQ_layout, (None, None, 0)))
            math_warps = self.math_threads // 32
            k_ring = TmaRing(bars, self.stages, k_bytes, consumer_warps=math_warps, cluster_mn=(1, 1))
            v_ring = TmaRing(bars + 2 * self.stages, self.stages, v_bytes, consumer_warps=math_warps,
                             cluster_mn=(1, 1))
            q_full = bars + 4 * self.stages
            q_empty = q_full + 1
            k_ring.init(warp_idx)
            v_ring.init(warp_idx)
            if warp_idx == 0:
                with cute.arch.elect_one():
                    cute.arch.mbarrier_init(q_full, 1)
                    # Q is free when every math warp is past its last Q K^T, or, when O is
                    # staged in Q's buffer, when the store warp has seen O's stores read it.
                    cute.arch.mbarrier_init(q_empty, 1 if self.cfg.o_reuses_q else math_warps)
                cute.arch.mbarrier_init_fence()
            cute.arch.sync_threads()

            sQ = storage.sQ.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
            sK = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)
            sV = storage.sV.get_tensor(sV_layout.outer, swizzle=sV_layout.inner)
            if cutlass.const_expr(self.cfg.o_reuses_q):
                sO = storage.sQ.get_tensor(sO_layout.outer, swizzle=sO_layout.inner)
            else:
                sO = storage.sO.get_tensor(sO_layout.outer, swizzle=sO_layout.inner)

            if warp_idx < 4:
                cute.arch.setmaxregister_decrease(REGISTER_SPLIT[self.math_wgs][0])
                if warp_idx == 0:
                    self.produce(tma_q, tQ, tma_k, tK, tma_v, tV, sQ, sK, sV, k_ring, v_ring,
                                 q_full, q_empty, q_bytes, seqlen, heads, m_blocks, num_work,
                                 first_work, work_stride, section_heads)
            else:
                cute.arch.setmaxregister_increase(REGISTER_SPLIT[self.math_wgs][1])
                self.consume(tiled_mma_qk, tiled_mma_pv, tma_o, tO, sQ, sK, sV, sO, k_ring, v_ring,
                             q_full, q_empty, seqlen, heads, m_blocks, num_work, first_work,
                             work_stride, scale_log2, tidx - 128, warp_idx, section_heads)

        # -- schedule ---------------------------------------------------------------------------
        @cute.jit
        def work_tile(self, work, heads, m_blocks, num_work, section_heads):
            """Work index -> (query tile, head, batch).
            Not causal: the query tiles of one head in a row (its K and V stay in L2).
            Causal (tiles of very different lengths): the (batch, head) pairs are cut into
            sections of `section_heads` whose K and V fit in L2 together; inside a section the
            tiles go longest first across its heads (tile rank major, head minor), which with the
            snake assignment of `nth_work` balances the CTAs' work."""
            m_block = work
            bh = work
            if cutlass.const_expr(not self.causal):
                bh = work // m_blocks
                m_block = work - bh * m_blocks
            else:
                pairs = num_work // m_blocks
                per_section = section_heads * m_blocks
                sec = work // per_section
                first_bh = sec * section_heads
                size = cutlass.min(section_heads, pairs - first_bh)
                rem = work - sec * per_section
                rank = rem // size
                bh = first_bh + (rem - rank * size)
                m_block = m_blocks - 1 - rank
            batch = bh // heads
            head = bh - batch * heads
            return m_block, head, batch

        @cute.jit
        def nth_work(self, wave, first_work, work_stride):
            """This CTA's work in wave `wave` of the persistent grid. Causal: a snake (the order
            of the CTAs reverses every wave), so a CTA that took one of the longest tiles of a
            wave takes one of the shortest of the next."""
            work = wave * work_stride + first_work
            if cutlass.const_expr(self.causal):
                if wave % 2 == 1:
                    work = wave * work_stride + (work_stride - 1 - first_work)
            return work

        @cute.jit
        def kv_blocks(self, m_block, seqlen):
            n_blocks = (seqlen + self.tile_n - 1) // self.tile_n
            if cutlass.const_expr(self.causal):
                # Square tiles: keys up to the diagonal block of this query tile.
                n_blocks = cutlass.min(n_blocks, m_block + 1)
            return n_blocks

        # -- producer (warp 0) ------------------------------------------------------------------
        @cute.jit
        def produce(self, tma_q, tQ, tma_k, tK, tma_v, tV, sQ, sK, sV, k_ring, v_ring, q_full,
                    q_empty, q_bytes, seqlen, heads, m_blocks, num_work, first_work, work_stride,
                    section_heads):
            D = self.head_dim
            stage = cutlass.Int32(0)
            phase = cutlass.Int32(1)
            q_phase = cutlass.Int32(1)
            wave = cutlass.Int32(0)
            work = first_work
            while work < num_work:
                m_block, head, batch = self.work_tile(work, heads, m_blocks, num_work, section_heads)
                n_blocks = self.kv_blocks(m_block, seqlen)
                gQ = cute.local_tile(tQ[(None, None, head, batch)], (self.tile_m, D), (None, 0))
                gK = cute.local_tile(tK[(None, None, head, batch)], (self.tile_n, D), (None, 0))
                gV = cute.local_tile(tV[(None, None, head, batch)], (D, self.tile_n), (0, None))
                tQs, tQg = cpasync.tma_partition(tma_q, 0, cute.make_layout(1),
                                                 cute.group_modes(sQ, 0, 2), cute.group_modes(gQ, 0, 2))
                tKs, tKg = cpasync.tma_partition(tma_k, 0, cute.make_layout(1),
                                                 cute.group_modes(sK, 0, 2), cute.group_modes(gK, 0, 2))
                tVs, tVg = cpasync.tma_partition(tma_v, 0, cute.make_layout(1),
                                                 cute.group_modes(sV, 0, 2), cute.group_modes(gV, 0, 2))
                # Blocks are visited from the last (the one that may need masking) down to 0.
                # First K, then Q (its buffer frees when the previous tile's last Q K^T is done),
                # then V: the first Q K^T needs only Q and K.
                n = n_blocks - 1
                k_ring.producer_acquire(stage, phase)
                cute.copy(tma_k, tKg[(None, n)], tKs[(None, stage)], tma_bar_ptr=k_ring.full_barrier(stage))
                cute.arch.mbarrier_wait(q_empty, q_phase)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(q_full, q_bytes)
                cute.copy(tma_q, tQg[(None, m_block)], tQs[(None, 0)], tma_bar_ptr=q_full)
                q_phase ^= 1
                v_ring.producer_acquire(stage, phase)
                cute.copy(tma_v, tVg[(None, n)], tVs[(None, stage)], tma_bar_ptr=v_ring.full_barrier(stage))
                stage += 1
                if stage == self.stages:
                    stage = cutlass.Int32(0)
                    phase ^= 1
                for j in range(1, n_blocks):
                    n = n_blocks - 1 - j
                    k_ring.producer_acquire(stage, phase)
                    cute.copy(tma_k, tKg[(None, n)], tKs[(None, stage)],
                              tma_bar_ptr=k_ring.full_barrier(stage))
                    v_ring.producer_acquire(stage, phase)
                    cute.copy(tma_v, tVg[(None, n)], tVs[(None, stage)],
                              tma_bar_ptr=v_ring.full_barrier(stage))
                    stage += 1
                    if stage == self.stages:
                        stage = cutlass.Int32(0)
                        phase ^= 1
                wave += 1
                work = self.nth_work(wave, first_work, work_stride)
            k_ring.producer_drain(stage, phase)
            v_ring.producer_drain(stage, phase)

        # -- math warpgroups --------------------------------------------------------------------
        @cute.jit
        def consume(self, tiled_mma_qk, tiled_mma_pv, tma_o, tO, sQ, sK, sV, sO, k_ring, v_ring,
                    q_full, q_empty, seqlen, heads, m_blocks, num_work, first_work, work_stride,
                    scale_log2, ctidx, warp_idx, section_heads):
            D = self.head_dim
            tm, tn = self.tile_m, self.tile_n
            lane = cute.arch.lane_idx()
            # Warp-uniform warpgroup index: the WGMMA descriptors stay on the uniform datapath.
            wg = cute.arch.make_warp_uniform(ctidx // 128)
            wg_qk = tiled_mma_qk.get_slice(wg * 128)
            wg_pv = tiled_mma_pv.get_slice(wg * 128)
            tSrQ = tiled_mma_qk.make_fragment_A(wg_qk.partition_A(sQ))
            tSrK = tiled_mma_qk.make_fragment_B(wg_qk.partition_B(sK))
            # sV is (D, tn, stage): V^T, the (N, K) B operand of P V.
            tOrV = tiled_mma_pv.make_fragment_B(wg_pv.partition_B(sV))
            acc_s = cute.make_rmem_tensor(wg_qk.partition_shape_C((tm, tn)), cutlass.Float32)
            acc_o = cute.make_rmem_tensor(wg_pv.partition_shape_C((tm, D)), cutlass.Float32)
            p = tiled_mma_pv.make_fragment_A(wg_pv.partition_shape_A((tm, tn)))
            qk_blocks = cute.size(tSrQ, mode=[2])
            pv_blocks = cute.size(p, mode=[2])
            n_s = cute.size(acc_s)
            # Flat views: check_fragments proved P's registers hold S's values in S's order.
            s_flat = cute.make_tensor(acc_s.iterator, cute.make_layout(n_s))
            p_flat = cute.make_tensor(p.iterator, cute.make_layout(n_s))
            # P as 32-bit words: value pairs (2i, 2i + 1) packed by one cvt each.
            p_words = cute.recast_tensor(p_flat, cutlass.Int32)
            # The flat views above (and the row maps) take register i to be value i in the order
            # of the fragments' shapes: true of compact fragments, checked here.
            check_compact(p, acc_s, acc_o)

            thr_qk = tiled_mma_qk.get_slice(ctidx)

            row_max = cute.make_rmem_tensor((2,), cutlass.Float32)
            row_sum = cute.make_rmem_tensor((2,), cutlass.Float32)
            row_scale = cute.make_rmem_tensor((2,), cutlass.Float32)

            signals = lane == 0
            tiled_r2s, thr_r2s = self.epilogue.make_r2s(tiled_mma_pv, ctidx)

            if cutlass.const_expr(self.cfg.pingpong):
                # The first warpgroup takes the first turn.
                if wg == 0:
                    cute.arch.barrier_arrive(barrier_id=PINGPONG_BARRIER_BASE,
                                             number_of_threads=PINGPONG_THREADS)

            stage = cutlass.Int32(0)
            phase = cutlass.Int32(0)
            q_phase = cutlass.Int32(0)
            wave = cutlass.Int32(0)
            work = first_work
            while work < num_work:
                m_block, head, batch = self.work_tile(work, heads, m_blocks, num_work, section_heads)
                n_blocks = self.kv_blocks(m_block, seqlen)
                # O needs no zeroing: the tile's first P V overwrites it (ACCUMULATE off), so no
                # registers hold zeros through the first block.
                cute.arch.mbarrier_wait(q_full, q_phase)
                q_phase ^= 1

                # First block (n = n_blocks - 1): masked, no P V before it.
                n = n_blocks - 1
                k_ring.consumer_wait(stage, phase)
                if cutlass.const_expr(not self.cfg.intra_wg_overlap):
                    self.turn_wait(wg)
                self.mma_qk(tiled_mma_qk, acc_s, tSrQ, tSrK, stage, qk_blocks)
                if cutlass.const_expr(not self.cfg.intra_wg_overlap):
                    self.turn_pass(wg)
                cute.nvgpu.warpgroup.wait_group(0)
                k_ring.consumer_release(stage, signals, 0)
                self.apply_mask(acc_s, thr_qk, m_block, n, seqlen)
                self.softmax(acc_s, row_max, row_sum, row_scale, scale_log2, True)
                self.convert_p(acc_s, p_words)
                v_stage = stage
                stage, phase = self.advance(stage, phase)

                if cutlass.const_expr(self.cfg.intra_wg_overlap):
                    for j in range(1, n_blocks):
                        k_ring.consumer_wait(stage, phase)
                        self.turn_wait(wg)
                        self.mma_qk(tiled_mma_qk, acc_s, tSrQ, tSrK, stage, qk_blocks)
                        v_ring.consumer_wait(v_stage, self.prev_phase(stage, phase))
                        self.mma_pv(tiled_mma_pv, acc_o, p, tOrV, v_stage, pv_blocks, j > 1)
                        self.turn_pass(wg)
                        cute.nvgpu.warpgroup.wait_group(1)
                        k_ring.consumer_release(stage, signals, 0)
                        self.softmax(acc_s, row_max, row_sum, row_scale, scale_log2, False)
                        cute.nvgpu.warpgroup.wait_group(0)
                        v_ring.consumer_release(v_stage, signals, 0)
                        self.convert_p(acc_s, p_words)
                        self.rescale_o(acc_o, row_scale)
                        v_stage = stage
                        stage, phase = self.advance(stage, phase)
                    # Every Q K^T of this tile is done: Q's buffer can take the next tile.
                    if cutlass.const_expr(not self.cfg.o_reuses_q):
                        self.release_q(q_empty, signals)
                    v_ring.consumer_wait(v_stage, self.prev_phase(stage, phase))
                    self.turn_wait(wg)
                    self.mma_pv(tiled_mma_pv, acc_o, p, tOrV, v_stage, pv_blocks, n_blocks > 1)
                    self.turn_pass(wg)
                    cute.nvgpu.warpgroup.wait_group(0)
                    v_ring.consumer_release(v_stage, signals, 0)
                else:
                    # P V of the first block, then whole blocks in order.
                    v_ring.consumer_wait(v_stage, self.prev_phase(stage, phase))
                    self.turn_wait(wg)
                    self.mma_pv(tiled_mma_pv, acc_o, p, tOrV, v_stage, pv_blocks, False)
                    cute.nvgpu.warpgroup.wait_group(0)
                    v_ring.consumer_release(v_stage, signals, 0)
                    for j in range(1, n_blocks):
                        k_ring.consumer_wait(stage, phase)
                        self.mma_qk(tiled_mma_qk, acc_s, tSrQ, tSrK, stage, qk_blocks)
                        self.turn_pass(wg)
                        cute.nvgpu.warpgroup.wait_group(0)
                        k_ring.consumer_release(stage, signals, 0)
                        self.softmax(acc_s, row_max, row_sum, row_scale, scale_log2, False)
                        self.convert_p(acc_s, p_words)
                        self.rescale_o(acc_o, row_scale)
                        v_ring.consumer_wait(stage, phase)
                        self.turn_wait(wg)
                        self.mma_pv(tiled_mma_pv, acc_o, p, tOrV, stage, pv_blocks, True)
                        cute.nvgpu.warpgroup.wait_group(0)
                        v_ring.consumer_release(stage, signals, 0)
                        stage, phase = self.advance(stage, phase)
                    if cutlass.const_expr(not self.cfg.o_reuses_q):
                        self.release_q(q_empty, signals)
                    self.turn_pass(wg)

                self.finalize(acc_o, row_sum)
                gO = cute.local_tile(tO[(None, None, head, batch)], (tm, D), (m_block, 0))
                if cutlass.const_expr(self.cfg.o_reuses_q):
                    # O's subtiles span both warpgroups' rows of Q: neither may write before the
                    # other's last Q K^T has read Q.
                    cute.arch.barrier(barrier_id=Q_READ_BARRIER, number_of_threads=self.math_threads)
                self.epilogue.store_tile(tma_o, tiled_r2s, thr_r2s, acc_o, sO, gO, warp_idx)
                if cutlass.const_expr(self.cfg.o_reuses_q):
                    if warp_idx == self.epilogue.store_warp:
                        # The buffer is Q's again once O's stores have read it.
                        cute.arch.cp_async_bulk_wait_group(0, read=True)
                        self.release_q(q_empty, signals)
                wave += 1
                work = self.nth_work(wave, first_work, work_stride)
            self.epilogue.drain(warp_idx)

        # -- pieces of the math loop ------------------------------------------------------------
        def advance(self, stage, phase):
            stage = stage + 1
            wrap = stage == self.stages
            return (cutlass.Int32(cutlass.select_(wrap, 0, stage)),
                    cutlass.Int32(cutlass.select_(wrap, phase ^ 1, phase)))

        def prev_phase(self, stage, phase):
            """Phase of the ring slot just before (stage, phase)."""
            return cutlass.Int32(cutlass.select_(stage == 0, phase ^ 1, phase))

        @cute.jit
        def release_q(self, q_empty, signals):
            if signals:
                cute.arch.mbarrier_arrive(q_empty)

        @cute.jit
        def turn_wait(self, wg):
            """Wait for this warpgroup's turn to issue WGMMAs (barrier ids as constants, one
            branch per warpgroup: a run-time id costs registers across the in-flight WGMMAs)."""
            if cutlass.const_expr(self.cfg.pingpong):
                if wg == 0:
                    cute.arch.barrier(barrier_id=PINGPONG_BARRIER_BASE, number_of_threads=PINGPONG_THREADS)
                elif wg == 1:
                    cute.arch.barrier(barrier_id=PINGPONG_BARRIER_BASE + 1, number_of_threads=PINGPONG_THREADS)
                else:
                    cute.arch.barrier(barrier_id=PINGPONG_BARRIER_BASE + 2, number_of_threads=PINGPONG_THREADS)

        @cute.jit
        def turn_pass(self, wg):
            """Hand the turn to the next math warpgroup of the ring."""
            if cutlass.const_expr(self.cfg.pingpong):
                if wg == 0:
                    cute.arch.barrier_arrive(barrier_id=PINGPONG_BARRIER_BASE + 1,
                                             number_of_threads=PINGPONG_THREADS)
                elif wg == self.math_wgs - 1:
                    cute.arch.barrier_arrive(barrier_id=PINGPONG_BARRIER_BASE,
                                             number_of_threads=PINGPONG_THREADS)
                else:
                    cute.arch.barrier_arrive(barrier_id=PINGPONG_BARRIER_BASE + 2,
                                             number_of_threads=PINGPONG_THREADS)

        def mma_qk(self, tiled_mma, acc_s, tSrQ, tSrK, stage, k_blocks):
            """S = Q K^T, one commit group. A fresh atom per call: its ACCUMULATE field changes
            here, and a field set inside one loop body must not leak into another."""
            cute.nvgpu.warpgroup.fence()
            atom = cute.make_mma_atom(tiled_mma.op)
            for kb in range(k_blocks):
                atom.set(warpgroup.Field.ACCUMULATE, kb != 0)
                cute.gemm(atom, acc_s, tSrQ[(None, None, kb, 0)], tSrK[(None, None, kb, stage)], acc_s)
            cute.nvgpu.warpgroup.commit_group()

        def mma_pv(self, tiled_mma, acc_o, p, tOrV, stage, k_blocks, accumulate):
            """O (+)= P V, one commit group; `accumulate` (run-time) is off for a tile's first."""
            cute.nvgpu.warpgroup.fence()
            atom = cute.make_mma_atom(tiled_mma.op)
            atom.set(warpgroup.Field.ACCUMULATE, accumulate)
            for kb in range(k_blocks):
                cute.gemm(atom, acc_o, p[(None, None, kb)], tOrV[(None, None, kb, stage)], acc_o)
                atom.set(warpgroup.Field.ACCUMULATE, True)
            cute.nvgpu.warpgroup.commit_group()

        @cute.jit
        def apply_mask(self, acc_s, thr_qk, m_block, n_block, seqlen):
            """-inf where the key is past the sequence or (causal) after the query. Only the
            coordinates of the thread's value 0 are computed; every other value sits at a
            trace-time offset from it (checked by check_fragments), so the mask is one compare
            against a per-row column limit per value and costs no registers per value."""
            r0, c0 = thr_qk.partition_C(cute.make_identity_tensor((self.tile_m, self.tile_n)))[0]
            # Columns of this block, relative to the thread's first column, that are kept: < limit.
            first_col = n_block * self.tile_n + c0
            lim0 = seqlen - first_col
            lim1 = lim0
            if cutlass.const_expr(self.causal):
                diag = m_block * self.tile_m + r0 + 1 - first_col
                lim0 = cutlass.min(lim0, diag)
                lim1 = cutlass.min(lim1, diag + 8)
            limit = (lim0, lim1)
            for i in cutlass.range_constexpr(cute.size(acc_s)):
                keep = self.s_cols[i] < limit[self.s_half[i]]
                acc_s[i] = cutlass.Float32(cutlass.select_(keep, acc_s[i], -cutlass.Float32.inf))

        @cute.jit
        def softmax(self, acc_s, row_max, row_sum, row_scale, scale_log2, first: cutlass.Constexpr):
            """Online softmax of one block of S in place (S -> exp2 of the scaled, shifted
            scores). Row max over the quad that holds the row (lane ^ 1, lane ^ 2); row sums stay
            per thread until `finalize`. The first block visited has at least one unmasked key per
            row (keys past S only in the last block, the causal diagonal only in the block on
            it), so no row max is -inf."""
            n = cute.size(acc_s)
            for h in cutlass.range_constexpr(2):
                vals = [i for i in range(n) if self.s_half[i] == h]
                m = _tree_reduce([acc_s[i] for i in vals], cute.arch.fmax)
                if cutlass.const_expr(not first):
                    m = cute.arch.fmax(m, row_max[h])
                m = cute.arch.fmax(m, cute.arch.shuffle_sync_bfly(m, offset=1))
                m = cute.arch.fmax(m, cute.arch.shuffle_sync_bfly(m, offset=2))
                m_scaled = m * scale_log2
                if cutlass.const_expr(first):
                    row_scale[h] = cutlass.Float32(1.0)
                else:
                    row_scale[h] = cute.math.exp2(row_max[h] * scale_log2 - m_scaled, fastmath=True)
                row_max[h] = m
                for i in vals:
                    acc_s[i] = cute.math.exp2(acc_s[i] * scale_log2 - m_scaled, fastmath=True)
                total = _tree_reduce([acc_s[i] for i in vals], lambda a, b: a + b)
                if cutlass.const_expr(first):
                    row_sum[h] = total
                else:
                    row_sum[h] = row_sum[h] * row_scale[h] + total

        @cute.jit
        def convert_p(self, acc_s, p_words):
            """P = S rounded to 16 bits, register for register (see pack_16bit)."""
            ptx_type = "bf16" if self.dtype is cutlass.BFloat16 else "f16"
            for w in cutlass.range_constexpr(cute.size(p_words)):
                p_words[w] = pack_16bit(acc_s[2 * w], acc_s[2 * w + 1], ptx_type)

        @cute.jit
        def rescale_o(self, acc_o, row_scale):
            for i in cutlass.range_constexpr(cute.size(acc_o)):
                acc_o[i] = acc_o[i] * row_scale[self.o_half[i]]

        @cute.jit
        def finalize(self, acc_o, row_sum):
            """O / rowsum: the quad's partial sums first."""
            for h in cutlass.range_constexpr(2):
                s = row_sum[h]
                s = s + cute.arch.shuffle_sync_bfly(s, offset=1)
                s = s + cute.arch.shuffle_sync_bfly(s, offset=2)
                row_sum[h] = cute.arch.rcp_approx(s)
            for i in cutlass.range_constexpr(cute.size(acc_o)):
                acc_o[i] = acc_o[i] * row_sum[self.o_half[i]]

    return FlashAttentionSm90


# ---------------------------------------------------------------------------------------------
# Compile / launch
# ---------------------------------------------------------------------------------------------

def _fake_operands(dtype: str, head_dim: int):
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor

    dt = _cutlass_dtype(dtype)
    b, s, h = cute.sym_int32(), cute.sym_int32(), cute.sym_int32()
    # (B, S, H, D) row-major; the head dim is static, so every stride but D's is a multiple of it.
    return [make_fake_compact_tensor(dt, (b, s, h, head_dim), stride_order=(3, 2, 1, 0), assumed_align=16)
            for _ in range(4)]


def _to_cute(t):
    from cutlass.cute.runtime import from_dlpack
    return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=3)


def _fake_stream():
    from cutlass.cute.runtime import make_fake_stream
    return make_fake_stream()


def _current_stream():
    import cuda.bindings.driver as cuda
    import torch
    return cuda.CUstream(torch.cuda.current_stream().cuda_stream)


@functools.lru_cache(maxsize=64)
def _compiled(cfg: FlashSM90, dtype: str, head_dim: int, causal: bool, use_gpu_tensors: bool):
    """Compile one variant. With a GPU the signature comes from real (dynamic-layout) tensors, so
    the result is callable with from_dlpack tensors; without, from fake tensors."""
    import cutlass
    import cutlass.cute as cute

    kernel = _kernel_class()(cfg, dtype, head_dim, causal)
    if use_gpu_tensors:
        import torch
        x = torch.empty((1, 128, 1, head_dim), dtype=getattr(torch, dtype), device="cuda")
        args = [_to_cute(x) for _ in range(4)]
        stream = _current_stream()
    else:
        args = _fake_operands(dtype, head_dim)
        stream = _fake_stream()
    # Kept artifacts go to a scratch folder, never into the working directory.
    dump_dir = tempfile.mkdtemp(prefix="kernelscope-flash-")
    return cute.compile(kernel, *args, cutlass.Float32(1.0), 1, 1, stream,
                        options=f"--keep-cubin --keep-ptx --dump-dir={dump_dir}")


def _config_of(config) -> FlashSM90:
    return config if isinstance(config, FlashSM90) else FlashSM90.from_mapping(config)


def compile_flash_attn(config: dict[str, Any] | FlashSM90 | None, shape: dict[str, int] | None = None,
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
    compiled = _compiled(cfg, dtype, D, causal, False)
    cubin, ptx = cute_build.artifacts(compiled)
    sass = disassemble_cubin(cubin) if cubin else None
    launch = bind = None
    if cute_build.gpu_available():
        def bind(inputs):
            return bind_flash_attn(cfg, inputs)

        def launch(inputs):
            bind_flash_attn(cfg, inputs)()
            return inputs["out"]

    return CompiledKernel(launch=launch, cubin=cubin, sass=sass, ptx=ptx,
                          kernel_names=cute_build.kernel_names(sass), bind=bind)


def _device_property(name: str, fallback: int) -> int:
    """A property of the current GPU, or `fallback` (the Hopper value) where none can be read."""
    try:
        import torch
        if torch.cuda.is_available():
            return int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), name))
    except Exception:  # noqa: BLE001 - no usable device: the fallback
        pass
    return fallback


def max_ctas() -> int:
    """CTAs of the persistent grid: one per SM."""
    return _device_property("multi_processor_count", H100_SMS)


def l2_bytes() -> int:
    """L2 cache of the current GPU (50 MiB, the H100/H200 size, when it cannot be read)."""
    return _device_property("L2_cache_size", 50 * 1024 * 1024)


def section_heads(seqlen: int, head_dim: int, elem_bytes: int, pairs: int, l2: int | None = None) -> int:
    """(batch, head) pairs per section of the causal schedule: as many as have their K and V in
    half of L2 together (the other half for Q, O and what the other sections leave), at least
    one, at most all."""
    kv_per_pair = 2 * seqlen * head_dim * elem_bytes
    budget = (l2 if l2 is not None else l2_bytes()) // 2
    return max(1, min(pairs, budget // max(kv_per_pair, 1)))


def bind_flash_attn(cfg: FlashSM90, inputs) -> Callable[[], Any]:
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
    compiled = _compiled(cfg, dtype, D, causal, True)
    args = (_to_cute(q), _to_cute(k), _to_cute(v), _to_cute(out), cutlass.Float32(scale * LOG2E),
            max_ctas(), section_heads(S, D, q.element_size(), B * H), _current_stream())
    return lambda: compiled(*args)


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
    """Per-shape choice over FlashSM90(), from paired round-robin timings on an H200
    (benchmarks/results/flash_attn-h200*.json): without the causal mask, wider key blocks cut
    the per-block softmax and barrier work per score: at D=128 (128, 160) took 0.966-1.007x
    the time of (128, 128) over three runs and three shapes, ~1.4% less on average (wider still
    needs O in Q's buffer, whose later Q load costs more than it gains). At D=64 three math
    warpgroups, (192, 128): 1.7% faster than (128, 192) with 3 stages, which was ~1% faster
    than (128, 128); the exponentials cost as much as the matrix products there, and more warps
    interleave them better. Causal keeps square tiles (the mask needs them)."""
    if int(shape.get("causal", 0)):
        return {}
    if int(shape["D"]) == 128:
        return {"qk_mn": (128, 160)}
    return {"qk_mn": (192, 128)}


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
    default_config=FlashSM90().to_dict(),
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
    },
    expected_sass=["HGMMA", "UTMALDG", "UTMASTG"],
    archs=["sm_90a"],
    output_dims=("batch", "seq", "head", "dim"),
    tile=(1, 128, 1, 128),
    torch_reference=torch_reference,
    output="out",
    shape_config=tuned_config,
)
