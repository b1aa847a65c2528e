"""Tests marked `gpu` run only where a CUDA GPU is visible; elsewhere (CI) they are skipped.

GPU tiers (README, "GPU tests"): `-m gpu_fast` is the fast tier; `--gpu-part K/N` keeps part K
of the full tier (every `gpu` test) dealt into N parts (tests/gpu_tiers.py)."""

import pytest

import gpu_tiers
from kernelscope.api import pytest_plugin


def pytest_addoption(parser):
    parser.addoption("--gpu-part", metavar="K/N", default=None,
                     help="run only part K of the GPU tests (marker gpu) dealt into N parts")


def pytest_configure(config):
    part = config.getoption("--gpu-part", None)
    if part is not None:
        try:
            gpu_tiers.parse_part(part)
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    part = config.getoption("--gpu-part", None)
    if part is not None:
        k, n = gpu_tiers.parse_part(part)
        gpu = [i for i in items if "gpu" in i.keywords]
        seconds = {i.nodeid: gpu_tiers.seconds_of(i) for i in gpu}
        chosen = set(gpu_tiers.deal([i.nodeid for i in gpu], n, seconds)[k - 1])
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in chosen])
        items[:] = [i for i in items if i.nodeid in chosen]
    # The project's pytest plugin skips `gpu` tests where no CUDA GPU is visible; an installed
    # checkout loads it through its entry point, a plain one (not installed) through this hook.
    if not config.pluginmanager.has_plugin("kernelscope"):
        pytest_plugin.pytest_collection_modifyitems(config, items)


# ---------------------------------------------------------------------------------
# Report fixtures: real reports kept xz-compressed under tests/fixtures/.

import lzma
import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixture_file(tmp_path_factory):
    """fixture_file("name.ncu-rep") -> path of the decompressed copy of tests/fixtures/name.ncu-rep.xz."""
    cache = tmp_path_factory.mktemp("fixtures")

    def get(name: str) -> Path:
        target = cache / name
        if not target.exists():
            plain = FIXTURES / name
            if plain.exists():
                shutil.copy(plain, target)
            else:
                with lzma.open(FIXTURES / f"{name}.xz") as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        return target

    return get
