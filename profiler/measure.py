"""`run` and `sweep`: correctness first, then target and reference timed in one process.

A performance number is always given with the reference measured in the same process
and as a fraction of the device's measured peak (copy bandwidth for memory-bound work,
bf16 matmul throughput for compute-bound work), measured once and cached per device.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

from kernelscope.errors import UserError, reraise_interrupt
from kernelscope.kernels import references
from kernelscope.kernels.spec import ConfigRejected, KernelSpec
from kernelscope.profiler.assignments import check_shape_sizes, format_config, format_shape
from kernelscope.profiler.correctness import CorrectnessReport, check
from kernelscope.profiler.peaks import Peaks, measure_peaks
from kernelscope.profiler.progress import slow_step
from kernelscope.profiler.timing import Timing, gbps, tflops, time_callable

# Below this many FLOPs per byte no Hopper kernel is compute-bound (the bf16 ridge point
# is ~190 FLOP/B), so the useful ceiling is bandwidth and the matmul peak is not measured.
COMPUTE_BOUND_INTENSITY = 10.0



SWEEP_SCHEMA = "kernelscope.sweep"  # `sweep --json`, documented in docs/json-format.md
SWEEP_SCHEMA_VERSION = 1

@dataclass
class SideResult:
    """One side (target or reference) of a measurement."""

    name: str
    timing: Timing | None = None
    tflops: float | None = None
    gbps: float | None = None
    pct_of_peak: float | None = None
    peak_kind: str | None = None          # "copy bandwidth" or "bf16 matmul"
    correctness: CorrectnessReport | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "timing": self.timing.to_dict() if self.timing else None,
                "tflops": self.tflops, "gbps": self.gbps, "pct_of_peak": self.pct_of_peak,
                "peak_kind": self.peak_kind,
                "correctness": self.correctness.to_dict() if self.correctness else None}


@dataclass
class RunResult:
    target: str
    reference: str
    shape: dict[str, int]
    dtype: str
    config: dict[str, Any]
    flops: float
    bytes_moved: float
    target_side: SideResult
    reference_side: SideResult | None
    peaks: Peaks | None
    device: str | None = None

    @property
    def speedup_vs_reference(self) -> float | None:
        """Reference time / target time (>1: the target is faster)."""
        t, r = self.target_side.timing, self.reference_side.timing if self.reference_side else None
        if t is None or r is None or t.median_ms <= 0 or t.checks.suspect:
            return None       # a suspect timing is never reported as a speed-up
        return r.median_ms / t.median_ms

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "reference": self.reference, "shape": self.shape, "dtype": self.dtype,
                "config": self.config, "flops": self.flops, "bytes_moved": self.bytes_moved,
                "device": self.device, "target_side": self.target_side.to_dict(),
                "reference_side": self.reference_side.to_dict() if self.reference_side else None,
                "speedup_vs_reference": self.speedup_vs_reference,
                "peaks": self.peaks.__dict__ if self.peaks else None}


def _fill_rates(side: SideResult, flops: float, nbytes: float, peaks: Peaks | None) -> None:
    if side.timing is None:
        return
    ms = side.timing.median_ms
    side.tflops = tflops(flops, ms) if flops else None
    side.gbps = gbps(nbytes, ms) if nbytes else None
    if peaks is None:
        return
    compute_bound = nbytes > 0 and flops / nbytes >= COMPUTE_BOUND_INTENSITY
    if compute_bound and peaks.bf16_matmul_tflops and side.tflops is not None:
        side.pct_of_peak, side.peak_kind = 100.0 * side.tflops / peaks.bf16_matmul_tflops, "bf16 matmul"
    elif not compute_bound and peaks.copy_gbps and side.gbps is not None:
        side.pct_of_peak, side.peak_kind = 100.0 * side.gbps / peaks.copy_gbps, "copy bandwidth"


# --- run ---------------------------------------------------------------------------------------

def tolerance_for(spec: KernelSpec, dtype: str) -> tuple[float, float]:
    if dtype in spec.tolerance:
        return spec.tolerance[dtype]
    return {"float32": (1e-4, 1e-4), "float16": (5e-3, 5e-3)}.get(dtype, (2e-2, 2e-2))


def check_output(spec: KernelSpec, out: Any, inputs, dtype: str) -> CorrectnessReport:
    atol, rtol = tolerance_for(spec, dtype)
    return check(out, spec.reference_fp32(inputs), atol=atol, rtol=rtol, tile=spec.tile, dims=spec.output_dims)


def validate_dtype(spec: KernelSpec, dtype: str) -> None:
    if spec.dtypes and dtype not in spec.dtypes:
        raise UserError(f"{spec.name} supports dtypes {', '.join(spec.dtypes)}, not {dtype}")


def compile_checked(spec: KernelSpec, config: dict, shape: dict, dtype: str, arch: str):
    try:
        with slow_step(f"compiling {spec.name} for {arch}"):
            return spec.compile(config, shape, dtype, arch)
    except ConfigRejected as e:
        raise UserError(f"{spec.name} rejects config {format_config(config)} at shape {format_shape(shape)}: {e}") from e


def run_target(spec: KernelSpec, ref_name: str | None, shape: dict, dtype: str, config: dict, *,
               seed: int = 0, arch: str = "sm_90a", rep_ms: float = 200.0, warmup_ms: float = 25.0,
               flush_l2: bool = True, peaks: bool = True, fresh_inputs: bool = False) -> RunResult:
    """Correctness of target (and reference) against fp32, then checked timings of both."""
    import torch

    from kernelscope.profiler.checked_timing import time_checked

    if not torch.cuda.is_available():
        raise UserError("no CUDA GPU is available: `run` needs one (use `inspect` for compile-only analysis)")
    validate_dtype(spec, dtype)
    inputs = spec.make_inputs(shape, dtype, seed, "cuda")
    compiled = compile_checked(spec, config, shape, dtype, arch)
    target_fn = compiled.bound(inputs)
    ref_fn = references.bind(ref_name, spec, inputs) if ref_name else None

    # Correctness on fresh (poisoned) outputs before anything is timed.
    returned = target_fn()
    torch.cuda.synchronize()
    out = inputs[spec.output] if spec.output in inputs else returned
    target_side = SideResult(name=spec.name, correctness=check_output(spec, out, inputs, dtype))
    if (not target_side.correctness.ok and isinstance(returned, torch.Tensor) and returned is not out
            and returned.shape == out.shape):
        target_side.correctness.diagnoses.append(
            f"the kernel returned a tensor but kernelscope checks the `{spec.output}` buffer it was given: "
            f"write the result into inputs[{spec.output!r}] instead of returning a new tensor")
    ref_side = None
    if ref_fn is not None:
        ref_out = ref_fn()
        torch.cuda.synchronize()
        ref_side = SideResult(name=ref_name)
        if isinstance(ref_out, torch.Tensor):
            ref_side.correctness = check_output(spec, ref_out, inputs, dtype)

    fl, nb = float(spec.flops(shape)), float(spec.bytes_moved(shape, dtype))
    pk = measure_peaks(need_matmul=nb > 0 and fl / nb >= COMPUTE_BOUND_INTENSITY) if peaks else None
    common = dict(spec=spec, inputs=inputs, shape=shape, dtype=dtype, seed=seed, flops=fl, nbytes=nb, peaks=pk,
                  fresh=fresh_inputs, warmup_ms=warmup_ms, rep_ms=rep_ms, flush_l2=flush_l2)
    target_side.timing = time_checked(target_fn, **common)
    if ref_fn is not None:
        ref_side.timing = time_checked(ref_fn, is_target=False, **common)
    for side in (target_side, ref_side):
        if side is not None:
            _fill_rates(side, fl, nb, pk)
    return RunResult(target=spec.name, reference=ref_name or "", shape=dict(shape), dtype=dtype,
                     config=dict(config), flops=fl, bytes_moved=nb, target_side=target_side,
                     reference_side=ref_side, peaks=pk, device=torch.cuda.get_device_name())


# --- sweep -------------------------------------------------------------------------------------

def combinations(space: dict[str, list[Any]], base: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every combination of the listed values, over `base` (the default config)."""
    keys = list(space)
    combos = []
    for values in itertools.product(*(space[k] for k in keys)):
        cfg = dict(base or {})
        cfg.update(zip(keys, values))
        combos.append(cfg)
    return combos


