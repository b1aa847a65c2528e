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

import math
import struct

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm


def exp2_polynomial_coefficients(degree: int = 3) -> list[float]:
    """Coefficients c[0..degree] of the polynomial that interpolates 2^f at the Chebyshev nodes
    of [-0.5, 0.5] (near-minimax; degree 3: relative error 1.0e-4, a twentieth of a bf16 P's
    rounding). Solved in plain Python by Gauss-Jordan elimination."""
    n = degree + 1
    nodes = [0.5 * math.cos((2 * k + 1) * math.pi / (2 * n)) for k in range(n)]
    rows = [[x ** j for j in range(n)] + [2.0 ** x] for x in nodes]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(rows[r][i]))
        rows[i], rows[pivot] = rows[pivot], rows[i]
        for r in range(n):
            if r != i:
                f = rows[r][i] / rows[i][i]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[i])]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def _ptx_f32(value: float) -> str:
    return "0f%08X" % struct.unpack("<I", struct.pack("<f", value))[0]


def _exp2_polynomial_asm() -> str:
    # x (log2 units, <= 0; -inf where masked) clamped to -125 so that the exponent arithmetic
    # cannot wrap (2^-125 stands for 0: it adds nothing a bf16/fp16 P or an fp32 sum can see).
    # j = round(x) by the 1.5 * 2^23 trick (the integer lands in the low mantissa bits of r),
    # f = x - j in [-0.5, 0.5], 2^f by Horner, then j added to the exponent field.
    c0, c1, c2, c3 = (_ptx_f32(c) for c in exp2_polynomial_coefficients(3))
    magic = _ptx_f32(12582912.0)
    return ("{ .reg .f32 x, r, j, f, p; .reg .b32 e, pb;\n"
            f"max.ftz.f32 x, $1, {_ptx_f32(-125.0)};\n"
            f"add.rn.ftz.f32 r, x, {magic};\n"
            f"sub.rn.ftz.f32 j, r, {magic};\n"
            "sub.rn.ftz.f32 f, x, j;\n"
            f"fma.rn.ftz.f32 p, f, {c3}, {c2};\n"
            f"fma.rn.ftz.f32 p, p, f, {c1};\n"
            f"fma.rn.ftz.f32 p, p, f, {c0};\n"
            "shl.b32 e, r, 23;\n"
            "mov.b32 pb, p;\n"
            "add.s32 e, e, pb;\n"
            "mov.b32 $0, e; }")


EXP2_POLYNOMIAL_ASM = _exp2_polynomial_asm()


def exp2_polynomial(x):
    """2^x on the FMA and ALU pipes instead of the MUFU (XU) pipe, for x <= 0 (see the asm)."""
    return cutlass.Float32(llvm.inline_asm(
        cutlass.Float32.mlir_type, [cutlass.Float32(x).ir_value()], EXP2_POLYNOMIAL_ASM, "=f,f",
        has_side_effects=False, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT))


def polynomial_slots(per_8: int) -> frozenset[int]:
    """Which positions of every 8 scores of a row take the polynomial: `per_8` of them, spread."""
    return frozenset({0: (), 1: (7,), 2: (3, 7), 3: (2, 5, 7), 4: (1, 3, 5, 7)}[per_8])


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

    def __init__(self, scale_log2, s_half: tuple[int, ...], o_half: tuple[int, ...],
                 polynomial_exp2_per_8: int = 0, l_half: tuple[int, ...] | None = None):
        self.scale_log2 = scale_log2
        # With l_half, the row sums come from an MMA (P times ones, accumulator L, its row map
        # l_half) and the softmax keeps none.
        self.l_half = l_half
        self.polynomial = polynomial_slots(polynomial_exp2_per_8)
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
            for k, i in enumerate(vals):
                if cutlass.const_expr(k % 8 in self.polynomial):
                    acc_s[i] = exp2_polynomial(acc_s[i] * scale_log2 - m_scaled)
                else:
                    acc_s[i] = cute.math.exp2(acc_s[i] * scale_log2 - m_scaled, fastmath=True)
            if cutlass.const_expr(self.l_half is None):
                total = tree_reduce([acc_s[i] for i in vals], lambda a, b: a + b)
                if cutlass.const_expr(first):
                    row_sum[h] = total
                else:
                    row_sum[h] = row_sum[h] * row_scale[h] + total

    @cute.jit
    def rescale(self, acc_o, sums=None):
        """O (and L, the MMA's row sums) times the factor the last step applied to its rows'
        running max."""
        for i in cutlass.range_constexpr(cute.size(acc_o)):
            acc_o[i] = acc_o[i] * self.row_scale[self.o_half[i]]
        if cutlass.const_expr(sums is not None):
            acc_l = sums[1]
            for i in cutlass.range_constexpr(cute.size(acc_l)):
                acc_l[i] = acc_l[i] * self.row_scale[self.l_half[i]]

    @cute.jit
    def finalize(self, acc_o, sums=None):
        """O / rowsum: the quad's partial sums first (or the MMA's sums, whole already)."""
        row_sum = self.row_sum
        for h in cutlass.range_constexpr(2):
            if cutlass.const_expr(sums is not None):
                s = sums[1][self.l_half.index(h)]
            else:
                s = row_sum[h]
                s = s + cute.arch.shuffle_sync_bfly(s, offset=1)
                s = s + cute.arch.shuffle_sync_bfly(s, offset=2)
            row_sum[h] = cute.arch.rcp_approx(s)
        for i in cutlass.range_constexpr(cute.size(acc_o)):
            acc_o[i] = acc_o[i] * row_sum[self.o_half[i]]
