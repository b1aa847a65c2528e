"""Compile-only inspection: a kernel's compiled artifacts -> KernelProfile of kind "static".

Nothing here runs on a GPU. The numbers come from NVIDIA's tools and from the DSL's own
output, never from parsing the cubin by hand:

- registers, stack frame, static shared memory, local memory: `cuobjdump --dump-resource-usage`
- named barriers and the block size a kernel requires: `cuobjdump --dump-elf`
- the static SASS instruction histogram and local-memory traffic: `cuobjdump --dump-sass`
- grid, block and the dynamic shared memory each launch requests: the launch the DSL
  emitted into the compiled host code (its final IR), and the cluster shape given to
  `.launch(...)` while the kernel was traced

Metrics that mean what Nsight Compute means carry ncu's names (`launch__*`); the rest are
`static__*`. `instruction_mix` holds instruction counts in the binary, not executed counts.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from kernelscope.errors import UserError
from kernelscope.profiler.record import DeviceInfo, KernelProfile, Metric, Session

# Bump when the analysis below changes what it derives from the same artifacts.
ANALYSIS_VERSION = 1

SUPPORTED_ARCHS = ("sm_90a", "sm_120a")
_COMPUTE_CAPABILITY = {"sm_90a": "9.0", "sm_90": "9.0", "sm_120a": "12.0", "sm_120": "12.0"}

# PyPI distributions that ship the CUDA binary tools, by tool name.
_TOOL_DISTRIBUTIONS = {
    "cuobjdump": "nvidia-cuda-cuobjdump",
    "nvdisasm": "nvidia-cuda-nvdisasm",
}


# ----------------------------------------------------------------------------- records

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


@dataclass
class FunctionResources:
    """cuobjdump's resource report for one kernel function of a cubin."""

    name: str
    registers: int | None = None
    stack_bytes: int | None = None
    shared_bytes: int | None = None
    local_bytes: int | None = None
    constant0_bytes: int | None = None
    barriers: int | None = None
    required_block: tuple[int, int, int] | None = None


# ----------------------------------------------------------------------------- tools

def find_cuda_tool(name: str) -> str:
    """Path of a CUDA binary tool: the PyPI wheel first, then PATH, then CUDA_HOME."""
    dist_name = _TOOL_DISTRIBUTIONS.get(name)
    if dist_name:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            dist = None
        if dist is not None:
            for entry in dist.files or ():
                if entry.name == name:
                    candidate = Path(dist.locate_file(entry))
                    if candidate.is_file() and os.access(candidate, os.X_OK):
                        return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidate = Path(cuda_home) / "bin" / name
    if candidate.is_file():
        return str(candidate)
    raise UserError(
        f"{name} not found: pip install {dist_name or name} (or put the CUDA toolkit's bin on PATH)"
    )


def _run_tool(name: str, *args: str) -> str:
    tool = find_cuda_tool(name)
    result = subprocess.run([tool, *args], capture_output=True, text=True)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise UserError(f"{name} {' '.join(args[:-1])} failed: {detail[-1] if detail else 'no output'}")
    return result.stdout


def package_version(dist_name: str) -> str | None:
    try:
        return importlib.metadata.version(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None


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


# ----------------------------------------------------------------------------- cuobjdump reports

_RES_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):?\s*$")
_RES_FIELD = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")


def parse_resource_usage(text: str) -> dict[str, FunctionResources]:
    """`cuobjdump --dump-resource-usage` output -> resources per function."""
    out: dict[str, FunctionResources] = {}
    current: FunctionResources | None = None
    for line in text.splitlines():
        m = _RES_FUNCTION.match(line)
        if m:
            current = FunctionResources(name=m.group(1))
            out[current.name] = current
            continue
        if current is None or "REG:" not in line:
            continue
        fields = {k: int(v) for k, v in _RES_FIELD.findall(line)}
        current.registers = fields.get("REG")
        current.stack_bytes = fields.get("STACK")
        current.shared_bytes = fields.get("SHARED")
        current.local_bytes = fields.get("LOCAL")
        current.constant0_bytes = fields.get("CONSTANT[0]")
    return out


_ELF_NVINFO_SECTION = re.compile(r"^\.nv\.info\.(\S+)\s*$")
_ELF_TEXT_SECTION = re.compile(r"^\.text\.(\S+)\s*$")
_ELF_BAR = re.compile(r"^bar\s*=\s*(\d+)")


