"""Compile cache for compile-only inspection.

A compile of a CuTe DSL kernel takes seconds; inspecting the same thing again should not.
An entry is keyed by everything that decides the compiled code:

- the kernel's source: a hash of the Python files of the package or folder it lives in
  (a kernel may import its neighbours, so all of them count)
- the request: target, config overrides, shape overrides, dtype and arch as given
  (with the source hash they determine the resolved config and shape)
- the toolchain: nvidia-cutlass-dsl, cuobjdump, kernelscope and analysis versions

The key is computed without importing the kernel (nor torch nor cutlass), so a cached
inspect costs a hash of a few files and a few cuobjdump runs.

An entry holds only a cubin built for its key's arch: `store` refuses any other, and `load`
treats one whose ELF names another arch as a miss (the caller compiles again), so a
compile that went to the wrong target can never be served as the right one.

Location: $KERNELSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/kernelscope, else ~/.cache/kernelscope.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.errors import UserError
from kernelscope.toolchain.cubin import cubin_arch
from kernelscope.toolchain.disk_cache import cache_root

# 2: entries are stored only from a compile the DSL was seen to run (with its launch facts).
ENTRY_FORMAT = 2


def valid_cubin(cubin: bytes) -> bool:
    """A whole 64-bit ELF file: the magic, and every header table and section inside the
    bytes. A truncated or emptied copy fails one of these."""
    if len(cubin) < 64 or cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        return False

    def u(at: int, size: int) -> int:
        return int.from_bytes(cubin[at:at + size], "little")

    phoff, shoff = u(0x20, 8), u(0x28, 8)
    phentsize, phnum, shentsize, shnum = u(0x36, 2), u(0x38, 2), u(0x3A, 2), u(0x3C, 2)
    if shnum == 0 or shoff + shentsize * shnum > len(cubin) or phoff + phentsize * phnum > len(cubin):
        return False
    for i in range(shnum):
        header = shoff + i * shentsize
        nobits = u(header + 4, 4) == 8          # SHT_NOBITS occupies no bytes in the file
        if not nobits and u(header + 0x18, 8) + u(header + 0x20, 8) > len(cubin):
            return False
    return True


@dataclass
class CacheKey:
    target: str                      # "rmsnorm" or "/abs/path/file.py:NAME"
    source_hash: str
    config: dict[str, Any]           # overrides as given, parsed
    shape: dict[str, int]            # overrides as given
    dtype: str | None
    arch: str
    versions: dict[str, str | None] = field(default_factory=dict)

    def digest(self) -> str:
        payload = json.dumps(
            {"format": ENTRY_FORMAT, "target": self.target, "source": self.source_hash,
             "config": self.config, "shape": self.shape, "dtype": self.dtype,
             "arch": self.arch, "versions": self.versions},
            sort_keys=True, default=repr)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class CacheEntry:
    cubin: bytes
    meta: dict[str, Any]             # resolved request and what inspection needs besides the cubin


def _built_for(cubin: bytes, arch: str) -> bool:
    """Whether the cubin's ELF names `arch`; an unreadable cubin is not."""
    try:
        return cubin_arch(cubin) == arch
    except UserError:
        return False


class CompileCache:
    def __init__(self, root: Path | None = None):
        self.root = (root or cache_root()) / "compile"

    def _dir(self, key: CacheKey) -> Path:
        d = key.digest()
        return self.root / d[:2] / d

    def load(self, key: CacheKey) -> CacheEntry | None:
        """The entry for `key`, or None. An entry that does not hold what a store writes (a
        truncated or empty cubin, a damaged entry.json) is removed, so the caller compiles
        and stores a good one in its place."""
        d = self._dir(key)
        if not d.exists():
            return None
        try:
            meta = json.loads((d / "entry.json").read_text())
            cubin = (d / "kernel.cubin").read_bytes()
        except (OSError, ValueError):
            self._discard(d)
            return None
        if (not isinstance(meta, dict) or meta.get("format") != ENTRY_FORMAT or not valid_cubin(cubin)
                or not _built_for(cubin, key.arch)):
            self._discard(d)
            return None
        return CacheEntry(cubin=cubin, meta=meta)

    def _discard(self, entry_dir: Path) -> None:
        # Renamed away first: a concurrent reader sees the whole bad entry or none, never half.
        try:
            doomed = Path(tempfile.mkdtemp(prefix=".bad-", dir=entry_dir.parent))
            os.replace(entry_dir, doomed / "entry")
            shutil.rmtree(doomed, ignore_errors=True)
        except OSError:
            pass

    def store(self, key: CacheKey, cubin: bytes, meta: dict[str, Any]) -> bool:
        """Write atomically: a reader sees a whole entry or none. A failure to write is not an
        error for the inspection itself (the cache is an optimisation). False: nothing stored
        (a cubin for another arch than the key's, or the write failed)."""
        if not _built_for(cubin, key.arch):
            return False
        final = self._dir(key)
        tmp: Path | None = None
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
            (tmp / "kernel.cubin").write_bytes(cubin)
            meta = dict(meta, format=ENTRY_FORMAT, created=time.time())
            (tmp / "entry.json").write_text(json.dumps(meta, indent=1, default=repr))
            if final.exists():
                shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
        except OSError:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            return False
        return True

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
