"""Targets by name (`rmsnorm`, `gemm`, ...) or by file (`path/to/file.py:NAME`).

Registered kernels are imported lazily, only when asked for, so that a kernel whose
dependencies are missing does not break the others. A user's file is loaded as a
module of its own; NAME is a KernelSpec or a function returning one.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from kernelscope.errors import UserError, reraise_interrupt
from kernelscope.kernels.spec import KernelSpec

# name -> "module:attribute" (attribute: a KernelSpec or a function returning one).
REGISTERED: dict[str, str] = {
    "rmsnorm": "kernelscope.kernels.rmsnorm:SPEC",
    "gemm": "kernelscope.kernels.gemm:GEMM_SPEC",
    "gemm_mma": "kernelscope.kernels.gemm_mma:GEMM_MMA_SPEC",
    "gemm_rmsnorm": "kernelscope.kernels.gemm_rmsnorm:GEMM_RMSNORM_SPEC",
    "flash_attn": "kernelscope.kernels.flash_attn:FLASH_ATTN_SPEC",
}


def register(name: str, location: str) -> None:
    """Add a target name pointing at "module:attribute"."""
    REGISTERED[name] = location


def names() -> list[str]:
    return sorted(REGISTERED)


def _as_spec(obj, where: str) -> KernelSpec:
    if callable(obj) and not isinstance(obj, KernelSpec):
        obj = obj()
    if not isinstance(obj, KernelSpec):
        raise UserError(f"{where} is a {type(obj).__name__}, not a KernelSpec (or a function returning one)")
    return obj


def _load_file(path: str, attr: str, target: str) -> KernelSpec:
    if not os.path.isfile(path):
        raise UserError(f"target {target!r}: no such file {path}")
    mod_name = "kernelscope_user_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    module = sys.modules.get(mod_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise UserError(f"target {target!r}: {path} cannot be imported as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        # The file's own folder first on the path, so that it can import its neighbours.
        folder = os.path.dirname(os.path.abspath(path))
        sys.path.insert(0, folder)
        try:
            spec.loader.exec_module(module)
        except UserError:
            del sys.modules[mod_name]
            raise
        except SystemExit as e:
            # A script's `sys.exit()` at import would otherwise end kernelscope with its code.
            del sys.modules[mod_name]
            raise UserError(f"target {target!r}: importing {path} called sys.exit({e.code!r}); "
                            "a kernel file must not exit when imported (guard it with `if __name__ == \"__main__\":`)") from None
        except Exception as e:
            del sys.modules[mod_name]
            reraise_interrupt(e)
            raise UserError(f"target {target!r}: importing {path} failed: {type(e).__name__}: {e}") from e
        finally:
            if sys.path and sys.path[0] == folder:
                sys.path.pop(0)
    if not hasattr(module, attr):
        raise UserError(f"target {target!r}: {path} defines no {attr}")
    return _as_spec(getattr(module, attr), f"{path}:{attr}")


def resolve(target: str) -> KernelSpec:
    """A KernelSpec for a registered name or `path/to/file.py:NAME`."""
    if target in REGISTERED:
        module_name, attr = REGISTERED[target].split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise UserError(f"target {target!r} cannot be loaded: {e}") from e
        return _as_spec(getattr(module, attr), REGISTERED[target])
    if ":" in target:
        path, attr = target.rsplit(":", 1)
        if path.endswith(".py"):
            return _load_file(path, attr, target)
    if target.endswith(".py"):
        raise UserError(f"target {target!r}: name the spec too, as {target}:NAME")
    raise UserError(f"unknown target {target!r}: known are {', '.join(names())}, or give path/to/file.py:NAME")