def parse_elf_facts(text: str) -> dict[str, dict[str, Any]]:
    """`cuobjdump --dump-elf` output -> per function: named barriers used, required block size."""
    facts: dict[str, dict[str, Any]] = {}
    section: str | None = None
    kind = None
    pending_attr: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _ELF_NVINFO_SECTION.match(line)
        if m:
            section, kind, pending_attr = m.group(1), "info", None
            continue
        m = _ELF_TEXT_SECTION.match(line)
        if m:
            section, kind, pending_attr = m.group(1), "text", None
            continue
        if line.startswith(".") and not line.startswith(".nv.info."):
            section, kind = None, None
            continue
        if section is None:
            continue
        entry = facts.setdefault(section, {})
        if kind == "text":
            m = _ELF_BAR.match(line)
            if m:
                entry["barriers"] = int(m.group(1))
            elif "lmem=" in line:
                # The per-function summary line; sm_120 binaries state barriers as an
                # attribute instead, present only when the kernel uses one.
                entry.setdefault("barriers", 0)
        elif kind == "info":
            if line.startswith("Attribute:"):
                pending_attr = line.split(":", 1)[1].strip()
            elif line.startswith("Value:") and pending_attr == "EIATTR_REQNTID":
                dims = [int(tok, 16) for tok in line.split(":", 1)[1].split()]
                if dims:
                    entry["required_block"] = tuple((dims + [1, 1, 1])[:3])
            elif line.startswith("Value:") and pending_attr == "EIATTR_NUM_BARRIERS":
                entry["barriers"] = int(line.split(":", 1)[1].split()[0], 16)
    return facts


_ELF_HEADER_ARCH = re.compile(r"^\s*\d+bit elf:.*\bsm=(\w+)", re.MULTILINE)


def elf_arch(text: str) -> str | None:
    """The target named in `cuobjdump --dump-elf`'s header line, as `sm_90a`."""
    m = _ELF_HEADER_ARCH.search(text)
    return f"sm_{m.group(1)}" if m else None


def function_resources(cubin_path: str) -> tuple[dict[str, FunctionResources], str | None]:
    """Resources per function, and the architecture the cubin was built for."""
    resources = parse_resource_usage(_run_tool("cuobjdump", "--dump-resource-usage", cubin_path))
    elf_text = _run_tool("cuobjdump", "--dump-elf", cubin_path)
    for name, facts in parse_elf_facts(elf_text).items():
        if name in resources:
            resources[name].barriers = facts.get("barriers")
            resources[name].required_block = facts.get("required_block")
    return resources, elf_arch(elf_text)


# ----------------------------------------------------------------------------- SASS

_SASS_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
# `/*0a40*/  @!P0 HGMMA.64x128x16.F32.BF16 gdesc[UR4], RZ, !UPT ;`
_SASS_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")


