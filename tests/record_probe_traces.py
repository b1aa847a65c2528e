"""Record the GPU work of two probed calls, honest and on a side stream (run on a GPU).

    python3 tests/record_probe_traces.py OUT_DIR

Writes OUT_DIR/probe-honest.json and OUT_DIR/probe-side-stream.json (torch.profiler traces
reduced to kernels, copies and memsets): rmsnorm at M=4096,N=4096 bf16, and the planted
side-stream cheat of tests/timing_cheats.py. tests/test_timing_checks.py classifies them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from kernelscope.kernels import rmsnorm
from kernelscope.profiler import launch_probe

HERE = Path(__file__).resolve().parent


def main(out: Path) -> None:
    import torch

    spec = importlib.util.spec_from_file_location("timing_cheats", HERE / "timing_cheats.py")
    cheats = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cheats)
    shape, dtype = {"M": 4096, "N": 4096}, "bfloat16"
    out.mkdir(parents=True, exist_ok=True)
    for name, target in (("honest", rmsnorm.SPEC), ("side-stream", cheats.rmsnorm_side_stream())):
        inputs = target.make_inputs(shape, dtype, 0, "cuda")
        fn = target.compile(target.config_for(shape, dtype), shape, dtype, "sm_90a").bound(inputs)
        fn()
        torch.cuda.synchronize()
        result = launch_probe.probe(fn, save_trace=str(out / f"probe-{name}.json"))
        print(name, result.check().passed, result.check().detail)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
