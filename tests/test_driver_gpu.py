"""The driver on a GPU: kernels checked and timed, timing against do_bench, profiles under ncu."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from kernelscope.kernels import rmsnorm

pytestmark = pytest.mark.gpu

EXAMPLE = os.path.join(os.path.dirname(__file__), "examples", "my_scale.py")


def _ncu_available():
    from kernelscope.errors import UserError
    from kernelscope.profiler.ncu import find_ncu

    try:
        find_ncu()
        return True
    except UserError:
        return False


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("config,shape", [
    ({"threads": 256, "vec": 8}, {"M": 1000, "N": 4096}),
    pytest.param({"threads": 128, "vec": 4}, {"M": 37, "N": 2048}, marks=pytest.mark.gpu_fast),
    ({"threads": 1024, "vec": 8}, {"M": 3, "N": 8192}),
])
def test_rmsnorm_is_correct(dtype, config, shape):
    import torch

    from kernelscope.profiler.measure import check_output

    for seed in (0, 1):
        inputs = rmsnorm.SPEC.make_inputs(shape, dtype, seed, "cuda")
        rmsnorm.SPEC.compile(config, shape, dtype, "sm_90a").launch(inputs)
        torch.cuda.synchronize()
        report = check_output(rmsnorm.SPEC, inputs["out"], inputs, dtype)
        assert report.ok, (report.where(), report.diagnoses)
        assert report.nan_count == 0


def test_user_kernel_file_is_correct():
    import torch

    from kernelscope.kernels import registry
    from kernelscope.profiler.measure import check_output

    spec = registry.resolve(f"{EXAMPLE}:SPEC")
    shape = {"M": 512, "N": 1024}
    inputs = spec.make_inputs(shape, "bfloat16", 0, "cuda")
    spec.compile(spec.default_config, shape, "bfloat16", "sm_90a").launch(inputs)
    torch.cuda.synchronize()
    assert check_output(spec, inputs["out"], inputs, "bfloat16").ok


def test_time_callable_sees_work_scale():
    import torch

    from kernelscope.profiler.timing import time_callable

    small = torch.empty(1 << 20, device="cuda")
    big = torch.empty(1 << 26, device="cuda")
    t_small = time_callable(lambda: small.fill_(1.0), rep_ms=20)
    t_big = time_callable(lambda: big.fill_(1.0), rep_ms=20)
    assert t_small.n >= 10 and t_big.n >= 2
    assert t_small.q1_ms <= t_small.median_ms <= t_small.q3_ms
    assert t_big.median_ms > 8 * t_small.median_ms    # 64x the bytes


def test_run_agrees_with_do_bench():
    triton = pytest.importorskip("triton")
    from kernelscope.profiler.timing import time_callable

    shape = {"M": 16384, "N": 4096}
    inputs = rmsnorm.SPEC.make_inputs(shape, "bfloat16", 0, "cuda")
    fn = rmsnorm.SPEC.compile(rmsnorm.SPEC.default_config, shape, "bfloat16", "sm_90a").bound(inputs)
    ours = time_callable(fn, rep_ms=200).median_ms
    theirs = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
    assert abs(ours - theirs) / theirs < 0.03, (ours, theirs)


def test_sweep_reports_invalid_configs_on_gpu():
    from kernelscope.profiler import measure

    configs = measure.combinations({"threads": [64, 256], "vec": [8]}, rmsnorm.SPEC.default_config)
    result = measure.sweep(rmsnorm.SPEC, "torch.rmsnorm", {"M": 2048, "N": 8192}, "bfloat16", configs,
                           timer_kwargs={"rep_ms": 20})
    status = {r.config["threads"]: r.status for r in result.rows}
    assert status == {64: "invalid", 256: "ok"}
    assert result.speed_vs_reference(result.sorted_rows()[0]) > 0


NEEDS_NCU = pytest.mark.skipif(not shutil.which("ncu") and not os.path.exists("/usr/local/cuda/bin/ncu"),
                               reason="needs ncu")


@NEEDS_NCU
@pytest.mark.parametrize("target,vs", [("rmsnorm", "torch.rmsnorm"), (f"{EXAMPLE}:SPEC", "torch")])
def test_profile_captures_exactly_the_two_ranges(tmp_path, target, vs):
    out = tmp_path / "p.ncu-rep"
    r = subprocess.run([sys.executable, "-m", "kernelscope", "profile", target, "--vs", vs,
                        "--shape", "M=2048,N=4096" if "my_scale" not in target else "M=1024,N=1024",
                        "--set", "SpeedOfLight", "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "captured: target 1 launch(es), reference" in r.stdout
    # Read the report in a process without torch (ncu's report module and torch may not share one).
    read = ("import json, sys; from kernelscope.profiler.report import load_report; "
            "p = sys.argv[1]; print(json.dumps([len(load_report(p)), "
            "[x.name for x in load_report(p, group_nvtx_prefix='ks:')]]))")
    got = subprocess.run([sys.executable, "-c", read, str(out)], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    launches, grouped = json.loads(got.stdout.strip().splitlines()[-1])
    assert launches == 2                                        # exactly one target and one reference launch
    assert grouped == ["ks:target", "ks:reference"]
    side = json.load(open(str(out) + ".kernelscope.json"))
    assert side["request"]["clock_control"] == "none" and side["worker_status"]["correct"] is True



@NEEDS_NCU
@pytest.mark.gpu_fast
@pytest.mark.gpu_seconds(29)  # 29.0 s on an H200 (gpu-tiers-h200.txt.xz, 2026-12-02)
def test_cli_run_profile_diff_end_to_end(tmp_path):
    """The everyday commands as a user types them: run checks and times, profile writes a report
    of both sides, diff reads that report back and says which is faster."""
    results, report = tmp_path / "run.json", tmp_path / "rms.ncu-rep"
    shape = ["--shape", "M=2048,N=4096"]
    out = {}
    for command in (["run", "rmsnorm", "--vs", "torch.rmsnorm", *shape, "--rep-ms", "50", "--json", str(results)],
                    ["profile", "rmsnorm", "--vs", "torch.rmsnorm", *shape, "-o", str(report)],
                    ["diff", str(report)]):
        r = subprocess.run([sys.executable, "-m", "kernelscope", *command], capture_output=True, text=True,
                           timeout=600, env={**os.environ, "COLUMNS": "160"})
        assert r.returncode == 0, f"kernelscope {' '.join(command)} exited {r.returncode}\n{r.stderr[-3000:]}{r.stdout[-3000:]}"
        out[command[0]] = r.stdout
    (run,) = json.loads(results.read_text())
    assert run["target"] == "rmsnorm" and run["target_side"]["correctness"]["ok"] is True
    assert run["target_side"]["timing"]["median_ms"] > 0 and run["reference_side"]["timing"]["median_ms"] > 0
    assert report.is_file() and "captured: target 1 launch(es), reference" in out["profile"]
    assert "RMSNormRows" in out["diff"], out["diff"][:2000]
    assert " slower than " in out["diff"] or " take the same time " in out["diff"], out["diff"][:2000]
