"""Tests marked `gpu` run only where a CUDA GPU is visible; elsewhere (CI) they are skipped."""

import pytest


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


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
