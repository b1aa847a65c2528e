"""Load profiles from any input kernelscope accepts: a .ncu-rep or a kernelscope JSON file (.xz too)."""

from __future__ import annotations

import math
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.profiler.documents import read_json
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.report import REPORT_MAGIC, decompressed, load_report
from kernelscope.profiler.report_sass import counts_no_instructions
from kernelscope.profiler.worker import NVTX_PREFIX, REFERENCE_RANGE, TARGET_RANGE

SHOW_SCHEMA = "kernelscope.show"
SHOW_SCHEMA_VERSION = 1


def load_profiles(path: str | Path, *, group_nvtx_prefix: str | None = None, lines=False,
                  timeline: bool = False, static_sass=False) -> list[KernelProfile]:
    """Profiles from a .ncu-rep or a kernelscope JSON file, either one possibly .xz-compressed.
    With `lines`, each gets its per-source-line records where the input holds them; with
    `timeline`, its PM samples (only a report holds them); with `static_sass` (True or a
    predicate), the static__ facts of its function's SASS (a report's; a JSON file keeps those
    it was written with)."""
    path = Path(path)
    if path.name.endswith(".json.xz"):
        _refuse_timeline(path, timeline)
        with decompressed(path, ".json") as plain:
            profiles = _load_json(plain)
        return profiles
    if path.suffix == ".json":
        _refuse_timeline(path, timeline)
        return _load_json(path)
    if path.exists() and path.is_file() and path.suffix != ".xz":
        try:
            with open(path, "rb") as f:
                head = f.read(16)
        except OSError as e:
            raise UserError(f"{path}: cannot read ({e.strerror or e})") from None
        if head.lstrip().startswith(b"{"):
            _refuse_timeline(path, timeline)
            return _load_json(path)
        if not head.startswith(REPORT_MAGIC):
            raise UserError(f"{path}: not an Nsight Compute report (.ncu-rep) or kernelscope JSON file")
    return load_report(path, group_nvtx_prefix=group_nvtx_prefix, lines=lines, timeline=timeline,
                       static_sass=static_sass)


def _refuse_timeline(path: Path, timeline: bool) -> None:
    # A kernelscope JSON file keeps the profiles' totals; the PM samples stay in the report.
    if timeline:
        raise UserError(f"{path}: a kernelscope JSON file holds no PM samples; a timeline needs the .ncu-rep report")


def load_profile_run(path: str | Path, lines: bool = False) -> tuple[KernelProfile | None, KernelProfile | None, list[KernelProfile]]:
    """A report made by `profile`: (target, reference, every profile), launches merged by the
    worker's `ks:` NVTX ranges; target or reference is None where its range holds no launch. Where
    the report counts no instructions (`profile --set basic`), each launch carries its code's
    static__ facts, as a diff of any report does."""
    profiles = load_profiles(path, group_nvtx_prefix=NVTX_PREFIX, lines=lines, static_sass=counts_no_instructions)
    by_name = {p.name: p for p in profiles}
    return by_name.get(TARGET_RANGE), by_name.get(REFERENCE_RANGE), profiles


def _load_json(path: Path) -> list[KernelProfile]:
    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema") != SHOW_SCHEMA:
        raise UserError(f"{path}: not a kernelscope profile file (expected schema {SHOW_SCHEMA!r}, from `show --format json`)")
    version = data.get("schema_version")
    if version != SHOW_SCHEMA_VERSION or isinstance(version, bool):
        raise UserError(f"{path}: schema_version {version!r} is not supported "
                        f"(this kernelscope reads the number {SHOW_SCHEMA_VERSION})")
    kernels = data.get("kernels")
    if not isinstance(kernels, list):
        raise UserError(f"{path}: malformed kernelscope profile file ('kernels' must be a list)")
    if not kernels:
        raise UserError(f"{path}: the file holds no kernels")
    profiles = []
    for i, k in enumerate(kernels):
        if not isinstance(k, dict) or not isinstance(k.get("profile"), dict):
            raise UserError(f"{path}: kernel #{i}: malformed (each kernel needs a 'profile' object)")
        problem = profile_problem(k["profile"])
        if problem:
            raise UserError(f"{path}: kernel #{i}: {problem}")
        profiles.append(KernelProfile.from_dict(k["profile"]))
    for profile, entry in zip(profiles, kernels):
        if entry.get("lines"):
            from kernelscope.profiler.source_lines import LineProfile

            try:
                profile.source_lines = LineProfile.from_dict(entry["lines"])
            except (ValueError, KeyError, TypeError) as e:
                raise UserError(f"{path}: per-line records of {profile.name}: {e}") from None
    return profiles


