"""Short, readable kernel names for headers and tables; the full name stays in JSON.

CuTe DSL names a kernel after its module, class and every argument's layout (~200
characters); C++ kernels carry namespaces, template arguments and parameter lists.
The short name keeps what tells kernels apart: the class or function, and the package
when it is not the user's own (flash_attn.cute…FlashAttentionForwardSm90).
"""

from __future__ import annotations

import re

# CuTe DSL flattens dotted module paths; the packages a reader knows, spelled back.
_KNOWN_PACKAGES = (("flash_attncute", "flash_attn.cute"), ("quack", "quack"), ("cutlass", "cutlass"))
# Where the argument part of a CuTe DSL function kernel's name begins.
_ARGUMENT_START = re.compile(r"_(?:tensor|TiledMMA|TiledCopy|CopyAtom|MMAAtom|ptr|Layout|[0-9])")
_CLASS_KERNEL = re.compile(r"^kernel_cutlass_kernel_(?P<module>.*?)(?P<cls>[A-Z][A-Za-z0-9]*)_object_at_")
LONGEST = 60


def short_name(name: str, demangled: str | None = None) -> str:
    """A readable name for `name` (as ncu gives it) or its demangled form."""
    if name.startswith("kernel_cutlass_"):
        return _cute_dsl(name)
    if demangled and demangled != name and ("::" in demangled or "<" in demangled or "(" in demangled):
        return _shorten(_cpp(demangled))
    return _shorten(name)


def _cute_dsl(name: str) -> str:
    m = _CLASS_KERNEL.match(name)
    if m:
        module = m.group("module")
        if "classlocals" in module or module.startswith(("kernelscopekernels", "__main__")) or not module.strip("_"):
            return m.group("cls")
        package = next((nice for mangled, nice in _KNOWN_PACKAGES if module.startswith(mangled)), module[:16])
        return f"{package}…{m.group('cls')}"
    rest = name[len("kernel_cutlass_"):]
    cut = _ARGUMENT_START.search(rest)
    return _shorten(rest[: cut.start()] if cut else rest)


def _cpp(demangled: str) -> str:
    """'void at::native::<unnamed>::k<float, 4>(int, T2)' -> 'at::native::k'."""
    text = demangled.replace("<unnamed>::", "").replace("(anonymous namespace)::", "")
    out, depth = [], 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split()
    return words[-1] if words else demangled


def _shorten(text: str) -> str:
    return text if len(text) <= LONGEST else text[: LONGEST - 1] + "…"
