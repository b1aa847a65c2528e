"""SASS with the source line each instruction came from, read from `nvdisasm -g` over a cubin.

A cubin compiled with line information (CuTe DSL: `CUTE_DSL_LINEINFO=1` or the
`GenerateLineInfo` option) carries `.debug_line`; `nvdisasm -g` prints
`//## File "path", line N` above the instructions that line produced. This module parses that
listing (its reader of one instruction line also serves cuobjdump's listings, for the WGMMA wait
analysis) and classifies opcodes; it depends on nothing else in kernelscope, so it sits with the
other CUDA-tool parsing in the toolchain layer (the caller hands it the nvdisasm path).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import tempfile
from dataclasses import dataclass

_FUNCTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_FILE_LINE = re.compile(r'^\s*//##\s*File\s+"([^"]+)",\s*line\s+(\d+)')
# An instruction line of a SASS listing, nvdisasm's or cuobjdump's (which prints the encoding
# after the `;`): `/*0a40*/  @!P0 HGMMA.64x128x16.F32.BF16 gdesc[UR4], RZ, !UPT ;`
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+((?:@!?U?P[T0-9]+\s+)?)([^;]*?)\s*(?:;|$)")
# A branch's target at the end of its operands: a hex address (cuobjdump, ncu) or a label (nvdisasm:
# `(.L_x_12)).
_TARGET = re.compile(r"(?:\b0x([0-9a-fA-F]+)|`\(([.\w]+)\))\s*$")
_LABEL = re.compile(r"^\s*([.\w]+):\s*$")


@dataclass(frozen=True)
class ListedInstruction:
    """One instruction line of a SASS listing."""

    offset: int          # byte offset inside the function
    text: str            # as printed, predicate included, without the `;`
    instruction: str     # without the predicate: opcode (with modifiers) and operands


def listed_instruction(line: str) -> ListedInstruction | None:
    """The instruction on one line of an nvdisasm or cuobjdump listing; None for any other line."""
    m = _INSTRUCTION.match(line)
    if m is None:
        return None
    return ListedInstruction(int(m.group(1), 16), m.group(2) + m.group(3), m.group(3))


def listed_opcode(line: str) -> tuple[ListedInstruction, str] | None:
    """The instruction on one listing line and its opcode (with modifiers); None for any other
    line, directives and labels included."""
    listed = listed_instruction(line)
    if listed is None:
        return None
    opcode = listed.instruction.split(" ", 1)[0]
    if not opcode or not opcode[0].isalpha():
        return None
    return listed, opcode


def branch_target(instruction: str) -> int | str | None:
    """A BRA's target as printed: an address (int) or a label (str); None for any other instruction."""
    if instruction.split(" ", 1)[0].split(".", 1)[0] != "BRA":
        return None
    m = _TARGET.search(instruction)
    if m is None:
        return None
    return int(m.group(1), 16) if m.group(1) else m.group(2)


def listed_label(line: str) -> str | None:
    """The label a listing line defines (`.L_x_12:`), None for any other line."""
    m = _LABEL.match(line)
    return m.group(1) if m else None


@dataclass(frozen=True)
class LinedInstruction:
    """One instruction of a function's SASS and the source line it came from (None: none given)."""

    function: str
    offset: int          # byte offset inside the function
    opcode: str          # with modifiers, e.g. "HGMMA.64x256x16.F32.BF16"
    text: str            # as nvdisasm prints it, predicate included, without the trailing ';'
    file: str | None
    line: int | None
    target: int | None = None   # a branch's target offset inside the function (its label resolved)

    @property
    def base_opcode(self) -> str:
        return self.opcode.split(".", 1)[0]


