"""The layering the imports obey: toolchain -> kernels -> profiler -> rules -> gate -> reports -> api -> cli.

Each package imports only packages to its left (and `kernelscope.errors`, the package's
version and `kernelscope.process_end`, how a program ends, which sit beneath all of them). Every import statement of every module counts,
including those inside functions: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("toolchain", "kernels", "profiler", "rules", "gate", "reports", "api", "cli")
# Modules of the root package every layer may use.
BENEATH_ALL = {"kernelscope", "kernelscope.errors", "kernelscope.process_end"}


def imported_modules(source: str, module: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every kernelscope import in `source`, where `module`
    is the dotted name of the file (for resolving relative imports)."""
    found = []
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            # `from kernelscope import rules` imports the subpackage itself.
            if name == "kernelscope":
                found += [(node.lineno, f"kernelscope.{alias.name}") for alias in node.names
                          if alias.name in LAYERS]
    return [(line, name) for line, name in found if name == "kernelscope" or name.startswith("kernelscope.")]


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return None


def upward_imports(source: str, module: str) -> list[str]:
    """The imports of `module` that point to a layer above its own, as readable lines."""
    own = layer_of(module)
    out = []
    for line, name in imported_modules(source, module):
        if name in BENEATH_ALL or name.split(".")[:2] == ["kernelscope", "errors"]:
            continue
        target = layer_of(name)
        if target is None:
            out.append(f"{module}:{line} imports {name}, which belongs to no layer")
        elif own is not None and target > own:
            out.append(f"{module}:{line} imports {name} ({LAYERS[own]} -> {LAYERS[target]})")
    return out


def package_modules():
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            yield path, "kernelscope." + ".".join(rel.parts)


def test_every_import_points_down():
    modules = list(package_modules())
    assert len(modules) > 40 and {m.split(".")[1] for _, m in modules} == set(LAYERS)
    imports = sum(len(imported_modules(p.read_text(), m)) for p, m in modules)
    assert imports > 150          # the scan reads the imports, not an empty list
    problems = [msg for path, module in modules for msg in upward_imports(path.read_text(), module)]
    assert not problems, "imports against the layering:\n" + "\n".join(problems)


@pytest.mark.parametrize("source, module, expected", [
    ("from kernelscope.reports.units import x", "kernelscope.rules.engine", ["rules -> reports"]),
    ("def f():\n    from kernelscope.profiler import static", "kernelscope.kernels.gemm", ["kernels -> profiler"]),
    ("import kernelscope.cli.main", "kernelscope.gate.runner", ["gate -> cli"]),
    ("from kernelscope import rules", "kernelscope.profiler.ncu", ["profiler -> rules"]),
    ("from ..reports import html", "kernelscope.profiler.catalog", ["profiler -> reports"]),
    ("from kernelscope.nowhere import x", "kernelscope.cli.main", ["belongs to no layer"]),
    ("from kernelscope.profiler.record import KernelProfile\nfrom kernelscope.errors import UserError\n"
     "from kernelscope import __version__\nfrom . import engine", "kernelscope.rules.collection", []),
])
def test_the_check_names_what_points_up(source, module, expected):
    found = upward_imports(source, module)
    assert len(found) == len(expected)
    for message, fragment in zip(found, expected):
        assert fragment in message


def test_no_module_imports_private_names_of_another_package_or_command():
    # Modules of one package may share a private helper; another package (or another CLI
    # command) gets only public names, so a private helper can change without breaking it.
    private = []
    for path, module in package_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kernelscope"):
                source = node.module.split(".")
                same_package = source[:2] == module.split(".")[:2] and source[1:2] != ["cli"]
                private += [f"{module}:{node.lineno} imports {node.module}.{a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__") and not same_package]
    assert not private, "\n".join(private)
