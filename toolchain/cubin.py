"""Facts a cubin states about each kernel function, read with `cuobjdump`.

- registers, stack frame, static shared memory, local memory, constant bank 0:
  `cuobjdump --dump-resource-usage`
- named barriers and the block size a kernel requires (EIATTR_REQNTID), and the target
  architecture: `cuobjdump --dump-elf`
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any

from kernelscope.toolchain.tools import run_tool


@dataclass
class FunctionResources:
    """cuobjdump's resource report for one kernel function of a cubin."""

    name: str
    registers: int | None = None
    stack_bytes: int | None = None
    shared_bytes: int | None = None
    local_bytes: int | None = None
    constant0_bytes: int | None = None
    barriers: int | None = None
    required_block: tuple[int, int, int] | None = None


_RES_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):?\s*$")
_RES_FIELD = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")


def parse_resource_usage(text: str) -> dict[str, FunctionResources]:
    """`cuobjdump --dump-resource-usage` output -> resources per function."""
    out: dict[str, FunctionResources] = {}
    current: FunctionResources | None = None
    for line in text.splitlines():
        m = _RES_FUNCTION.match(line)
        if m:
            current = FunctionResources(name=m.group(1))
            out[current.name] = current
            continue
        if current is None or "REG:" not in line:
            continue
        fields = {k: int(v) for k, v in _RES_FIELD.findall(line)}
        current.registers = fields.get("REG")
        current.stack_bytes = fields.get("STACK")
        current.shared_bytes = fields.get("SHARED")
        current.local_bytes = fields.get("LOCAL")
        current.constant0_bytes = fields.get("CONSTANT[0]")
    return out


_ELF_NVINFO_SECTION = re.compile(r"^\.nv\.info\.(\S+)\s*$")
_ELF_TEXT_SECTION = re.compile(r"^\.text\.(\S+)\s*$")
_ELF_BAR = re.compile(r"^bar\s*=\s*(\d+)")


def parse_elf_facts(text: str) -> dict[str, dict[str, Any]]:
    """`cuobjdump --dump-elf` output -> per function: named barriers used, required block size."""
    facts: dict[str, dict[str, Any]] = {}
    section: str | None = None
    kind = None
    pending_attr: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _ELF_NVINFO_SECTION.match(line)
        if m:
            section, kind, pending_attr = m.group(1), "info", None
            continue
        m = _ELF_TEXT_SECTION.match(line)
        if m:
            section, kind, pending_attr = m.group(1), "text", None
            continue
        if line.startswith(".") and not line.startswith(".nv.info."):
            section, kind = None, None
            continue
        if section is None:
            continue
        entry = facts.setdefault(section, {})
        if kind == "text":
            m = _ELF_BAR.match(line)
            if m:
                entry["barriers"] = int(m.group(1))
            elif "lmem=" in line:
                # The per-function summary line; sm_120 binaries state barriers as an
                # attribute instead, present only when the kernel uses one.
                entry.setdefault("barriers", 0)
        elif kind == "info":
            if line.startswith("Attribute:"):
                pending_attr = line.split(":", 1)[1].strip()
            elif line.startswith("Value:") and pending_attr == "EIATTR_REQNTID":
                dims = [int(tok, 16) for tok in line.split(":", 1)[1].split()]
                if dims:
                    entry["required_block"] = tuple((dims + [1, 1, 1])[:3])
            elif line.startswith("Value:") and pending_attr == "EIATTR_NUM_BARRIERS":
                entry["barriers"] = int(line.split(":", 1)[1].split()[0], 16)
    return facts


# CUDA 12's cuobjdump writes "64bit elf: ... sm=90a", CUDA 13's "64-bit ELF: ... sm=90a".
_ELF_HEADER_ARCH = re.compile(r"^\s*\d+-?bit elf:.*\bsm=(\w+)", re.MULTILINE | re.IGNORECASE)


def elf_arch(text: str) -> str | None:
    """The target named in `cuobjdump --dump-elf`'s header line, as `sm_90a`."""
    m = _ELF_HEADER_ARCH.search(text)
    return f"sm_{m.group(1)}" if m else None


def cubin_arch(cubin: bytes) -> str | None:
    """The architecture a cubin was built for, as `sm_90a` (None: cuobjdump names none)."""
    with tempfile.TemporaryDirectory(prefix="kernelscope-arch-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return elf_arch(run_tool("cuobjdump", "--dump-elf", path))


def function_resources(cubin_path: str) -> tuple[dict[str, FunctionResources], str | None]:
    """Resources per function, and the architecture the cubin was built for."""
    resources = parse_resource_usage(run_tool("cuobjdump", "--dump-resource-usage", cubin_path))
    elf_text = run_tool("cuobjdump", "--dump-elf", cubin_path)
    for name, facts in parse_elf_facts(elf_text).items():
        if name in resources:
            resources[name].barriers = facts.get("barriers")
            resources[name].required_block = facts.get("required_block")
    return resources, elf_arch(elf_text)
