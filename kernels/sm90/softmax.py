"""Online (streaming) softmax over blocks of scores held in WGMMA accumulator registers.

Each thread holds values of two rows of S (r and r + 8 of its warp's 16), and the four lanes of
a quad hold all of a row's columns: `s_half[i]` / `o_half[i]` say which of the thread's two rows
register i of S / of O belongs to (the kernel checks these maps on its tiled MMAs while it is
built). Per row the object keeps the running maximum, the running sum of exponentials (per
thread until `finalize`) and the factor by which the last block rescaled them.

Scores are scaled by `scale_log2` (the softmax scale times log2 e) so that exp2 does the
exponential. All methods run at trace time inside a @cute.kernel and unroll over the registers.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute


def tree_reduce(values: list, op, chains: int = 4):
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


class OnlineSoftmax:
    """Row state of one math thread: running max, running sum, last rescale factor (two rows)."""

    def __init__(self, scale_log2, s_half: tuple[int, ...], o_half: tuple[int, ...]):
        self.scale_log2 = scale_log2
        self.s_half = s_half
        self.o_half = o_half
        self.row_max = cute.make_rmem_tensor((2,), cutlass.Float32)
        self.row_sum = cute.make_rmem_tensor((2,), cutlass.Float32)
        self.row_scale = cute.make_rmem_tensor((2,), cutlass.Float32)

    # The DSL carries an object used inside run-time loops by its IR values. This one has none to
    # carry: its tensors are registers allocated once (their contents change, the tensors do
    # not) and scale_log2 is a kernel argument.
    def __extract_mlir_values__(self):
        return []

    def __new_from_mlir_values__(self, values):
        return self

    @cute.jit
    def step(self, acc_s, first: cutlass.Constexpr):
        """One block of S in place (S -> exp2 of the scaled, shifted scores). Row max over the
        quad that holds the row (lane ^ 1, lane ^ 2); row sums stay per thread until `finalize`.
        The first block visited must have at least one unmasked key per row, so that no row
        max is -inf."""
        row_max, row_sum, row_scale, scale_log2 = self.row_max, self.row_sum, self.row_scale, self.scale_log2
        n = cute.size(acc_s)
        for h in cutlass.range_constexpr(2):
            vals = [i for i in range(n) if self.s_half[i] == h]
            m = tree_reduce([acc_s[i] for i in vals], cute.arch.fmax)
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
            total = tree_reduce([acc_s[i] for i in vals], lambda a, b: a + b)
            if cutlass.const_expr(first):
                row_sum[h] = total
            else:
                row_sum[h] = row_sum[h] * row_scale[h] + total

    @cute.jit
    def rescale(self, acc_o):
        """O times the factor the last step applied to its rows' running max."""
        for i in cutlass.range_constexpr(cute.size(acc_o)):
            acc_o[i] = acc_o[i] * self.row_scale[self.o_half[i]]

    @cute.jit
    def finalize(self, acc_o):
        """O / rowsum: the quad's partial sums first."""
        row_sum = self.row_sum
        for h in cutlass.range_constexpr(2):
            s = row_sum[h]
            s = s + cute.arch.shuffle_sync_bfly(s, offset=1)
            s = s + cute.arch.shuffle_sync_bfly(s, offset=2)
            row_sum[h] = cute.arch.rcp_approx(s)
        for i in cutlass.range_constexpr(cute.size(acc_o)):
            acc_o[i] = acc_o[i] * row_sum[self.o_half[i]]

    @cute.jit
    def merge(self, acc_o, other_o, other_max, other_sum):
        """Fold another part's state over other keys of the same rows (its unnormalised O, row
        maxima and per-thread row sums, as this thread holds them) into this one."""
        row_max, row_sum, scale_log2 = self.row_max, self.row_sum, self.scale_log2
        mine = cute.make_rmem_tensor((2,), cutlass.Float32)
        theirs = cute.make_rmem_tensor((2,), cutlass.Float32)
        for h in cutlass.range_constexpr(2):
            m = cute.arch.fmax(row_max[h], other_max[h])
            mine[h] = cute.math.exp2((row_max[h] - m) * scale_log2, fastmath=True)
            theirs[h] = cute.math.exp2((other_max[h] - m) * scale_log2, fastmath=True)
            row_sum[h] = row_sum[h] * mine[h] + other_sum[h] * theirs[h]
            row_max[h] = m
        for i in cutlass.range_constexpr(cute.size(acc_o)):
            h = self.o_half[i]
            acc_o[i] = acc_o[i] * mine[h] + other_o[i] * theirs[h]
