"""Reading the documents kernelscope keeps in files: TOML (metric catalogs, rule files, gate
suites) and JSON (baselines, results, caches). A document is the parsed file or one line naming
the file and what is wrong with it; a cache that cannot be read is simply empty."""

from __future__ import annotations

import json
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


def read_json(path: str | Path, what: str = "file", readable: str = "valid JSON") -> Any:
    """A JSON document from a file; a one-line UserError when it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not {readable} ({e})") from None


def read_json_or_empty(path: str | Path) -> dict[str, Any]:
    """The JSON object of a file that may be missing or damaged (a cache, a status file a child
    process may not have written): {} where there is none to read."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