_TEXT_FIELDS = ("source", "kind", "name", "demangled_name")
_DEVICE_FIELDS = {"name": str, "sm_count": int, "compute_capability": str, "max_sm_clock_hz": float,
                  "sm_clock_hz": float, "memory_clock_hz": float}
_SESSION_FIELDS = {"tool": str, "tool_version": str, "command_line": str, "clock_control": str,
                   "cache_control": str, "replay_passes": int}


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _must_be_number(name: str, value: str) -> bool:
    """ncu's numeric metrics carry a roll-up (`.sum`, `.avg.pct_of_peak_sustained_elapsed`);
    its text metrics (names, cache configs, and `breakdown:<metric>` lists) do not. A number
    written as a string is a number written wrongly."""
    if "." in name and ":" not in name:
        return True
    try:
        float(value)
    except ValueError:
        return False
    return True


def profile_problem(d: dict) -> str | None:
    """What is wrong with one profile object of a kernelscope JSON file (None: nothing).

    A file is data someone may have edited or generated: every field that is used is
    checked for its type, so a string where a number belongs is refused, never printed."""
    for key in _TEXT_FIELDS:
        if not isinstance(d.get(key), str):
            return f"'{key}' must be a string"
    if not isinstance(d.get("index"), int) or isinstance(d.get("index"), bool) or d["index"] < 0:
        return "'index' must be a non-negative integer"
    for key in ("grid", "block", "cluster"):
        v = d.get(key)
        if v is not None and (not isinstance(v, list) or len(v) != 3
                              or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v)):
            return f"'{key}' must be null or a list of three positive integers, not {v!r}"
    launches = d.get("launches", 1)
    if not isinstance(launches, int) or isinstance(launches, bool) or launches < 1:
        return f"'launches' must be a positive integer, not {launches!r}"
    for key, fields in (("device", _DEVICE_FIELDS), ("session", _SESSION_FIELDS)):
        v = d.get(key) or {}
        if not isinstance(v, dict):
            return f"'{key}' must be an object"
        for name, value in v.items():
            if name not in fields:
                return f"'{key}.{name}': unknown field (known: {', '.join(fields)})"
            want = fields[name]
            ok = value is None or (_is_number(value) if want is not str else isinstance(value, str))
            if not ok:
                return f"'{key}.{name}' must be {'a string' if want is str else 'a number'} or null, not {value!r}"
    metrics = d.get("metrics")
    if not isinstance(metrics, dict):
        return "'metrics' must be an object of {\"value\": ..., \"unit\": ...} entries"
    for name, m in metrics.items():
        if not isinstance(m, dict) or "value" not in m or set(m) - {"value", "unit"}:
            return f"metric {name}: must be an object with 'value' and 'unit'"
        value = m["value"]
        if value is None:
            return f"metric {name}: the value is null (leave a metric that was not collected out)"
        if isinstance(value, str) and _must_be_number(name, value):
            return f"metric {name}: the value {value!r} is not a number"
        if not isinstance(value, str) and not _is_number(value):
            return f"metric {name}: the value {value!r} is not a number"
        if not isinstance(m.get("unit", ""), str):
            return f"metric {name}: 'unit' must be a string"
    for key in ("instruction_mix", "stalls"):
        v = d.get(key, {})
        if not isinstance(v, dict):
            return f"'{key}' must be an object of name -> number, not a {type(v).__name__}"
        bad = next((k for k, x in v.items() if not _is_number(x) or x < 0), None)
        if bad is not None:
            return f"'{key}.{bad}' must be a non-negative number, not {v[bad]!r}"
    ranges = d.get("nvtx_ranges", [])
    if not isinstance(ranges, list) or not all(isinstance(r, str) for r in ranges):
        return "'nvtx_ranges' must be a list of strings"
    known = set(KernelProfile.__dataclass_fields__)
    unknown = sorted(set(d) - known)
    if unknown:
        return f"unknown field {unknown[0]!r}"
    return None
