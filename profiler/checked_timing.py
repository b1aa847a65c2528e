"""One side of a measurement, timed with every check that applies (`run`, `sweep`, baselines).

Around `timing.time_callable` (which guards the timer and the persisting L2 itself):

- fresh inputs (optional): a few extra input sets from the kernel's own `make_inputs`
  with other seeds, copied into the bound tensors before every launch, outside the events;
- the output poisoned (NaN) once between warm-up and the timed launches, and checked
  after them against the fp32 reference of the inputs the last launch read;
- the launches of a few more calls, read back through torch.profiler (`launch_probe`);
- the physical floor of the median from the measured peaks.

A profile of the same callable (ncu) adds `profile_checks`: agreement of the clocks and
the floor of the bytes the profiled launch moved.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping

from kernelscope.profiler import launch_probe
from kernelscope.profiler import timing_checks as tc
from kernelscope.profiler.timing import Timing, time_callable

FRESH_SETS = 3        # distinct input sets rotated: consecutive launches never read the same values
# Every rotation draws sets that no earlier rotation in this process drew. The bound tensors still
# hold the last set of the one before (the target's when its reference is timed, one config's in a
# sweep), and a new set equal to it would read as inputs that are not fresh, in about one run of three.
_rotations = itertools.count(1)


def fresh_inputs(spec, shape: Mapping[str, int], dtype: str, seed: int, inputs: dict[str, Any],
                 sets: int = FRESH_SETS) -> tuple[Callable[[int], None], tc.Check]:
    """refresh(i) that copies input set i % sets into the bound tensors, and the check that
    the sets really differ (a make_inputs that ignores its seed makes nothing fresh)."""
    names = [k for k, v in inputs.items() if k != spec.output and hasattr(v, "copy_")]
    # Only new sets: whatever was computed from the original inputs before timing is stale.
    device = str(inputs[names[0]].device) if names else "cuda"
    pool = []
    rotation = next(_rotations)
    for j in range(1, sets + 1):
        other = spec.make_inputs(shape, dtype, seed + 7919 * (j + sets * rotation), device)
        pool.append({k: other[k] for k in names})
    neighbours = [inputs] + pool
    varying = [k for k in names
               if all(not bool((a[k] == b[k]).all()) for a, b in zip(neighbours, neighbours[1:] + [pool[0]]))]
    if not names:
        check = tc.failed(tc.FRESH_INPUTS, "the kernel has no input tensor to refresh")
    elif not varying:
        check = tc.failed(tc.FRESH_INPUTS, f"make_inputs gave equal {', '.join(names)} for different seeds: "
                                           "the inputs are not fresh")
    else:
        check = tc.passed(tc.FRESH_INPUTS, f"{sets} new input sets rotated before every launch; "
                                           f"{', '.join(varying)} differ between consecutive launches")

    def refresh(i: int) -> None:
        src = pool[i % sets]
        for k in names:
            inputs[k].copy_(src[k])

    return refresh, check


def poison_output(spec, inputs: Mapping[str, Any]) -> Callable[[], None] | None:
    out = inputs.get(spec.output)
    if out is None or not hasattr(out, "fill_") or not getattr(out, "is_floating_point", lambda: False)():
        return None
    return lambda: out.fill_(float("nan"))


def output_check(spec, timing: Timing, inputs: Mapping[str, Any], dtype: str, fresh: bool) -> tc.Check:
    """The output of the last timed launch against the reference of the inputs it read."""
    from kernelscope.profiler.measure import check_output

    out = inputs[spec.output] if spec.output in inputs and spec.output != "" else timing.last_result
    if out is None or not hasattr(out, "shape"):
        return tc.skipped(tc.OUTPUT_AFTER, "the timed callable leaves no output tensor to check")
    try:
        report = check_output(spec, out, inputs, dtype)
    except ValueError as e:
        return tc.failed(tc.OUTPUT_AFTER, str(e))
    against = "the fresh inputs of the last launch" if fresh else "the inputs (output poisoned before the timed launches)"
    if not report.ok:
        return tc.failed(tc.OUTPUT_AFTER, f"after the timed launches {report.bad_count}/{report.numel} elements are "
                                          f"wrong against {against} (NaN {report.nan_count}, max abs "
                                          f"{report.max_abs_error:.3g}): {report.where()}")
    return tc.passed(tc.OUTPUT_AFTER, f"correct after the timed launches, against {against}")


def floor_for(timing: Timing, flops: float, nbytes: float, peaks, output_bytes: float | None,
              l2_bytes: float | None) -> tc.Check:
    if peaks is None:
        return tc.skipped(tc.FLOOR, "device peaks not measured (--no-peaks)")
    dram, basis = tc.dram_bytes_floor(nbytes, output_bytes, l2_bytes, timing.flush_l2)
    check = tc.floor_check(timing.median_ms, flops, dram, peak_tflops=peaks.bf16_matmul_tflops,
                           peak_gbps=peaks.copy_gbps)
    if dram < nbytes:
        check.detail += f" [bytes: {basis}]"
    return check


def time_checked(fn: Callable[[], Any], *, spec, inputs: dict[str, Any], shape: Mapping[str, int], dtype: str,
                 seed: int, flops: float, nbytes: float, peaks=None, fresh: bool = False,
                 probe: "bool | launch_probe.ProbeResult" = True, is_target: bool = True, **timer_kwargs) -> Timing:
    """time_callable with the checks above recorded in the returned Timing's `checks`. `probe`:
    True to probe fn's launches after timing, or the result of an earlier probe of the same
    call (a library reference on the same inputs, probed once per shape by a sweep)."""
    import torch

    refresh, fresh_check = fresh_inputs(spec, shape, dtype, seed, inputs) if fresh else (None, None)
    poison = poison_output(spec, inputs) if is_target else None
    timing = time_callable(fn, refresh=refresh, before_timed=poison, **timer_kwargs)
    if fresh_check is not None:
        timing.checks.add(fresh_check)
    torch.cuda.synchronize()
    if is_target or timing.last_result is not None:
        side_spec = spec if is_target else _returning(spec)
        timing.checks.add(output_check(side_spec, timing, inputs, dtype, fresh))
    out = inputs.get(spec.output)
    out_bytes = float(out.numel() * out.element_size()) if hasattr(out, "element_size") else None
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    timing.checks.add(floor_for(timing, flops, nbytes, peaks, out_bytes, l2))
    if probe:
        result = probe if isinstance(probe, launch_probe.ProbeResult) else launch_probe.probe(fn)
        timing.checks.add(result.check())
        timing.launches = result.launches
    return timing


def _returning(spec):
    """The spec seen from a reference: its output is what the call returns."""
    import dataclasses

    return dataclasses.replace(spec, output="")


def profile_checks(timing: Timing, ncu_ms: float | None, dram_bytes: float | None, peaks) -> None:
    """Checks from an ncu profile of the same callable, added to `timing.checks`."""
    timing.checks.add(tc.ncu_agreement(timing.median_ms, ncu_ms))
    timing.checks.add(tc.counter_floor_check(timing.median_ms, dram_bytes, peaks.copy_gbps if peaks else None))


def add_profile_checks(timing: dict[str, Any], ncu_ms: float | None, dram_bytes: float | None,
                       peak_gbps: float | None) -> None:
    """profile_checks for a timing already serialized (a baseline record's `timing.target`)."""
    checks = tc.Checks.from_dict(timing.get("checks"))
    median = float(timing["median_ms"])
    checks.add(tc.ncu_agreement(median, ncu_ms))
    checks.add(tc.counter_floor_check(median, dram_bytes, peak_gbps))
    timing["checks"] = checks.to_dict()


_TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}


def add_profile_checks_from(timing: dict[str, Any], profiles, peak_gbps: float | None) -> None:
    """add_profile_checks with the duration and DRAM bytes summed over the profiled kernels
    of one call (KernelProfile objects); a metric missing on any kernel counts as not collected."""
    durations = [p.metrics.get("gpu__time_duration.sum") for p in profiles]
    ncu_ms = (sum(m.value * _TO_MS[m.unit] for m in durations)
              if durations and all(m is not None and m.unit in _TO_MS for m in durations) else None)
    dram = [p.metrics.get(k) for p in profiles for k in ("dram__bytes_read.sum", "dram__bytes_write.sum")]
    dram_bytes = sum(m.value for m in dram) if dram and all(m is not None for m in dram) else None
    add_profile_checks(timing, ncu_ms, dram_bytes, peak_gbps)