@dataclass
class SweepRow:
    config: dict[str, Any]
    status: str                      # "ok", "invalid" (ConfigRejected), "wrong" (fails correctness), "failed",
                                     # "suspect" (timed, but a timing check failed: never ranked)
    message: str = ""
    timing: Timing | None = None
    correctness: CorrectnessReport | None = None
    metrics: dict[str, Any] = field(default_factory=dict)   # filled by `sweep --profile`

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config, "status": self.status, "message": self.message,
                "timing": self.timing.to_dict() if self.timing else None,
                "correctness": self.correctness.to_dict() if self.correctness else None,
                "metrics": self.metrics}


@dataclass
class SweepResult:
    target: str
    reference: str
    shape: dict[str, int]
    dtype: str
    rows: list[SweepRow]
    reference_timing: Timing | None

    def sorted_rows(self) -> list[SweepRow]:
        """Timed rows fastest first, then the rest in their original order."""
        timed = sorted((r for r in self.rows if r.status == "ok"), key=lambda r: r.timing.median_ms)
        return timed + [r for r in self.rows if r.status != "ok"]

    def speed_vs_reference(self, row: SweepRow) -> float | None:
        """Reference time / config time in percent (100% = as fast as the reference)."""
        if row.status != "ok" or self.reference_timing is None or row.timing.median_ms <= 0:
            return None
        return 100.0 * self.reference_timing.median_ms / row.timing.median_ms

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SWEEP_SCHEMA, "schema_version": SWEEP_SCHEMA_VERSION,
                "target": self.target, "reference": self.reference, "shape": self.shape, "dtype": self.dtype,
                "reference_timing": self.reference_timing.to_dict() if self.reference_timing else None,
                "rows": [dict(r.to_dict(), speed_vs_reference_pct=self.speed_vs_reference(r))
                         for r in self.sorted_rows()]}


