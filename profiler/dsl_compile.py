"""Running a kernel's own CuTe DSL compile and keeping what inspection reads from it.

The cubin comes from the compile; the launch facts (grid, block, dynamic shared memory)
from the DSL's final host IR, and the cluster shape from the `.launch(...)` call traced.
Both need a look inside the DSL: `record_dsl_compiles` wraps two of its private methods
while a compile runs, so this module is the one place that depends on those names.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from kernelscope.errors import UserError, reraise_interrupt
from kernelscope.kernels.spec import ConfigRejected
from kernelscope.profiler.progress import slow_step
from kernelscope.toolchain.cubin import cubin_arch


@dataclass
class LaunchRequest:
    """What the compiled host code asks of one kernel launch. None: not a compile-time constant."""

    kernel: str | None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    cluster: tuple[int, int, int] | None = None
    dynamic_smem_bytes: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "LaunchRequest":
        d = dict(d)
        for key in ("grid", "block", "cluster"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        return cls(**d)


@dataclass
class StaticArtifacts:
    """What one compile produced, as the compile cache stores it."""

    cubin: bytes
    ptx: str | None = None
    launches: list[LaunchRequest] = field(default_factory=list)
    kernel_names: list[str] = field(default_factory=list)
    # False when the kernel returned a compile it had memoised in this process: the DSL did
    # not run, so the launch facts (grid, cluster, dynamic shared memory) were not seen.
    observed_compile: bool = True


# ----------------------------------------------------------------------------- launches in the host IR

_IR_FUNC = re.compile(r"^\s*(?:llvm\.func|func\.func)\b")
_IR_CONST = re.compile(r"^\s*(%[\w.]+)\s*=\s*(?:llvm\.mlir|arith)\.constant\((-?\d+)\s*:\s*i\d+\)")
# The launch configuration record the DSL fills for cuLaunchKernelEx:
# (grid[3] x i32, block[3] x i32, dynamic smem i64, stream, attributes, attribute count).
_IR_LAUNCH_CFG_ALLOCA = re.compile(
    r"^\s*(%[\w.]+)\s*=\s*llvm\.alloca\s+\S+\s+x\s+!llvm\.struct<\(array<3 x i32>, array<3 x i32>, i64,")
_IR_GEP = re.compile(r"^\s*(%[\w.]+)\s*=\s*llvm\.getelementptr\s+(?:inbounds\s+)?(%[\w.]+)\[([\d,\s]+)\]")
_IR_STORE = re.compile(r"^\s*llvm\.store\s+(%[\w.]+),\s*(%[\w.]+)\s*:")
_IR_KERNEL_REF = re.compile(r"llvm\.mlir\.addressof\s+@kernels_([\w$.]+)")
_IR_LAUNCH_CALL = re.compile(r"llvm\.call\s+@_?cu(?:da)?LaunchKernel")


def launches_from_host_ir(ir_text: str) -> list[LaunchRequest]:
    """Grid, block and dynamic shared memory of each kernel launch in the DSL's final host IR.

    A field that is not a compile-time constant there (a grid sized by a dynamic
    tensor extent, say) stays None.
    """
    launches: list[LaunchRequest] = []
    consts: dict[str, int] = {}
    configs: dict[str, dict[tuple[int, ...], int | None]] = {}
    config_order: list[str] = []
    geps: dict[str, tuple[str, tuple[int, ...]]] = {}
    calls: list[str | None] = []
    last_kernel: str | None = None

    def flush():
        names = calls if len(calls) == len(config_order) else [None] * len(config_order)
        for alloca, kernel in zip(config_order, names):
            fields = configs[alloca]

            def triple(i):
                vals = [fields.get((i, k)) for k in range(3)]
                return tuple(vals) if all(isinstance(v, int) for v in vals) else None

            launches.append(LaunchRequest(kernel=kernel, grid=triple(0), block=triple(1),
                                          dynamic_smem_bytes=fields.get((2,))))

    for line in ir_text.splitlines():
        if _IR_FUNC.match(line):
            flush()
            consts, configs, config_order, geps, calls, last_kernel = {}, {}, [], {}, [], None
            continue
        m = _IR_CONST.match(line)
        if m:
            consts[m.group(1)] = int(m.group(2))
            continue
        m = _IR_LAUNCH_CFG_ALLOCA.match(line)
        if m:
            configs[m.group(1)] = {}
            config_order.append(m.group(1))
            continue
        m = _IR_GEP.match(line)
        if m and m.group(2) in configs:
            idx = tuple(int(x) for x in m.group(3).split(","))
            if idx and idx[0] == 0:
                geps[m.group(1)] = (m.group(2), idx[1:])
            continue
        m = _IR_STORE.match(line)
        if m and m.group(2) in geps:
            alloca, idx = geps[m.group(2)]
            configs[alloca][idx] = consts.get(m.group(1))
            continue
        m = _IR_KERNEL_REF.search(line)
        if m:
            last_kernel = m.group(1)
        if _IR_LAUNCH_CALL.search(line):
            calls.append(last_kernel)
    flush()
    return launches


# ----------------------------------------------------------------------------- recording DSL compiles

@contextlib.contextmanager
def record_dsl_compiles() -> Iterator[dict[str, list]]:
    """While active, keeps every object `cute.compile` returns and the cluster shape of
    every `.launch(...)` traced, so inspection sees what the kernel's own compile did."""
    from cutlass.base_dsl.compiler import CompileCallable
    from cutlass.cutlass_dsl.cutlass import KernelLauncher

    seen: dict[str, list] = {"compiled": [], "clusters": []}
    original_compile = CompileCallable._compile
    original_launch = KernelLauncher.launch

    def compile_and_keep(self, *args, **kwargs):
        result = original_compile(self, *args, **kwargs)
        seen["compiled"].append(result)
        return result

    def launch_and_note(self, *args, **kwargs):
        result = original_launch(self, *args, **kwargs)
        cluster = kwargs.get("cluster")
        if cluster is not None:
            dims = list(cluster) if isinstance(cluster, (list, tuple)) else [cluster]
            if all(isinstance(d, int) for d in dims):
                seen["clusters"].append((self._launch_name, tuple((dims + [1, 1, 1])[:3])))
        return result

    CompileCallable._compile = compile_and_keep
    KernelLauncher.launch = launch_and_note
    try:
        yield seen
    finally:
        CompileCallable._compile = original_compile
        KernelLauncher.launch = original_launch


