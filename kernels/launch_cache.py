"""A kernel's launched variant, compiled once and loaded by every later process.

`cute.compile` never reads the DSL's own file cache, so every process that launches a kernel
(`run`, each sweep worker, the process ncu profiles) compiled it again: 3 to 25 s on the H100
host, most of a profile's time. The DSL can write a compiled function as an object file (its
host launch code with the cubin inside) and load one back without a C compiler
(`cutlass.cute.runtime.load_module`, JIT-linked). This module keeps those objects on disk.

An entry is keyed by everything that decides the compiled code:
- the variant's own key, given by the kernel (its config, dtypes, operand majors, ...);
- the source of the whole kernels package (a kernel imports shared code from kernels/sm90);
- the DSL's version and every CUTE_DSL_* setting but folders (target arch, line info, ...);
- this host's CPU and Python: the object holds host code built for them.

An entry is written whole or not at all (a folder renamed into place), a damaged one is
discarded and compiled again, and KERNELSCOPE_NO_LAUNCH_CACHE=1 turns the cache off.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

ENTRY_FORMAT = 1
# What this process did, for the profiled worker's status and for tests.
stats = {"loaded": 0, "stored": 0, "compiled": 0}


class LoadedCompile:
    """A compiled function loaded from an entry: called as the compile's own result is, and
    carrying its cubin and PTX where cute_build.artifacts looks for them."""

    def __init__(self, fn: Callable, cubin: bytes | None, ptx: str | None):
        self._fn = fn
        self.__cubin__ = cubin
        self.__ptx__ = ptx

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)


def enabled() -> bool:
    return os.environ.get("KERNELSCOPE_NO_LAUNCH_CACHE", "") in ("", "0")


@functools.lru_cache(maxsize=1)
def _kernels_source_hash() -> str:
    from kernelscope.toolchain.disk_cache import hash_sources, source_files

    folder = Path(__file__).resolve().parent
    return hash_sources(source_files(folder, recursive=True), folder)


@functools.lru_cache(maxsize=1)
def _host_identity() -> str:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            wanted = [ln.strip() for ln in f.read(65536).splitlines() if ln.startswith(("model name", "flags"))]
        cpu = "|".join(wanted[:2])
    except OSError:
        pass
    return f"{platform.machine()}|{platform.python_version()}|{cpu}"


def _dsl_identity() -> str:
    import cutlass

    try:
        from importlib.metadata import version
        dsl = version("nvidia-cutlass-dsl")
    except Exception:  # noqa: BLE001 - an unpacked kit may carry no metadata
        dsl = str(getattr(cutlass, "__version__", "unknown"))
    settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("CUTE_DSL_") and not k.endswith("_DIR"))
    return f"{dsl}|{os.path.dirname(cutlass.__file__)}|{settings}"


def entry_key(kind: str, key: Any) -> str:
    text = json.dumps([ENTRY_FORMAT, kind, repr(key), _kernels_source_hash(), _dsl_identity(), _host_identity()])
    return hashlib.sha256(text.encode()).hexdigest()


def _entry_dir(digest: str) -> Path:
    from kernelscope.toolchain.disk_cache import cache_root

    return cache_root() / "launch" / digest[:2] / digest


def _symbol_prefix(digest: str) -> str:
    return f"ks_{digest[:24]}"


def _load(folder: Path, digest: str) -> LoadedCompile | None:
    if not (folder / "meta.json").is_file():
        return None
    try:
        meta = json.loads((folder / "meta.json").read_text())
        if meta.get("format") != ENTRY_FORMAT or meta.get("key") != digest:
            raise ValueError("another entry format or key")
        from cutlass.cute.runtime import load_module

        fn = load_module(str(folder / "launch.o"))[_symbol_prefix(digest)]
        cubin = (folder / "kernel.cubin").read_bytes() if (folder / "kernel.cubin").is_file() else None
        ptx = (folder / "kernel.ptx").read_text() if (folder / "kernel.ptx").is_file() else None
        return LoadedCompile(fn, cubin, ptx)
    except Exception:  # noqa: BLE001 - a damaged or foreign entry is compiled again
        shutil.rmtree(folder, ignore_errors=True)
        return None


def _store(folder: Path, digest: str, compiled: Any, kind: str) -> bool:
    from kernelscope.kernels.cute_build import artifacts

    try:
        obj = compiled.dump_to_object(_symbol_prefix(digest))
    except Exception:  # noqa: BLE001 - a compile the DSL cannot export still runs; it is just not kept
        return False
    cubin, ptx = artifacts(compiled)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{digest[:8]}-", dir=folder.parent))
        (tmp / "launch.o").write_bytes(obj)
        if cubin:
            (tmp / "kernel.cubin").write_bytes(cubin)
        if ptx:
            (tmp / "kernel.ptx").write_text(ptx)
        (tmp / "meta.json").write_text(json.dumps({"format": ENTRY_FORMAT, "key": digest, "kind": kind}))
        try:
            os.rename(tmp, folder)            # whole or not at all; another process may have won
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
        return True
    except OSError:
        return False                          # a read-only or full cache only costs the next compile


def reusable(kind: str, key: Any, build: Callable[[], Any]) -> Any:
    """`build()` (a cute.compile of a launched variant), or the function an earlier process
    compiled for the same `kind` and `key` and left on disk."""
    if not enabled():
        stats["compiled"] += 1
        return build()
    digest = entry_key(kind, key)
    folder = _entry_dir(digest)
    loaded = _load(folder, digest)
    if loaded is not None:
        stats["loaded"] += 1
        return loaded
    compiled = build()
    stats["compiled"] += 1
    if _store(folder, digest, compiled, kind):
        stats["stored"] += 1
    return compiled
