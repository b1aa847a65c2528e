"""Inputs for the report-page tests: real results made through kernelscope's own code paths.

- a gate result: `baseline save --report` and `gate --report` on the shared fixture pair, with
  two baseline counters moved so that the gate has a regression and an improvement to show;
- a sweep result: `measure.sweep` (the code behind `kernelscope sweep --json`) over a FAKE
  CPU kernel timed by a FAKE timer, since this machine has no GPU. The page only lays the
  result out, so the numbers' origin does not matter to what is tested here.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from kernelscope.kernels.spec import CompiledKernel, ConfigRejected, KernelSpec
from kernelscope.profiler import measure
from kernelscope.profiler.timing import summarize


def gate_json(cli_run, report: Path, workdir: Path) -> Path:
    baseline = workdir / "baseline.json"
    out = workdir / "gate.json"
    result = cli_run("baseline", "save", "--report", report, "-o", baseline, "--force", "--quiet")
    assert result.exit_code == 0, result.output
    doc = json.loads(baseline.read_text())
    counters = doc["cases"][0]["counters"][0]["metrics"]
    counters["dram__bytes_read.sum"]["value"] *= 0.8        # now reads 25% more: a regression
    counters["smsp__inst_executed.sum"]["value"] *= 1.3     # now executes fewer: an improvement
    baseline.write_text(json.dumps(doc))
    result = cli_run("gate", "--baseline", baseline, "--report", report, "--json", out, "--quiet")
    assert out.exists(), result.output
    return out


def _fake_scale_spec() -> KernelSpec:
    def make_inputs(shape, dtype, seed, device):
        g = torch.Generator().manual_seed(seed)
        return {"x": torch.randn(shape["M"], shape["N"], generator=g), "out": torch.empty(shape["M"], shape["N"])}

    def compile(config, shape, dtype, arch):
        if config["tile"] > shape["N"]:
            raise ConfigRejected(f"tile {config['tile']} exceeds N={shape['N']}")

        def launch(inputs):
            return inputs["out"].copy_(inputs["x"] * 3)
        return CompiledKernel(launch=launch)

    return KernelSpec(
        name="fake_scale", description="FAKE CPU kernel for page tests", references=[],
        default_shapes=[{"M": 4, "N": 64}], default_config={"tile": 8, "stages": 2}, dtypes=["float32"],
        make_inputs=make_inputs, compile=compile, reference_fp32=lambda inp: inp["x"] * 3,
        flops=lambda s: 0.0, bytes_moved=lambda s, d: 0.0, tolerance={"float32": (1e-6, 1e-6)})


def sweep_json(workdir: Path) -> Path:
    spec = _fake_scale_spec()
    configs = measure.combinations({"tile": [8, 16, 32, 128], "stages": [2, 3]}, spec.default_config)
    planted_ms = {(8, 2): 0.050, (8, 3): 0.046, (16, 2): 0.041, (16, 3): 0.038, (32, 2): 0.044, (32, 3): 0.036}
    current: dict = {}

    def timer(fn, **kw):   # FAKE timer: the planted duration of the config being timed (the reference: 0.040)
        fn()
        key = current.get("key")
        return summarize([planted_ms.get(key, 0.040)] * 5)

    def bind_reference(name, spec, inputs):
        current["key"] = None
        return lambda: None

    def on_row(row):
        pass

    # measure.sweep times each config right after compiling it; remember which one is next.
    original_compile = spec.compile

    def compile_and_mark(config, shape, dtype, arch):
        current["key"] = (config["tile"], config["stages"])
        return original_compile(config, shape, dtype, arch)

    spec.compile = compile_and_mark
    result = measure.sweep(spec, "fake.reference", {"M": 4, "N": 64}, "float32", configs, device="cpu",
                           timer=timer, bind_reference=bind_reference, on_row=on_row)
    out = workdir / "sweep.json"
    out.write_text(json.dumps(result.to_dict(), indent=1, default=str))
    return out