def parse_nvdisasm_lines(text: str) -> dict[str, list[LinedInstruction]]:
    """`nvdisasm -g -c` output -> instructions per function, in address order, branch targets
    resolved to offsets."""
    out: dict[str, list[LinedInstruction]] = {}
    labels: dict[str, dict[str, int]] = {}       # function -> label -> offset of the next instruction
    targets: dict[str, list[int | str | None]] = {}
    pending: list[str] = []
    function: str | None = None
    where: tuple[str, int] | None = None
    for raw in text.splitlines():
        m = _FUNCTION.match(raw)
        if m:
            function, where, pending = m.group(1), None, []
            out.setdefault(function, [])
            labels.setdefault(function, {})
            targets.setdefault(function, [])
            continue
        if function is None:
            continue
        m = _FILE_LINE.match(raw)
        if m:
            where = (m.group(1), int(m.group(2)))
            continue
        label = listed_label(raw)
        if label:
            pending.append(label)
            continue
        found = listed_opcode(raw)
        if found is None:
            continue
        listed, opcode = found
        for name in pending:
            labels[function][name] = listed.offset
        pending = []
        out[function].append(LinedInstruction(
            function=function, offset=listed.offset, opcode=opcode, text=listed.text,
            file=where[0] if where else None, line=where[1] if where else None))
        targets[function].append(branch_target(listed.instruction))
    for function, insts in out.items():
        named = labels[function]
        out[function] = [i if t is None else dataclasses.replace(i, target=t if isinstance(t, int) else named.get(t))
                         for i, t in zip(insts, targets[function])]
    return out


def disassemble_with_lines(cubin: bytes, nvdisasm: str) -> dict[str, list[LinedInstruction]]:
    """Run `nvdisasm -g -c` on a cubin; raises RuntimeError with nvdisasm's last line on failure."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([nvdisasm, "-g", "-c", f.name], capture_output=True, text=True)
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()
        raise RuntimeError(detail[-1] if detail else f"nvdisasm ended with code {r.returncode}")
    return parse_nvdisasm_lines(r.stdout)


def has_line_info(instructions: list[LinedInstruction]) -> bool:
    return any(i.line is not None for i in instructions)


# Opcode classes: what kind of work an instruction is, for summaries across source files.
_CLASSES = (
    ("tensor", ("HGMMA", "HMMA", "IMMA", "QGMMA", "IGMMA", "BGMMA", "WARPGROUP", "UTCHMMA")),
    ("tma", ("UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UBLKCP", "UBLKRED", "UTMACCTL", "UTMACMDFLUSH")),
    ("shared", ("LDSM", "STSM", "LDS", "STS", "ATOMS", "LDGSTS")),
    ("global", ("LDG", "STG", "LD", "ST", "RED", "ATOM", "ATOMG", "REDG", "CCTL", "LDGDEPBAR")),
    ("local", ("LDL", "STL")),
    ("sync", ("SYNCS", "BAR", "MEMBAR", "DEPBAR", "FENCE", "ERRBAR", "WARPSYNC", "NANOSLEEP", "ARRIVES", "ELECT")),
    ("control", ("BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "BREAK", "YIELD", "NOP", "BPT",
                 "KILL", "ACQBULK", "WARPSYNC")),
    ("fp32", ("FFMA", "FADD", "FMUL", "FMNMX", "FSEL", "FSET", "FSETP", "FCHK", "FSWZADD", "FMNMX3")),
    ("sfu", ("MUFU",)),
    ("conversion", ("F2F", "F2FP", "F2I", "I2F", "I2FP", "FRND", "F2IP")),
    ("shuffle", ("SHFL", "VOTE", "MATCH", "REDUX")),
)
_CLASS_OF = {op: name for name, ops in _CLASSES for op in ops}


def opcode_class(base_opcode: str) -> str:
    """"tensor", "tma", "shared", "global", "local", "sync", "control", "fp32", "sfu", "conversion",
    "shuffle", "uniform" (U* opcodes and the moves into uniform registers) or "integer" (the rest:
    IMAD, IADD3, LOP3, SHF, LEA, ISETP, MOV, PRMT, ...)."""
    known = _CLASS_OF.get(base_opcode)
    if known:
        return known
    if base_opcode in ("R2UR", "S2UR") or (base_opcode.startswith("U") and len(base_opcode) > 1):
        return "uniform"
    return "integer"
