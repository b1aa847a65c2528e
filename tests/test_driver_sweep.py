"""Sweep bookkeeping with a FAKE launcher and a FAKE timer on the CPU.

These tests exercise only the sweep logic (combinations, invalid and failing configs kept
as rows, wrong outputs caught before timing, ordering, speed vs the reference); the real
timing path (CUDA events) is covered by the gpu tests.
"""

import torch

from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec
from kernelscope.profiler import measure
from kernelscope.profiler.timing import summarize


def _fake_spec():
    def make_inputs(shape, dtype, seed, device):
        g = torch.Generator().manual_seed(seed)
        return {"x": torch.randn(shape["M"], shape["N"], generator=g),
                "out": torch.full((shape["M"], shape["N"]), float("nan"))}

    def compile(config, shape, dtype, arch):
        if config["tile"] > shape["N"]:
            raise ConfigRejected(f"tile {config['tile']} exceeds N={shape['N']}")
        if config["tile"] == 3:
            raise RuntimeError("backend exploded")

        def launch(inputs):
            out = inputs["out"]
            out.copy_(inputs["x"] * 2)
            if config["buggy"]:
                out[:, 0] = 0.0       # a planted bug: column 0 is wrong
            return out
        return CompiledKernel(launch=launch)

    return KernelSpec(
        name="fake_double", description="FAKE kernel for sweep logic tests", references=[],
        default_shapes=[{"M": 8, "N": 16}], default_config={"tile": 4, "buggy": False}, dtypes=["float32"],
        make_inputs=make_inputs, compile=compile, reference_fp32=lambda inp: inp["x"] * 2,
        flops=lambda s: 0.0, bytes_moved=lambda s, d: 0.0, tolerance={"float32": (1e-6, 1e-6)})


def test_sweep_rows_statuses_and_order():
    spec = _fake_spec()
    configs = measure.combinations({"tile": [4, 8, 3, 32], "buggy": [False, True]}, spec.default_config)
    assert len(configs) == 8
    planted = {4: 2.0, 8: 1.0}
    durations = {"ref": 1.5, "current": None}

    def timer(fn, **kw):   # FAKE timer: reports the duration planted for the config being timed
        fn()
        return summarize([planted[durations["current"]]] * 5)

    def bind_reference(name, spec, inputs):
        return lambda: None

    seen = []

    def on_row(row):
        seen.append(row.status)

    # The timer needs to know which config it times: hook compile to record it.
    original_compile = spec.compile

    def recording_compile(config, shape, dtype, arch):
        durations["current"] = config["tile"]
        return original_compile(config, shape, dtype, arch)
    spec.compile = recording_compile

    ref_timer_calls = []

    def timer_with_ref(fn, **kw):
        if not ref_timer_calls:
            ref_timer_calls.append(1)
            return summarize([durations["ref"]] * 5)
        return timer(fn, **kw)

    result = measure.sweep(spec, "fake_ref", {"M": 8, "N": 16}, "float32", configs, device="cpu",
                           timer=timer_with_ref, bind_reference=bind_reference, on_row=on_row)
    by_cfg = {(r.config["tile"], r.config["buggy"]): r for r in result.rows}
    assert by_cfg[(32, False)].status == "invalid" and "exceeds N=16" in by_cfg[(32, False)].message
    assert by_cfg[(3, False)].status == "failed" and "backend exploded" in by_cfg[(3, False)].message
    assert by_cfg[(4, True)].status == "wrong" and "cols 0" in by_cfg[(4, True)].message
    assert by_cfg[(4, True)].timing is None          # wrong outputs are not timed
    assert by_cfg[(4, False)].status == "ok" and by_cfg[(8, False)].status == "ok"
    assert len(seen) == 8

    ordered = result.sorted_rows()
    assert [(r.config["tile"], r.config["buggy"]) for r in ordered[:2]] == [(8, False), (4, False)]
    assert all(r.timing is None for r in ordered[2:])
    assert result.speed_vs_reference(ordered[0]) == 150.0     # 1.5 ms reference / 1.0 ms
    assert round(result.speed_vs_reference(ordered[1]), 6) == 75.0
    d = result.to_dict()
    assert d["rows"][0]["speed_vs_reference_pct"] == 150.0


def test_each_config_gets_a_freshly_poisoned_output():
    spec = _fake_spec()
    calls = []

    def compile(config, shape, dtype, arch):
        def launch(inputs):
            calls.append(bool(torch.isnan(inputs["out"]).all()))
            # Writes only half: the other half must still be NaN from the re-poisoning.
            inputs["out"][:, :8] = inputs["x"][:, :8] * 2
            return inputs["out"]
        return CompiledKernel(launch=launch)
    spec.compile = compile
    result = measure.sweep(spec, None, {"M": 8, "N": 16}, "float32", [{"tile": 4, "buggy": False}] * 2,
                           device="cpu", timer=lambda fn, **kw: summarize([1.0]))
    assert calls == [True, True]
    assert all(r.status == "wrong" and r.correctness.nan_count == 64 for r in result.rows)