@contextlib.contextmanager
def dsl_targeting(arch: str, dump_dir: str | None = None) -> Iterator[None]:
    """While active, the loaded CuTe DSL compiles for `arch` and keeps artifacts a compile asks
    to keep without naming a folder (`--keep-cubin` alone) in `dump_dir`.

    The DSL reads CUTE_DSL_ARCH and CUTE_DSL_DUMP_DIR once, when it is imported; a process that
    imported cutlass before kernelscope set them would otherwise compile for that arch (or the
    one detected on the machine) and write kept cubins into the working directory. The
    previous settings are restored after.
    """
    from cutlass.cutlass_dsl import CuTeDSL

    envar = getattr(CuTeDSL._get_dsl(), "envar", None)
    wanted = {"arch": arch, **({"dump_dir": dump_dir} if dump_dir else {})}
    # A DSL without one of these knobs: the check of the cubin's arch after the compile remains.
    settable = {k: v for k, v in wanted.items() if envar is not None and hasattr(envar, k)}
    previous = {k: getattr(envar, k) for k in settable}
    for k, v in settable.items():
        setattr(envar, k, v)
    try:
        yield
    finally:
        for k, v in previous.items():
            setattr(envar, k, v)


_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def compile_error_summary(error: BaseException) -> str:
    """The DSL's multi-line, coloured diagnostic as one line: what, and where in the source."""
    lines = [l.strip() for l in _ANSI_ESCAPE.sub("", str(error)).splitlines() if l.strip()]
    if not lines:
        return type(error).__name__
    what = lines[0].removeprefix("error:").strip()
    where = next((l[3:].strip() for l in lines if l.startswith("-->")), None)
    return f"{what} (at {where})" if where else what


