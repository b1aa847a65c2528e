"""The environment a baseline's numbers were taken in, and which differences make two runs
incomparable.

Facts are captured once per document (GPU, driver, CUDA, torch, the DSL, ncu and its
clock and cache control, the toolchain, git state); unknown facts are None, never guessed.
Each metric family names the facts that must be equal on both sides for its metrics to be
compared; the git commit and the creation time are recorded but never compared.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from kernelscope.errors import UserError
from kernelscope.gate.policy import CORRECTNESS, COUNTERS, FAMILIES, STATIC, TIMING
from kernelscope.toolchain.tools import find_cuda_tool, package_version

# Environment facts that must be equal on both sides for a family to be comparable.
# The git commit and the creation time are recorded but never compared.
ENVIRONMENT_KEYS: dict[str, tuple[str, ...]] = {
    TIMING: ("gpu.name", "gpu.sm_count", "gpu.compute_capability", "driver", "cuda",
             "torch", "nvidia-cutlass-dsl", "timing.clock_control", "timing.flush_l2", "timing.fresh_inputs",
             "timing.application_clocks_mhz", "timing.power_limit"),
    COUNTERS: ("gpu.name", "gpu.sm_count", "gpu.compute_capability", "driver", "ncu.version",
               "ncu.clock_control", "ncu.cache_control", "nvidia-cutlass-dsl"),
    STATIC: ("nvidia-cutlass-dsl", "static.analysis"),
    CORRECTNESS: (),
}


@dataclass
class EnvironmentDifference:
    key: str
    baseline: Any
    current: Any
    families: list[str]


def environment_differences(base: Mapping[str, Any], cur: Mapping[str, Any],
                            families: Iterable[str] = FAMILIES) -> list[EnvironmentDifference]:
    """Facts that differ, with the families they make incomparable. A fact unknown on
    both sides is no difference; known on one side only, it is."""
    by_key: dict[str, list[str]] = {}
    for family in families:
        for key in ENVIRONMENT_KEYS.get(family, ()):
            by_key.setdefault(key, []).append(family)
    out = []
    for key, fams in by_key.items():
        a, b = lookup(base, key), lookup(cur, key)
        if a != b:
            out.append(EnvironmentDifference(key=key, baseline=a, current=b, families=fams))
    return out


def lookup(env: Mapping[str, Any], dotted: str) -> Any:
    """env["gpu"]["name"] for "gpu.name"; a key that itself holds a dot (a package name) is
    looked up whole first."""
    if dotted in env:
        return env[dotted]
    node: Any = env
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _command_output(cmd: list[str]) -> str | None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def git_state(folder: str | os.PathLike | None = None) -> dict[str, Any]:
    folder = str(folder or Path(__file__).resolve().parent.parent)
    commit = _command_output(["git", "-C", folder, "rev-parse", "HEAD"])
    status = _command_output(["git", "-C", folder, "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _tool_version(name: str) -> str | None:
    try:
        tool = find_cuda_tool(name)
    except UserError:
        return None
    out = _command_output([tool, "--version"])
    lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
    return lines[-1] if lines else None


def _smi(field: str) -> str | None:
    """One nvidia-smi query field of the first GPU (None when unavailable)."""
    out = _command_output(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"])
    value = out.splitlines()[0].strip() if out else None
    return None if not value or value.startswith("[") or value == "N/A" else value


def _driver_version() -> str | None:
    return _smi("driver_version")


def capture_environment(*, gpu: bool, ncu: Mapping[str, Any] | None = None, flush_l2: bool | None = None,
                        git_folder: str | None = None) -> dict[str, Any]:
    """Facts that decide whether two runs are comparable. Unknown facts are None, never guessed."""
    from kernelscope.profiler.static import ANALYSIS_VERSION

    env: dict[str, Any] = {
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node() or None,
        "python": platform.python_version(),
        "kernelscope": _kernelscope_version(),
        "nvidia-cutlass-dsl": package_version("nvidia-cutlass-dsl"),
        "cuobjdump": _tool_version("cuobjdump"),
        "static": {"analysis": ANALYSIS_VERSION},
        "git": git_state(git_folder),
    }
    if gpu:
        import torch

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        env["gpu"] = {"name": props.name, "sm_count": props.multi_processor_count,
                      "compute_capability": f"{props.major}.{props.minor}",
                      "memory_bytes": int(props.total_memory),
                      "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None}
        env["driver"] = _driver_version()
        env["cuda"] = torch.version.cuda
        env["torch"] = torch.__version__
        # Timing never locks clocks: the GPU runs at whatever clocks its driver picks.
        # The settings that bound the clocks and power the driver may choose (not the
        # momentary clocks, which move with every launch).
        env["timing"] = {"clock_control": "none", "flush_l2": flush_l2, "method": "cuda-events",
                         "application_clocks_mhz": _join(_smi("clocks.applications.graphics"),
                                                         _smi("clocks.applications.memory")),
                         "power_limit": _smi("power.limit")}
    if ncu is not None:
        env["ncu"] = dict(ncu)
    return env


def _join(*parts: str | None) -> str | None:
    return None if any(p is None for p in parts) else "/".join(parts)


def _kernelscope_version() -> str:
    from kernelscope import __version__

    return __version__


def version_number(text: str | None) -> str | None:
    """'Version 2025.3.1.0 (build 36398880)' and '2025.3.1.0 (build ...)' -> '2025.3.1.0'."""
    if not text:
        return None
    m = re.search(r"\d+(?:\.\d+)+", text)
    return m.group(0) if m else text
