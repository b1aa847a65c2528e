"""CPU checks of the GEMM benchmarks' own mistakes: each timed row is labelled from its config
(a renamed config field must fail here, not after the first timed shape on a GPU, as it once
did in bench_gemm), and a file named on the command line must exist."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gemm  # noqa: E402
import bench_gemm_mma  # noqa: E402
import gemm_launch_context  # noqa: E402  (imports nothing heavy at module level)
import launch_overhead  # noqa: E402,F401  (imports nothing heavy at module level)
from kernelscope.kernels import gemm, gemm_mma  # noqa: E402


def test_gemm_rows_are_labelled_from_the_config_fields():
    for shape in ({"M": 128, "N": 4096, "K": 4096}, {"M": 4096, "N": 4096, "K": 4096}):
        cfg = gemm.heuristic_config(shape)
        assert bench_gemm._short(cfg).startswith(f"{cfg.tile_m}x{cfg.tile_n} wg{cfg.consumer_wgs}")
        assert f"{cfg.raster}/{cfg.group}" in bench_gemm._short(cfg)
    # Split-K rows differ from whole-K rows of the same tile only in this.
    assert bench_gemm._short(gemm.heuristic_config({"M": 128, "N": 1024, "K": 16384})).endswith(" split4")
    assert bench_gemm._short(gemm.GemmConfig(tail_split=True)).endswith(" tail-split")
    # Configs that differ only in the epilogue subtiles get different labels.
    assert bench_gemm._short(gemm.heuristic_config({"M": 4096, "N": 4096, "K": 4096})).endswith(" epi64")
    assert bench_gemm._short(gemm.GemmConfig(epi_n=64, epi_stages=2)) != bench_gemm._short(gemm.GemmConfig(epi_n=64))


def test_gemm_mma_rows_are_labelled_from_the_config_fields():
    for fields in gemm_mma.SHAPE_CANDIDATES:
        cfg = gemm_mma.MmaGemmConfig.from_mapping(fields)
        assert bench_gemm_mma._short(cfg).startswith(f"{cfg.tile_m}x{cfg.tile_n} w{cfg.warps_m}x{cfg.warps_n}")


def test_a_missing_ceiling_file_is_refused_before_any_gpu_work(capsys):
    """It used to be skipped silently, leaving the JSON's ceiling column empty."""
    import pytest
    with pytest.raises(SystemExit) as exit_info:
        bench_gemm_mma._parse_args(["--hmma-ceiling", "/nonexistent/hmma-ceiling.json"])
    assert exit_info.value.code == 2
    assert "no such file: /nonexistent/hmma-ceiling.json" in capsys.readouterr().err


def test_launch_overhead_needs_a_gpu_and_says_so(capsys):
    import launch_overhead
    import torch
    if torch.cuda.is_available():
        import pytest
        pytest.skip("a GPU is here: the benchmark would run")
    assert launch_overhead.main(["--calls", "64"]) == 3
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_paired_gemm_rows_report_the_per_round_ratio_and_its_interval():
    """bench_gemm --paired: a clock drift that slows both launches of a round cancels in the
    per-round ratio, which the row reports (not the ratio of the two sides' medians), with an
    interval that says whether 1.00 is cleared."""
    import random

    import _bench_common as common
    rng = random.Random(0)
    drift = [1.0 + 0.2 * (r / 199) for r in range(200)]               # clocks fall 20 % over the run
    ours = [d * (1.0 + 0.002 * rng.random()) for d in drift]
    cublas = [d * 1.02 * (1.0 + 0.002 * rng.random()) for d in drift]  # cuBLAS 2 % slower, every round
    row = common.paired_versus_cublas(2e12, {"samples_ms": [ours, cublas], "pass_of_round": [0] * 100 + [1] * 100,
                                             "rounds_per_pass": 100})
    assert abs(row["ratio_vs_cublas"] - 1.02) < 0.003
    lo, hi = row["paired"]["ratio_ci95"]
    assert 1.0 < lo <= row["ratio_vs_cublas"] <= hi < 1.03 and row["paired"]["at_least_1"] == "met"
    assert row["paired"]["rounds"] == 200 and len(row["paired"]["pass_medians_ms"][0]) == 2
    line = common.versus_cublas_line({**row, "shape": {"M": 1, "N": 2, "K": 3}, "rel_norm_error": 0.0}, None)
    assert "paired, 200 rounds" in line and ">= 1.00: met" in line
    # Equal sides: the interval straddles 1.00 and the verdict says the run cannot tell.
    even = common.paired_versus_cublas(2e12, {"samples_ms": [ours, ours[::-1]], "pass_of_round": [0] * 200,
                                              "rounds_per_pass": 200})
    assert even["paired"]["at_least_1"] == "unresolved"
    # Launches the GPU had to wait for are named in the line: their samples are host time.
    slow = common.paired_versus_cublas(2e12, {"samples_ms": [ours, cublas], "pass_of_round": [0] * 200,
                                              "rounds_per_pass": 200, "host_waited": [180, 0]})
    assert slow["paired"]["host_waited_share"] == [0.9, 0.0]
    assert "SUSPECT: the GPU waited for the host in 90% of our launches" in common.versus_cublas_line(
        {**slow, "shape": {"M": 1, "N": 2, "K": 3}, "rel_norm_error": 0.0}, None)
    assert "SUSPECT" not in line
    # A suspect row is never ranked: the shape's best ratio comes from its clean rows.
    assert slow["suspect"] and not row["suspect"]
    shape = {"M": 1, "N": 2, "K": 3}
    geo, shapes = common.best_ratio_geomean([{**slow, "ratio_vs_cublas": 1.5, "shape": shape},
                                             {**row, "shape": shape}])
    assert shapes == 1 and abs(geo - row["ratio_vs_cublas"]) < 1e-12


def test_the_sanitizer_script_needs_a_gpu_and_says_so(capsys):
    import sanitize_flash_attn
    import torch
    if torch.cuda.is_available():
        import pytest
        pytest.skip("a GPU is here: the script would run")
    assert sanitize_flash_attn.main() == 3
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_launch_context_summary_of_a_missing_report_is_one_line_and_exit_2(tmp_path, capsys):
    assert gemm_launch_context.main(["--summarize", str(tmp_path / "none.ncu-rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gemm_launch_context: ") and "\n" not in err


def test_result_files_named_xz_are_xz(tmp_path):
    import json
    import lzma

    from _bench_common import write_json

    write_json(str(tmp_path / "r.json.xz"), {"ratio": 1.0})
    write_json(str(tmp_path / "r.json"), {"ratio": 1.0})
    assert json.load(lzma.open(tmp_path / "r.json.xz")) == {"ratio": 1.0}
    assert json.loads((tmp_path / "r.json").read_text()) == {"ratio": 1.0}


def test_committed_result_files_named_xz_are_xz():
    results = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
    for path in results.glob("*.xz"):
        with path.open("rb") as f:
            assert f.read(6) == b"\xfd7zXZ\x00", f"{path.name} is not xz-compressed"
