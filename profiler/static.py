"""Compile-only inspection: a kernel's compiled artifacts -> KernelProfile of kind "static".

Nothing here runs on a GPU. The numbers come from NVIDIA's tools (kernelscope.toolchain)
and from the DSL's own output (profiler.dsl_compile), never from parsing the cubin by hand:

- registers, stack frame, static shared memory, local memory: `cuobjdump --dump-resource-usage`
- named barriers and the block size a kernel requires: `cuobjdump --dump-elf`
- the static SASS instruction histogram and local-memory traffic: `nvdisasm -json`
- grid, block and the dynamic shared memory each launch requests: the launch the DSL
  emitted into the compiled host code (its final IR), and the cluster shape given to
  `.launch(...)` while the kernel was traced

Metrics that mean what Nsight Compute means carry ncu's names (`launch__*`); the rest are
`static__*`. `instruction_mix` holds instruction counts in the binary, not executed counts.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from kernelscope.errors import UserError
from kernelscope.profiler.assignments import check_shape_sizes
from kernelscope.profiler.dsl_compile import LaunchRequest, compile_artifacts
from kernelscope.profiler.record import DeviceInfo, KernelProfile, Metric, Session
from kernelscope.profiler.report_sass import async_copy_facts, global_access_facts
from kernelscope.profiler.wgmma_waits import wgmma_waits
from kernelscope.toolchain.cubin import FunctionResources, function_resources
from kernelscope.toolchain.sass import disassemble, expected_opcodes_missing, local_memory_bytes, opcode_histogram
from kernelscope.toolchain.sass_idioms import METRIC_NAMES, idiom_counts
from kernelscope.toolchain.tools import package_version

# Bump when the analysis below changes what it derives from the same artifacts.
ANALYSIS_VERSION = 3

SUPPORTED_ARCHS = ("sm_90a", "sm_120a")
_COMPUTE_CAPABILITY = {"sm_90a": "9.0", "sm_90": "9.0", "sm_120a": "12.0", "sm_120": "12.0"}

def toolchain_versions() -> dict[str, str | None]:
    """Versions that decide what a compile and its analysis produce (cheap: no imports)."""
    from kernelscope import __version__

    return {
        "kernelscope": __version__,
        "analysis": str(ANALYSIS_VERSION),
        "nvidia-cutlass-dsl": package_version("nvidia-cutlass-dsl"),
        "nvidia-cuda-cuobjdump": package_version("nvidia-cuda-cuobjdump"),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }


# ----------------------------------------------------------------------------- profiles

@dataclass
class KernelInspection:
    """One compiled kernel function: its profile and its SASS listing."""

    profile: KernelProfile
    sass: str
    missing_expected: list[str]


def _metric(metrics: dict[str, Metric], name: str, value, unit: str) -> None:
    # A fact the artifacts do not give stays absent ("n/a"), never 0.
    if value is not None:
        metrics[name] = Metric(value=value, unit=unit)


def _product(dims: tuple[int, int, int] | None) -> int | None:
    if dims is None:
        return None
    n = 1
    for d in dims:
        n *= d
    return n


def inspect_cubin(cubin: bytes, *, source: str, arch: str, expected_sass: list[str] = (),
                  launches: list[LaunchRequest] = (), command_line: str | None = None,
                  ) -> list[KernelInspection]:
    """One KernelInspection per kernel function in the cubin, in the cubin's order."""
    with tempfile.TemporaryDirectory(prefix="kernelscope-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        resources, built_for = function_resources(path)
        functions = disassemble(path)
    if built_for and built_for != arch:
        raise UserError(
            f"{source}: the compile produced a cubin for {built_for}, not {arch} "
            "(the kernel's compile should pass options='--gpu-arch ARCH' to cute.compile)")

    by_kernel = {l.kernel: l for l in launches if l.kernel}
    lone_launch = launches[0] if len(launches) == 1 and len(functions) == 1 else None
    # nvdisasm reads the cubin only, so its version is recorded but not part of the compile key.
    versions = {**toolchain_versions(), "nvidia-cuda-nvdisasm": package_version("nvidia-cuda-nvdisasm")}
    tool_version = "; ".join(f"{k} {versions[k]}" for k in ("nvidia-cuda-cuobjdump", "nvidia-cuda-nvdisasm",
                                                             "nvidia-cutlass-dsl")
                             if versions.get(k))

    results = []
    for index, (name, function) in enumerate(functions.items()):
        res = resources.get(name, FunctionResources(name=name))
        opcodes = function.opcodes
        launch = by_kernel.get(name) or lone_launch
        block = launch.block if launch and launch.block else res.required_block
        grid = launch.grid if launch else None
        cluster = launch.cluster if launch else None
        missing = expected_opcodes_missing(list(expected_sass), opcodes)

        m: dict[str, Metric] = {}
        _metric(m, "launch__registers_per_thread", res.registers, "register/thread")
        _metric(m, "launch__shared_mem_per_block_static", res.shared_bytes, "byte")
        _metric(m, "launch__shared_mem_per_block_dynamic",
                launch.dynamic_smem_bytes if launch else None, "byte")
        _metric(m, "launch__barrier_count", res.barriers, "")
        _metric(m, "launch__block_size", _product(block), "")
        _metric(m, "launch__grid_size", _product(grid), "")
        _metric(m, "launch__cluster_size", _product(cluster), "")
        _metric(m, "static__stack_frame_bytes", res.stack_bytes, "byte")
        _metric(m, "static__local_memory_bytes", res.local_bytes, "byte")
        _metric(m, "static__constant_bank0_bytes", res.constant0_bytes, "byte")
        _metric(m, "static__spill_store_bytes", local_memory_bytes(opcodes, "STL"), "byte")
        _metric(m, "static__spill_load_bytes", local_memory_bytes(opcodes, "LDL"), "byte")
        _metric(m, "static__sass_instructions", len(opcodes), "inst")
        texts = [f"{i.opcode} {i.operands}" for i in function.instructions]
        m.update(global_access_facts(opcodes))
        m.update(async_copy_facts(texts))
        idioms = idiom_counts((text, 1.0) for text in texts)
        for kind, count in idioms.items():
            _metric(m, METRIC_NAMES[kind], count, "inst")
        # The listing's offsets are the instructions' (16 bytes each), as branch targets count them.
        waits = wgmma_waits(function.listing())
        _metric(m, "static__wgmma_groups", waits.groups, "")
        _metric(m, "static__wgmma_groups_serialized", waits.serialized, "")
        if expected_sass:
            _metric(m, "static__expected_sass_missing", len(missing), "")
            _metric(m, "static__expected_sass_missing_opcodes", " ".join(missing) or "-", "")

        profile = KernelProfile(
            source=source,
            index=index,
            kind="static",
            name=name,
            demangled_name=name,
            mangled_name=name if name.startswith("_Z") else None,
            grid=grid,
            block=block,
            cluster=cluster,
            device=DeviceInfo(compute_capability=_COMPUTE_CAPABILITY.get(arch)),
            session=Session(tool="static", tool_version=tool_version or None, command_line=command_line),
            metrics=m,
            instruction_mix={k: float(v) for k, v in opcode_histogram(opcodes).items()},
        )
        results.append(KernelInspection(profile=profile, sass=function.listing(), missing_expected=missing))
    return results


# ----------------------------------------------------------------------------- targets -> profiles

@dataclass
class StaticInspection:
    """`inspect` of one target for one config: what was asked, what was resolved, what was found."""

    target: str
    kernel: str                       # the spec's name
    config: dict[str, Any]
    shape: dict[str, int]
    dtype: str
    arch: str
    expected_sass: list[str]
    kernels: list[KernelInspection]
    from_cache: bool
    cubin: bytes

    @property
    def profiles(self) -> list[KernelProfile]:
        return [k.profile for k in self.kernels]

    @property
    def missing_expected(self) -> list[str]:
        """Expected opcodes that no kernel of this compile contains."""
        if not self.kernels:
            return list(self.expected_sass)
        return [op for op in self.expected_sass if all(op in k.missing_expected for k in self.kernels)]


def _registered_location(target: str) -> str | None:
    from kernelscope.kernels import registry

    return registry.REGISTERED.get(target)


def source_identity(target: str) -> tuple[str, str]:
    """(canonical target, hash of the sources that define it), without importing the kernel."""
    import importlib.util

    from kernelscope.toolchain.disk_cache import hash_sources, source_files

    location = _registered_location(target)
    if location is not None:
        module_name = location.split(":", 1)[0]
        try:
            found = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            found = None
        if found is None or not found.origin:
            return target, "unlocatable"
        folder = Path(found.origin).parent
        # A shipped kernel also compiles code shared by the package (kernels/sm90/, the GEMM
        # problem's default shape, the config classes): hash the whole kernels package.
        shared = Path(__file__).resolve().parent.parent / "kernels"
        if folder.resolve().parent == shared:
            folder = shared
        return target, hash_sources(source_files(folder, recursive=True), folder)
    if ":" in target:
        path, attr = target.rsplit(":", 1)
        if path.endswith(".py") and os.path.isfile(path):
            file = Path(path).resolve()
            # The file and its neighbours: a kernel file may import helpers beside it.
            return f"{file}:{attr}", hash_sources(source_files(file.parent, recursive=False), file.parent)
    return target, "unknown"


def _resolve_request(spec, config_overrides: Mapping[str, Any], shape_overrides: Mapping[str, int],
                     dtype: str | None, arch: str) -> tuple[dict[str, Any], dict[str, int], str]:
    if arch not in spec.archs:
        raise UserError(f"{spec.name} does not build for {arch} (it claims {', '.join(spec.archs)})")
    dtype = dtype or (spec.dtypes[0] if spec.dtypes else None)
    if dtype is None:
        raise UserError(f"{spec.name} names no dtype; pass --dtype")
    if spec.dtypes and dtype not in spec.dtypes:
        raise UserError(f"{spec.name} supports dtype {', '.join(spec.dtypes)}, not {dtype}")
    known = set(spec.default_config) | set(spec.config_space)
    unknown = sorted(set(config_overrides) - known)
    if unknown and known:
        raise UserError(f"{spec.name}: unknown config key {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    base_shape = dict(spec.default_shapes[0]) if spec.default_shapes else {}
    unknown = sorted(set(shape_overrides) - set(base_shape))
    if unknown and base_shape:
        raise UserError(f"{spec.name}: unknown shape dimension {', '.join(unknown)} (known: {', '.join(base_shape)})")
    check_shape_sizes(spec, shape_overrides)
    shape = {**base_shape, **shape_overrides}
    return spec.config_for(shape, dtype, config_overrides), shape, dtype


def _describe_source(target: str, arch: str, dtype: str, config: Mapping[str, Any], shape: Mapping[str, int]) -> str:
    def fmt(v):
        return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    parts = [f"static:{target}", arch, dtype]
    parts += [f"{k}={fmt(v)}" for k, v in config.items()]
    parts += [f"{k}={v}" for k, v in shape.items()]
    return " ".join(parts)


def inspect_target(target: str, *, config: Mapping[str, Any] | None = None,
                   shape: Mapping[str, int] | None = None, dtype: str | None = None,
                   arch: str = "sm_90a", use_cache: bool = True,
                   command_line: str | None = None, line_info: bool = False,
                   analyse_binary: bool = True) -> StaticInspection:
    """Compile `target` without a GPU (or take the compile from the cache) and inspect it.
    With `line_info`, the compile carries line information (a separate cache entry); without
    `analyse_binary`, only the compile is returned (no kernels: the caller reads the cubin)."""
    from kernelscope.profiler.compile_cache import CacheKey, CompileCache

    if arch not in SUPPORTED_ARCHS:
        raise UserError(f"unsupported arch {arch} (supported: {', '.join(SUPPORTED_ARCHS)})")
    config_overrides = dict(config or {})
    shape_overrides = {k: int(v) for k, v in (shape or {}).items()}
    canonical, source_hash = source_identity(target)
    key = CacheKey(target=canonical, source_hash=source_hash, config=config_overrides,
                   shape=shape_overrides, dtype=dtype, arch=arch,
                   versions={**toolchain_versions(), **({"line_info": "1"} if line_info else {})})
    cache = CompileCache()
    entry = cache.load(key) if use_cache and source_hash not in ("unknown", "unlocatable") else None

    if entry is not None:
        meta, cubin = entry.meta, entry.cubin
    else:
        from kernelscope.kernels import registry

        spec = registry.resolve(target)
        resolved_config, resolved_shape, resolved_dtype = _resolve_request(
            spec, config_overrides, shape_overrides, dtype, arch)
        artifacts = compile_artifacts(spec, resolved_config, resolved_shape, resolved_dtype, arch, line_info)
        cubin = artifacts.cubin
        meta = {
            "kernel": spec.name,
            "config": resolved_config,
            "shape": resolved_shape,
            "dtype": resolved_dtype,
            "arch": arch,
            "expected_sass": list(spec.expected_sass),
            "artifacts": {"launches": [asdict(l) for l in artifacts.launches],
                          "kernel_names": artifacts.kernel_names},
        }
        # Round-trip through JSON now, so a fresh result and a cached one look the same.
        meta = json.loads(json.dumps(meta, default=repr))
        # A compile the kernel memoised in this process carries no launch facts: inspecting
        # it is fine, storing it would hand the gap on to every later inspect.
        # Stored under --no-cache too: a fresh compile replaces whatever the entry held.
        if source_hash not in ("unknown", "unlocatable") and artifacts.observed_compile:
            cache.store(key, cubin, meta)

    launches = [LaunchRequest.from_dict(l) for l in meta["artifacts"]["launches"]]
    kernels = [] if not analyse_binary else inspect_cubin(
        cubin,
        source=_describe_source(target, arch, meta["dtype"], meta["config"], meta["shape"]),
        arch=arch,
        expected_sass=meta["expected_sass"],
        launches=launches,
        command_line=command_line,
    )
    return StaticInspection(
        target=target, kernel=meta["kernel"], config=meta["config"], shape=meta["shape"],
        dtype=meta["dtype"], arch=arch, expected_sass=meta["expected_sass"], kernels=kernels,
        from_cache=entry is not None, cubin=cubin)


def save_sass(inspection: StaticInspection, folder: str | os.PathLike, label: str = "") -> list[Path]:
    """Write the cubin and one SASS listing per kernel into `folder`; returns the paths."""
    out = Path(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{inspection.kernel}_{inspection.arch}{label}"
        written = [out / f"{stem}.cubin"]
        written[0].write_bytes(inspection.cubin)
        for k in inspection.kernels:
            path = out / f"{stem}_{k.profile.index}.sass"
            header = f"// {k.profile.name}\n// {k.profile.source}\n"
            path.write_text(header + k.sass)
            written.append(path)
    except OSError as e:
        raise UserError(f"cannot write SASS to {out}: {e.strerror or e}")
    return written