def _as_bytes(blob) -> bytes | None:
    if blob is None:
        return None
    return blob.encode("latin-1") if isinstance(blob, str) else bytes(blob)


def compile_artifacts(spec, config: Mapping[str, Any], shape: Mapping[str, int], dtype: str,
                      arch: str, line_info: bool = False) -> StaticArtifacts:
    """Run the kernel's own compile (no GPU needed) and collect what inspection reads.
    With `line_info`, the DSL compiles with line information (read by the DSL once per process)."""
    if line_info:
        os.environ["CUTE_DSL_LINEINFO"] = "1"
    # The DSL reads its target once, at import; a kernel may also pass --gpu-arch itself.
    # Kept artifacts go to the working directory unless told otherwise: keep them out of
    # the user's tree.
    if "cutlass" not in sys.modules:
        os.environ["CUTE_DSL_ARCH"] = arch
    if "CUTE_DSL_DUMP_DIR" not in os.environ:
        from kernelscope.toolchain.disk_cache import cache_root

        os.environ["CUTE_DSL_DUMP_DIR"] = str(cache_root() / "dsl-artifacts")
    # The DSL fails a kept-artifact compile when the folder is missing.
    Path(os.environ["CUTE_DSL_DUMP_DIR"]).mkdir(parents=True, exist_ok=True)
    try:
        import cutlass  # noqa: F401
    except ImportError as e:
        raise UserError(f"cannot compile {spec.name}: nvidia-cutlass-dsl is not installed ({e})")

    with (dsl_targeting(arch, os.environ["CUTE_DSL_DUMP_DIR"]), record_dsl_compiles() as seen,
          slow_step(f"compiling {spec.name} for {arch} (not in the compile cache)")):
        try:
            compiled = spec.compile(dict(config), dict(shape), dtype, arch)
            if hasattr(compiled, "materialize"):
                compiled.materialize()        # a deferred compile runs here: recorded, its errors caught
        except ConfigRejected as e:
            message = str(e)
            raise UserError(message if message.startswith(spec.name) else f"{spec.name}: {message}")
        except UserError:
            raise
        except Exception as e:
            reraise_interrupt(e)
            raise UserError(f"{spec.name}: compile failed for {arch}: {compile_error_summary(e)}")

    cubin = _as_bytes(getattr(compiled, "cubin", None))
    jit_functions = seen["compiled"]
    if cubin is None:
        for fn in jit_functions:
            cubin = _as_bytes(getattr(fn, "__cubin__", None))
            if cubin:
                break
    if not cubin:
        raise UserError(
            f"{spec.name}: its compile produced no cubin to inspect "
            "(compile with options='--keep-cubin' and return CompiledKernel(cubin=compiled.__cubin__))")

    # Verified, not assumed: a kernel may pass its own --gpu-arch, or hand back a compile it
    # memoised earlier in this process for another target.
    built_for = cubin_arch(cubin)
    if built_for != arch:
        raise UserError(
            f"{spec.name}: its compile produced a cubin for {built_for or 'an unnamed arch'}, not {arch} "
            f"(set CUTE_DSL_ARCH={arch} before anything imports cutlass)", exit_code=3)

    launches: list[LaunchRequest] = []
    for fn in jit_functions:
        module = getattr(fn, "ir_module", None)
        if module is not None:
            launches.extend(launches_from_host_ir(str(module)))
    clusters = dict(seen["clusters"])
    for launch in launches:
        if launch.kernel in clusters:
            launch.cluster = clusters[launch.kernel]
    ptx = getattr(compiled, "ptx", None)
    if isinstance(ptx, bytes):
        ptx = ptx.decode(errors="replace")
    return StaticArtifacts(cubin=cubin, ptx=ptx, launches=launches,
                           kernel_names=list(getattr(compiled, "kernel_names", []) or []),
                           observed_compile=bool(jit_functions))
