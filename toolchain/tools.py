"""Finding and running NVIDIA's command-line tools, one search order for all of them.

Where a tool is looked for, first to last:
1. the PyPI wheel that ships it (`nvidia-cuda-cuobjdump`, `nvidia-cuda-nvdisasm`), so the
   version the project pins wins over whatever CUDA happens to be installed;
2. PATH;
3. `bin/` under $CUDA_HOME, $CUDA_PATH and /usr/local/cuda.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from kernelscope.errors import UserError

# PyPI distributions that ship a CUDA binary tool, by tool name.
TOOL_DISTRIBUTIONS = {
    "cuobjdump": "nvidia-cuda-cuobjdump",
    "nvdisasm": "nvidia-cuda-nvdisasm",
}

# How to name a tool no wheel ships, and what to tell a user who lacks it.
_DISPLAY_NAMES = {"ncu": "ncu (Nsight Compute)"}
_INSTALL_HINTS = {"ncu": "install Nsight Compute or add it to PATH"}


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _from_wheel(name: str) -> str | None:
    dist_name = TOOL_DISTRIBUTIONS.get(name)
    if dist_name is None:
        return None
    import importlib.metadata  # here: reading package metadata costs every command's start-up

    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.name == name:
            candidate = Path(dist.locate_file(entry))
            if _executable(candidate):
                return str(candidate)
    return None


def cuda_homes() -> list[str]:
    """The CUDA installs to look in, in order: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [r for r in dict.fromkeys(roots) if r]


def which_cuda_tool(name: str) -> str | None:
    """Path of a CUDA tool in the search order above, or None."""
    found = _from_wheel(name) or shutil.which(name)
    if found:
        return found
    for root in cuda_homes():
        candidate = Path(root) / "bin" / name
        if _executable(candidate):
            return str(candidate)
    return None


def find_cuda_tool(name: str) -> str:
    """Path of a CUDA tool; a UserError (exit 3: the environment) naming how to get it."""
    found = which_cuda_tool(name)
    if found:
        return found
    dist_name = TOOL_DISTRIBUTIONS.get(name)
    hint = f"pip install {dist_name} (or put the CUDA toolkit's bin on PATH)" if dist_name \
        else _INSTALL_HINTS.get(name, "put the CUDA toolkit's bin on PATH")
    raise UserError(f"{_DISPLAY_NAMES.get(name, name)} is not on PATH nor in $CUDA_HOME/bin or /usr/local/cuda/bin: {hint}",
                    exit_code=3)


def run_tool(name: str, *args: str) -> str:
    """stdout of a CUDA tool; a UserError with the tool's last line when it fails."""
    tool = find_cuda_tool(name)
    result = subprocess.run([tool, *args], capture_output=True, text=True)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise UserError(f"{name} {' '.join(args[:-1])} failed: {detail[-1] if detail else 'no output'}")
    return result.stdout


def package_version(dist_name: str) -> str | None:
    """Installed version of a distribution, or None."""
    import importlib.metadata

    try:
        return importlib.metadata.version(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
