"""Files the commands write: never replace one without --force, never invent a missing folder,
and never leave half a file behind (a temp file beside the target, then a rename).

Every writer checks its paths before any work starts, so a refusal costs nothing and a
long measurement is never thrown away because its output could not be written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import click

from kernelscope.errors import UserError


def force_option(f):
    """`-f/--force`, as in ncu: replace output files that exist."""
    return click.option("-f", "--force", is_flag=True, help="Replace output files that already exist.")(f)


def check_output_file(path: str | None, force: bool, what: str = "output") -> None:
    """Refuse now, before any work, a path that cannot be written as asked."""
    if not path:
        return
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{path}: is a folder; the {what} needs a file name")
    if p.exists() and not force:
        raise UserError(f"{path} exists: pass -f/--force to replace it")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UserError(f"cannot write the {what} to {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UserError(f"cannot write the {what} to {path}: the folder {folder} is not writable")


def check_output_folder(path: str | None, what: str = "output") -> None:
    """A folder an option names may be created, but only inside one that exists."""
    if not path:
        return
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UserError(f"{path}: exists and is not a folder (the {what} goes into a folder)")
    parent = p.parent if str(p.parent) else Path(".")
    if not p.exists() and not parent.is_dir():
        raise UserError(f"cannot create {path} for the {what}: the folder {parent} does not exist")


def write_text(path: str, text: str, *, force: bool, what: str = "output") -> None:
    """Write atomically; an existing file is replaced only with force."""
    check_output_file(path, force, what)
    with atomic_path(path, what, force=force) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")


@contextlib.contextmanager
def atomic_path(path: str, what: str = "output", *, force: bool = False):
    """A temporary path beside `path` to write into; moved onto `path` when the block ends
    normally, removed on any error or interrupt. Without force the move is a hard link,
    which fails if the file appeared meanwhile (another command writing the same name)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
        os.close(fd)
    except OSError as e:
        raise UserError(f"cannot write the {what} to {path}: {e.strerror or e}") from None
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # mkstemp makes files private; outputs are ordinary files
        if force:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path)
    except FileExistsError:
        raise UserError(f"{path} exists: pass -f/--force to replace it") from None
    except OSError as e:
        raise UserError(f"cannot write the {what} to {path}: {e.strerror or e}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _link_new(tmp: str, path: str) -> None:
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        # A file system without hard links: the check before the work is all there is.
        if os.path.exists(path):
            raise FileExistsError(path) from None
        os.replace(tmp, path)