def split_sass_functions(text: str) -> dict[str, str]:
    """`cuobjdump --dump-sass` output -> SASS listing per function."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        m = _SASS_FUNCTION.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in out.items()}


def sass_opcodes(sass: str) -> list[str]:
    """Full opcodes (with modifiers, e.g. `STL.64`) in listing order."""
    return [m.group(1) for m in map(_SASS_INSTRUCTION.match, sass.splitlines()) if m]


def opcode_histogram(opcodes: list[str]) -> dict[str, int]:
    """Counts per base opcode (`HGMMA.64x128x16.F32.BF16` -> `HGMMA`), the names ncu's mix uses."""
    counts: dict[str, int] = {}
    for op in opcodes:
        base = op.split(".", 1)[0]
        counts[base] = counts.get(base, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


_ACCESS_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def local_memory_bytes(opcodes: list[str], base: str) -> int:
    """Bytes per thread moved by the `base` (STL or LDL) instructions in the binary."""
    total = 0
    for op in opcodes:
        parts = op.split(".")
        if parts[0] != base:
            continue
        width = 4
        for modifier in parts[1:]:
            width = _ACCESS_BYTES.get(modifier, width)
        total += width
    return total


def expected_opcodes_missing(expected: list[str], opcodes: list[str]) -> list[str]:
    """Expected entries no instruction matches. `HGMMA` matches any HGMMA; `LDSM.16.M88.4`
    matches that opcode and longer forms of it."""
    missing = []
    for want in expected:
        if not any(op == want or op.startswith(want + ".") for op in opcodes):
            missing.append(want)
    return missing


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
                      arch: str) -> StaticArtifacts:
    """Run the kernel's own compile (no GPU needed) and collect what inspection reads."""
    from kernelscope.kernels.spec import ConfigRejected

    # The DSL reads its target once, at import; a kernel may also pass --gpu-arch itself.
    # Kept artifacts go to the working directory unless told otherwise: keep them out of
    # the user's tree.
    if "cutlass" not in sys.modules:
        os.environ["CUTE_DSL_ARCH"] = arch
    if "CUTE_DSL_DUMP_DIR" not in os.environ:
        from kernelscope.profiler.compile_cache import cache_root

        os.environ["CUTE_DSL_DUMP_DIR"] = str(cache_root() / "dsl-artifacts")
    # The DSL fails a kept-artifact compile when the folder is missing.
    Path(os.environ["CUTE_DSL_DUMP_DIR"]).mkdir(parents=True, exist_ok=True)
    try:
        import cutlass  # noqa: F401
    except ImportError as e:
        raise UserError(f"cannot compile {spec.name}: nvidia-cutlass-dsl is not installed ({e})")

    with record_dsl_compiles() as seen:
        try:
            compiled = spec.compile(dict(config), dict(shape), dtype, arch)
        except ConfigRejected as e:
            message = str(e)
            raise UserError(message if message.startswith(spec.name) else f"{spec.name}: {message}")
        except UserError:
            raise
        except Exception as e:
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
        listings = split_sass_functions(_run_tool("cuobjdump", "--dump-sass", path))
    if built_for and built_for != arch:
        raise UserError(
            f"{source}: the compile produced a cubin for {built_for}, not {arch} "
            "(the kernel's compile should pass options='--gpu-arch ARCH' to cute.compile)")

    by_kernel = {l.kernel: l for l in launches if l.kernel}
    lone_launch = launches[0] if len(launches) == 1 and len(listings) == 1 else None
    versions = toolchain_versions()
    tool_version = "; ".join(f"{k} {versions[k]}" for k in ("nvidia-cuda-cuobjdump", "nvidia-cutlass-dsl")
                             if versions.get(k))

    results = []
    for index, (name, sass) in enumerate(listings.items()):
        res = resources.get(name, FunctionResources(name=name))
        opcodes = sass_opcodes(sass)
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
        results.append(KernelInspection(profile=profile, sass=sass, missing_expected=missing))
    return results


def artifacts_to_json(artifacts: StaticArtifacts) -> dict[str, Any]:
    d = asdict(artifacts)
    d.pop("cubin")
    return d


def artifacts_from_json(d: Mapping[str, Any], cubin: bytes) -> StaticArtifacts:
    return StaticArtifacts(
        cubin=cubin,
        ptx=d.get("ptx"),
        launches=[LaunchRequest.from_dict(x) for x in d.get("launches", [])],
        kernel_names=list(d.get("kernel_names", [])),
    )


def digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


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

    from kernelscope.profiler.compile_cache import hash_sources, source_files

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
                   command_line: str | None = None) -> StaticInspection:
    """Compile `target` without a GPU (or take the compile from the cache) and inspect it."""
    from kernelscope.profiler.compile_cache import CacheKey, CompileCache

    if arch not in SUPPORTED_ARCHS:
        raise UserError(f"unsupported arch {arch} (supported: {', '.join(SUPPORTED_ARCHS)})")
    config_overrides = dict(config or {})
    shape_overrides = {k: int(v) for k, v in (shape or {}).items()}
    canonical, source_hash = source_identity(target)
    key = CacheKey(target=canonical, source_hash=source_hash, config=config_overrides,
                   shape=shape_overrides, dtype=dtype, arch=arch, versions=toolchain_versions())
    cache = CompileCache()
    entry = cache.load(key) if use_cache and source_hash not in ("unknown", "unlocatable") else None

    if entry is not None:
        meta, cubin = entry.meta, entry.cubin
    else:
        from kernelscope.kernels import registry

        spec = registry.resolve(target)
        resolved_config, resolved_shape, resolved_dtype = _resolve_request(
            spec, config_overrides, shape_overrides, dtype, arch)
        artifacts = compile_artifacts(spec, resolved_config, resolved_shape, resolved_dtype, arch)
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
        if use_cache and source_hash not in ("unknown", "unlocatable") and artifacts.observed_compile:
            cache.store(key, cubin, meta)

    launches = [LaunchRequest.from_dict(l) for l in meta["artifacts"]["launches"]]
    kernels = inspect_cubin(
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
