"""benchmarks/gemm_transposed_probe.py: usage without a GPU, and on one its transposed launch checked
against the product (a probe whose values were wrong would time the wrong kernel)."""

import json
import lzma
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import gemm_transposed_probe as probe  # noqa: E402


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU exit")
def test_without_a_gpu_exits_with_status_2_and_one_line(capsys):
    assert probe.main(["--shapes", "256x256x256"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no CUDA GPU" in err


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (sm_90)")
def test_transposed_launch_writes_the_transposed_product(tmp_path):
    out = tmp_path / "probe.json.xz"
    configs = json.dumps([{}, {"tile_m": 256, "tile_n": 128, "cluster": [1, 2]}])
    assert probe.main(["--shapes", "520x264x136", "--configs", configs, "--rep-ms", "5",
                       "--out", str(out)]) == 0
    rows = json.loads(lzma.open(out).read())["rows"]
    assert [r["transposed_config"]["tile_m"] for r in rows] == [128, 256]
    for row in rows:
        assert row["all_written"] and row["rel_norm_error"] < 1e-2, row
