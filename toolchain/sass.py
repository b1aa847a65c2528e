"""SASS: a cubin's instructions, per kernel function, as opcode lists and histograms.

What `inspect` and the static gate count comes from `nvdisasm -json`: one record per
instruction (predicate, opcode with its modifiers, operands), so nothing is parsed out of
text. The text readers below serve listings that exist only as text (the `nvdisasm -c`
listing kernels attach to their compile, `cuobjdump --dump-sass`); they give the same
opcodes as the JSON (checked on every kernel kernelscope ships).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

from kernelscope.errors import UserError
from kernelscope.toolchain.tools import run_tool, which_cuda_tool


_SASS_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
# `/*0a40*/  @!P0 HGMMA.64x128x16.F32.BF16 gdesc[UR4], RZ, !UPT ;`
_SASS_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")


def split_sass_functions(text: str) -> dict[str, str]:
    """`cuobjdump --dump-sass` output -> SASS listing per function."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        m = _SASS_FUNCTION.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in out.items()}


def sass_opcodes(sass: str) -> list[str]:
    """Full opcodes (with modifiers, e.g. `STL.64`) in listing order."""
    return [m.group(1) for m in map(_SASS_INSTRUCTION.match, sass.splitlines()) if m]


# The instruction of a listing line, without its offset and encoding: `@!P0 DEPBAR.LE SB0, 0x1`.
_SASS_INSTRUCTION_TEXT = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+([^;]*?)\s*;")


def sass_instruction_texts(sass: str) -> list[str]:
    """Each instruction of a listing as SASS prints it (predicate, opcode, operands), in listing order;
    the same instructions as `sass_opcodes`."""
    return [m.group(1) for m in map(_SASS_INSTRUCTION_TEXT.match, sass.splitlines())
            if m and _SASS_INSTRUCTION.match(m.group(0))]


_PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")


def instruction_opcode(text: str) -> str:
    """'@!P0 STL.64 [R1+0x8], R2 ;' -> 'STL.64': the opcode with its modifiers of one instruction as
    SASS prints it (empty for empty text)."""
    return _PREDICATE.sub("", text.strip()).split(" ", 1)[0].rstrip(";")


def opcode_histogram(opcodes: list[str]) -> dict[str, int]:
    """Counts per base opcode (`HGMMA.64x128x16.F32.BF16` -> `HGMMA`), the names ncu's mix uses."""
    counts: dict[str, int] = {}
    for op in opcodes:
        base = op.split(".", 1)[0]
        counts[base] = counts.get(base, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


_ACCESS_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def access_bytes(opcode: str) -> int:
    """Bytes per thread of one load or store (`LDG.E.128.CONSTANT` -> 16; 4 without a width modifier)."""
    width = 4
    for modifier in opcode.split(".")[1:]:
        width = _ACCESS_BYTES.get(modifier, width)
    return width


def local_memory_bytes(opcodes: list[str], base: str) -> int:
    """Bytes per thread moved by the `base` (STL or LDL) instructions in the binary."""
    return sum(access_bytes(op) for op in opcodes if op.split(".")[0] == base)


# mma.sync shapes as SASS spells them after `HMMA.` (m, n, k run together): m16n8k16, m16n8k8,
# m16n8k4 (tf32), m8n8k4 (sm_70's).
_HMMA_SHAPES = {"16816": (16, 8, 16), "1688": (16, 8, 8), "1684": (16, 8, 4), "884": (8, 8, 4)}


def hmma_products(opcode: str) -> int | None:
    """Multiply-adds per thread-group product of one HMMA (`HMMA.16816.F32.BF16` -> 16 x 8 x 16 = 2048);
    None for another opcode or a shape not in the table."""
    parts = opcode.split(".")
    if parts[0] != "HMMA" or len(parts) < 2 or parts[1] not in _HMMA_SHAPES:
        return None
    m, n, k = _HMMA_SHAPES[parts[1]]
    return m * n * k


def expected_opcodes_missing(expected: list[str], opcodes: list[str]) -> list[str]:
    """Expected entries no instruction matches. `HGMMA` matches any HGMMA; `LDSM.16.M88.4`
    matches that opcode and longer forms of it."""
    missing = []
    for want in expected:
        if not any(op == want or op.startswith(want + ".") for op in opcodes):
            missing.append(want)
    return missing


def dump_sass(cubin_path: str) -> dict[str, str]:
    """SASS listing per kernel function of a cubin file (`cuobjdump --dump-sass`)."""
    return split_sass_functions(run_tool("cuobjdump", "--dump-sass", cubin_path))


@dataclass
class SassInstruction:
    opcode: str                  # with modifiers: `HGMMA.64x128x16.F32.BF16`
    operands: str = ""
    predicate: str = ""          # `@!P0`, or empty


@dataclass
class SassFunction:
    name: str
    instructions: list[SassInstruction]

    @property
    def opcodes(self) -> list[str]:
        return [i.opcode for i in self.instructions]

    def listing(self) -> str:
        """A readable listing in cuobjdump's layout (16-byte instructions, offsets in hex)."""
        lines = [f"        Function : {self.name}"]
        for n, i in enumerate(self.instructions):
            text = " ".join(part for part in (i.predicate, i.opcode, i.operands.replace(",", ", ")) if part)
            lines.append(f"        /*{n * 16:04x}*/                   {text} ;")
        return "\n".join(lines) + "\n"


def parse_disassembly_json(text: str) -> dict[str, SassFunction]:
    """`nvdisasm -json` output -> the functions of the cubin, in its order."""
    try:
        _header, functions = json.loads(text)[:2]
        return {f["function-name"]: SassFunction(
                    name=f["function-name"],
                    instructions=[SassInstruction(opcode=i["opcode"], operands=i.get("operands", ""),
                                                  predicate=i.get("predicate", ""))
                                  for i in f.get("sass-instructions", [])])
                for f in functions}
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"nvdisasm -json printed something this kernelscope cannot read ({e})", exit_code=3) from None


def disassemble(cubin_path: str) -> dict[str, SassFunction]:
    """The SASS of every kernel function in a cubin file, from `nvdisasm -json`."""
    return parse_disassembly_json(run_tool("nvdisasm", "-json", cubin_path))


def disassemble_cubin(cubin: bytes) -> str | None:
    """SASS text of a cubin from `nvdisasm -c`; None when nvdisasm is not installed or fails
    (kernels attach it to their compile for reading, nothing depends on it)."""
    tool = which_cuda_tool("nvdisasm")
    if tool is None:
        return None
    with tempfile.TemporaryDirectory(prefix="kernelscope-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        result = subprocess.run([tool, "-c", path], capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else None


def kernel_symbols(sass: str | None) -> list[str]:
    """The `.global` kernel symbols of a SASS listing."""
    names = []
    for line in (sass or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == ".global":
            names.append(parts[1])
    return names
