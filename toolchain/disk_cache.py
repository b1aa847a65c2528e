"""Where kernelscope keeps what it computed once and reads back later (compiles, ncu's metric
list), and the source hash that keys a compile.

Location: $KERNELSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/kernelscope, else ~/.cache/kernelscope.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable

# Source files larger than this are not kernel code; skipping them keeps hashing fast.
_MAX_SOURCE_BYTES = 4 * 1024 * 1024


def cache_root() -> Path:
    override = os.environ.get("KERNELSCOPE_CACHE_DIR")
    if override:
        root = Path(override).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "kernelscope"
    # A setting that points at a file would fail deep inside a compile; say so here.
    for folder in (root, *root.parents):
        if folder.exists():
            if not folder.is_dir():
                from kernelscope.errors import EXIT_ENVIRONMENT, UserError

                what = "KERNELSCOPE_CACHE_DIR" if override else "the cache folder"
                raise UserError(f"{what} {root}: {folder} is a file, not a folder", exit_code=EXIT_ENVIRONMENT)
            break
    return root


def source_files(folder: Path, recursive: bool) -> list[Path]:
    pattern = "**/*.py" if recursive else "*.py"
    files = [p for p in folder.glob(pattern) if p.is_file() and "__pycache__" not in p.parts]
    return sorted(p for p in files if p.stat().st_size <= _MAX_SOURCE_BYTES)


def hash_sources(files: Iterable[Path], relative_to: Path) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(str(path.relative_to(relative_to)).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def write_json_atomically(path: Path, value) -> bool:
    """`value` as JSON at `path`, whole or not at all (a concurrent reader sees the old file or
    the new one); False where the cache cannot be written, which only costs the next run."""
    import json

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(value))
        os.replace(tmp, path)
        return True
    except OSError:
        return False
