"""The process Nsight Compute profiles: `python -m kernelscope.profiler.worker ...`.

Inputs are built, the target compiled and both sides warmed up OUTSIDE any NVTX range;
then exactly one launch of the target runs inside the range `ks:target` and one of the
reference inside `ks:reference`, so ncu (filtering on those ranges) captures only them.
The outcome is written as JSON to --status so the parent can tell a rejected config
or a crash from an ncu problem.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

# When the interpreter got here: the stages' clock (ncu's start-up comes before it).
_STARTED_AT = time.time()

TARGET_RANGE = "ks:target"
REFERENCE_RANGE = "ks:reference"
NVTX_PREFIX = "ks:"

# Exit codes the parent understands.
EXIT_OK = 0
EXIT_USER_ERROR = 2
EXIT_CONFIG_REJECTED = 3
EXIT_CRASH = 4


def _write_status(path: str | None, **status) -> None:
    if not path:
        return
    with open(path, "w") as f:
        json.dump(status, f)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="kernelscope.profiler.worker")
    p.add_argument("--target", required=True)
    p.add_argument("--vs", default="")
    p.add_argument("--shape", required=True, help="JSON object")
    p.add_argument("--dtype", required=True)
    p.add_argument("--config", required=True, help="JSON object")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--warmup", type=int, default=3, help="launches of each side before the ranges")
    p.add_argument("--status", default=None)
    args = p.parse_args(argv)

    from kernelscope.errors import UserError
    from kernelscope.kernels.spec import ConfigRejected

    stage = "start"
    # Seconds from this process's start to the end of each stage (where a profile's time goes).
    seconds: dict[str, float] = {}

    def reached(next_stage: str) -> str:
        seconds[stage] = round(time.time() - _STARTED_AT, 3)
        return next_stage

    try:
        import torch

        from kernelscope.kernels import references, registry
        from kernelscope.profiler.measure import check_output

        if not torch.cuda.is_available():
            raise UserError("no CUDA GPU is visible to the profiled process")
        shape = json.loads(args.shape)
        config = json.loads(args.config)
        stage = reached("inputs")
        spec = registry.resolve(args.target)
        inputs = spec.make_inputs(shape, args.dtype, args.seed, "cuda")
        stage = reached("compile")
        compiled = spec.compile(config, shape, args.dtype, args.arch)
        target_fn = compiled.bound(inputs)
        stage = reached("reference")
        ref_fn = references.bind(args.vs, spec, inputs) if args.vs else None
        # The first launch of each side apart (module loads, library start-up), then the rest.
        stage = reached("first target launch")
        target_fn()
        torch.cuda.synchronize()
        stage = reached("first reference launch")
        if ref_fn is not None:
            ref_fn()
            torch.cuda.synchronize()
        stage = reached("warm-up")
        for _ in range(1, args.warmup):
            target_fn()
            if ref_fn is not None:
                ref_fn()
        torch.cuda.synchronize()
        stage = reached("check")
        out = inputs[spec.output] if spec.output in inputs else target_fn()
        report = check_output(spec, out, inputs, args.dtype)
        stage = reached("profiled launches")
        with torch.cuda.nvtx.range(TARGET_RANGE):
            target_fn()
        torch.cuda.synchronize()
        if ref_fn is not None:
            with torch.cuda.nvtx.range(REFERENCE_RANGE):
                ref_fn()
            torch.cuda.synchronize()
        reached("done")
        from kernelscope.kernels import launch_cache

        _write_status(args.status, ok=True, stage="done", seconds=seconds, started_at=_STARTED_AT,
                      launch_cache=dict(launch_cache.stats), correct=report.ok,
                      max_abs_error=report.max_abs_error, bad_count=report.bad_count,
                      device=torch.cuda.get_device_name())
        return EXIT_OK
    except ConfigRejected as e:
        _write_status(args.status, ok=False, stage=stage, kind="config_rejected", error=str(e))
        print(f"kernelscope worker: config rejected: {e}", file=sys.stderr)
        return EXIT_CONFIG_REJECTED
    except UserError as e:
        _write_status(args.status, ok=False, stage=stage, kind="user", error=str(e))
        print(f"kernelscope worker: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as e:
        last = str(e).splitlines()[0] if str(e) else ""
        _write_status(args.status, ok=False, stage=stage, kind="crash", error=f"{type(e).__name__}: {last}",
                      traceback=traceback.format_exc())
        traceback.print_exc()
        return EXIT_CRASH


if __name__ == "__main__":
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    code = main()
    # The status file is written: a crash in CUDA's teardown must not turn a profile ncu
    # collected into "the application returned an error code".
    from kernelscope.process_end import end_now

    end_now(code)
    sys.exit(code)
