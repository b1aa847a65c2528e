"""Reading the project's TOML files (metric catalogs, rule files, gate suites): the parsed
document, or one line naming the file and what is wrong with it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kernelscope.errors import UserError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """The TOML document at `path`; a UserError for a missing, unreadable or malformed file,
    naming it as `what` ("rule file")."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a {what}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read the {what} ({getattr(e, 'strerror', None) or e})") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML ({e})") from None
