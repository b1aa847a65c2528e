"""Load profiles from any input kernelscope accepts: a .ncu-rep or a kernelscope JSON file (.xz too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelscope.errors import UserError
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.report import REPORT_MAGIC, decompressed, load_report
from kernelscope.profiler.worker import NVTX_PREFIX, REFERENCE_RANGE, TARGET_RANGE

SHOW_SCHEMA = "kernelscope.show"
SHOW_SCHEMA_VERSION = 1


def load_profiles(path: str | Path, *, group_nvtx_prefix: str | None = None, lines=False) -> list[KernelProfile]:
    """Profiles from a .ncu-rep or a kernelscope JSON file, either one possibly .xz-compressed.
    With `lines`, each gets its per-source-line records where the input holds them."""
    path = Path(path)
    if path.name.endswith(".json.xz"):
        with decompressed(path, ".json") as plain:
            profiles = _load_json(plain)
        return profiles
    if path.suffix == ".json":
        return _load_json(path)
    if path.exists() and path.is_file() and path.suffix != ".xz":
        with open(path, "rb") as f:
            head = f.read(16)
        if head.lstrip().startswith(b"{"):
            return _load_json(path)
        if not head.startswith(REPORT_MAGIC):
            raise UserError(f"{path}: not an Nsight Compute report (.ncu-rep) or kernelscope JSON file")
    return load_report(path, group_nvtx_prefix=group_nvtx_prefix, lines=lines)


def load_profile_run(path: str | Path, lines: bool = False) -> tuple[KernelProfile | None, KernelProfile | None, list[KernelProfile]]:
    """A report made by `profile`: (target, reference, every profile), launches merged by the
    worker's `ks:` NVTX ranges; target or reference is None where its range holds no launch."""
    profiles = load_profiles(path, group_nvtx_prefix=NVTX_PREFIX, lines=lines)
    by_name = {p.name: p for p in profiles}
    return by_name.get(TARGET_RANGE), by_name.get(REFERENCE_RANGE), profiles


def read_json(path: str | Path, what: str = "file", readable: str = "valid JSON") -> Any:
    """A JSON document from a file; a one-line UserError when it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not {readable} ({e})") from None


def _load_json(path: Path) -> list[KernelProfile]:
    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema") != SHOW_SCHEMA:
        raise UserError(f"{path}: not a kernelscope profile file (expected schema {SHOW_SCHEMA!r}, from `show --format json`)")
    version = data.get("schema_version")
    if version != SHOW_SCHEMA_VERSION:
        raise UserError(f"{path}: schema version {version} is not supported (this kernelscope reads {SHOW_SCHEMA_VERSION})")
    try:
        profiles = [KernelProfile.from_dict(k["profile"]) for k in data["kernels"]]
    except (KeyError, TypeError) as e:
        raise UserError(f"{path}: malformed kernelscope profile file (missing {e})") from None
    for profile, entry in zip(profiles, data["kernels"]):
        if isinstance(entry, dict) and entry.get("lines"):
            from kernelscope.profiler.source_lines import LineProfile

            try:
                profile.source_lines = LineProfile.from_dict(entry["lines"])
            except (ValueError, KeyError, TypeError) as e:
                raise UserError(f"{path}: per-line records of {profile.name}: {e}") from None
    return profiles
