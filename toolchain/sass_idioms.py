"""SASS instructions whose opcode says less than their operands: integer opcodes ptxas uses for
work that is not index arithmetic. Counting IMAD as "index math" blames a kernel for its
conversions and register copies; these two idioms are told apart by their operands.

- bf16 -> fp32 (or any 16-bit pattern moved to the high half): `IMAD.U32 Rd, Ra, 0x10000, RZ`,
  `IMAD.SHL.U32 Rd, Ra, 0x10000, RZ` or `SHF.L.U32 Rd, Ra, 0x10, RZ` (x << 16, no addend).
- register copy on the FMA pipe: `IMAD.MOV.U32 Rd, RZ, RZ, Ra` (0 x 0 + Ra).
- a float's exponent field built from an integer (expf/exp2f range reduction, ldexpf):
  `SHF.L.U32 Rd, Ra, 0x17, RZ` or `IMAD.SHL.U32 Rd, Ra, 0x800000, RZ` (n << 23, no addend).
"""

from __future__ import annotations

import re
from typing import Iterable

BF16_UNPACK = "bf16_unpack"
IMAD_MOVE = "imad_move"
FLOAT_EXPONENT = "float_exponent"
# Opcodes (with modifiers) that can be a bf16 unpack or an exponent shift, and the prefix of every
# register copy:
# an opcode mix with modifiers tells where the operands need reading at all.
OPERAND_IDIOM_OPCODES = ("IMAD.U32", "IMAD.SHL.U32", "SHF.L.U32")
MOVE_PREFIX = "IMAD.MOV"
# The raw metric each count is kept under in a profile (executed in an ncu report, in the binary
# for a compile-only one), for the catalog's formulas.
METRIC_NAMES = {BF16_UNPACK: "kernelscope__sass_bf16_unpack", IMAD_MOVE: "kernelscope__sass_imad_move",
                FLOAT_EXPONENT: "kernelscope__sass_float_exponent"}

_PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")
_BF16_UNPACK = re.compile(r"^(?:IMAD(?:\.SHL)?\.U32 [^,]+,[^,]+,0x10000,RZ|SHF\.L\.U32 [^,]+,[^,]+,0x10,RZ)$")
_IMAD_MOVE = re.compile(r"^IMAD\.MOV(?:\.U32)? [^,]+,-?RZ,RZ,[^,]+$")
_FLOAT_EXPONENT = re.compile(r"^(?:SHF\.L\.U32 [^,]+,[^,]+,0x17,RZ|IMAD\.SHL\.U32 [^,]+,[^,]+,0x800000,RZ)$")


def idiom(instruction: str) -> str | None:
    """BF16_UNPACK, IMAD_MOVE, FLOAT_EXPONENT or None for one instruction as SASS prints it (predicate and a
    trailing ';' allowed, operands with or without spaces)."""
    text = _PREDICATE.sub("", instruction.strip().rstrip(";").strip())
    opcode, _, operands = text.partition(" ")
    normal = f"{opcode} {operands.replace(' ', '')}"
    if _BF16_UNPACK.match(normal):
        return BF16_UNPACK
    if _IMAD_MOVE.match(normal):
        return IMAD_MOVE
    if _FLOAT_EXPONENT.match(normal):
        return FLOAT_EXPONENT
    return None


def idiom_counts(weighted: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Per idiom, the summed weight of the instructions that are one: pass (text, 1) pairs for
    counts in a binary, (text, times executed) for executions."""
    counts = {BF16_UNPACK: 0.0, IMAD_MOVE: 0.0, FLOAT_EXPONENT: 0.0}
    for text, weight in weighted:
        kind = idiom(text)
        if kind is not None:
            counts[kind] += weight
    return counts
