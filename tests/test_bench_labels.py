"""The GEMM benchmarks label each timed row with its config; a renamed config field must fail
here, on the CPU, not after the first timed shape on a GPU (bench_gemm did once)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gemm  # noqa: E402
import bench_gemm_mma  # noqa: E402
from kernelscope.kernels import gemm, gemm_mma  # noqa: E402


def test_gemm_rows_are_labelled_from_the_config_fields():
    for shape in ({"M": 128, "N": 4096, "K": 4096}, {"M": 4096, "N": 4096, "K": 4096}):
        cfg = gemm.heuristic_config(shape)
        assert bench_gemm._short(cfg).startswith(f"{cfg.tile_m}x{cfg.tile_n} wg{cfg.consumer_wgs}")
        assert f"{cfg.raster}/{cfg.group}" in bench_gemm._short(cfg)


def test_gemm_mma_rows_are_labelled_from_the_config_fields():
    for fields in gemm_mma.SHAPE_CANDIDATES:
        cfg = gemm_mma.MmaGemmConfig.from_mapping(fields)
        assert bench_gemm_mma._short(cfg).startswith(f"{cfg.tile_m}x{cfg.tile_n} w{cfg.warps_m}x{cfg.warps_n}")