def sweep(spec: KernelSpec, ref_name: str | None, shape: dict, dtype: str, configs: list[dict], *,
          seed: int = 0, arch: str = "sm_90a", device: str = "cuda",
          timer: Callable[..., Timing] | None = None, timer_kwargs: dict | None = None,
          bind_reference: Callable = references.bind, peaks: Peaks | None = None, fresh_inputs: bool = False,
          on_row: Callable[[SweepRow], None] | None = None) -> SweepResult:
    """Compile, check and time each config; a config the kernel rejects is a row, not a crash.

    `timer`, `device` and `bind_reference` are parameters so that the bookkeeping can be
    exercised without a GPU; the command uses CUDA events on the GPU with every timing
    check (`checked_timing.time_checked`).
    """
    validate_dtype(spec, dtype)
    timer_kwargs = dict(timer_kwargs or {})
    inputs = spec.make_inputs(shape, dtype, seed, device)
    if timer is None:
        from kernelscope.profiler.checked_timing import time_checked

        timer = time_checked
        timer_kwargs = dict(spec=spec, inputs=inputs, shape=shape, dtype=dtype, seed=seed, peaks=peaks,
                            flops=float(spec.flops(shape)), nbytes=float(spec.bytes_moved(shape, dtype)),
                            fresh=fresh_inputs, **timer_kwargs)
    ref_timing = None
    if ref_name:
        ref_timing = timer(bind_reference(ref_name, spec, inputs), is_target=False, **timer_kwargs)
    rows: list[SweepRow] = []
    for cfg in configs:
        try:
            compiled = spec.compile(cfg, shape, dtype, arch)
        except ConfigRejected as e:
            row = SweepRow(cfg, "invalid", str(e))
        except Exception as e:  # a compile failure of one config must not end the sweep
            reraise_interrupt(e)
            row = SweepRow(cfg, "failed", f"compile: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        else:
            row = _time_config(spec, compiled, cfg, inputs, dtype, timer, timer_kwargs)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return SweepResult(target=spec.name, reference=ref_name or "", shape=dict(shape), dtype=dtype,
                       rows=rows, reference_timing=ref_timing)


def _time_config(spec, compiled, cfg, inputs, dtype, timer, timer_kwargs) -> SweepRow:
    out_name = spec.output
    if out_name in inputs and hasattr(inputs[out_name], "fill_"):
        inputs[out_name].fill_(float("nan"))      # re-poison: each config must write every element
    try:
        fn = compiled.bound(inputs)
        out = fn()
        _sync(inputs)
        out = inputs[out_name] if out_name in inputs else out
        report = check_output(spec, out, inputs, dtype)
    except Exception as e:
        reraise_interrupt(e)
        return SweepRow(cfg, "failed", f"launch: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if not report.ok:
        return SweepRow(cfg, "wrong", f"{report.bad_count} elements over tolerance (max abs "
                                      f"{report.max_abs_error:.3g}); {report.where()}", correctness=report)
    timing = timer(fn, **timer_kwargs)
    checks = getattr(timing, "checks", None)
    if checks is not None and checks.suspect:
        return SweepRow(cfg, "suspect", checks.summary(), timing=timing, correctness=report)
    return SweepRow(cfg, "ok", "", timing=timing, correctness=report)


def _sync(inputs) -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except ImportError:
        pass


# --- checking shapes and configs against a kernel ----------------------------------------------

def check_shape_keys(spec: KernelSpec, shape: dict[str, int]) -> None:
    """A whole shape: exactly the kernel's keys, sizes positive but for 0/1 flags."""
    if spec.default_shapes:
        want = set(spec.default_shapes[0])
        if set(shape) != want:
            raise UserError(f"{spec.name} takes shape keys {', '.join(sorted(want))}, got {', '.join(sorted(shape))}")
    check_shape_sizes(spec, shape)



def check_config_keys(spec: KernelSpec, config: dict[str, Any]) -> None:
    known = set(spec.default_config) | set(spec.config_space)
    unknown = sorted(set(config) - known) if known else []
    if unknown:
        raise UserError(f"{spec.name} has no config key {', '.join(unknown)} (known: {', '.join(sorted(known))})")
