"""KernelSpec: what a kernel (ours or a user's) tells kernelscope about itself.

A target is either a name registered in kernelscope.kernels.registry (`gemm`,
`flash_attn`, ...) or `path/to/file.py:NAME`, where NAME is a KernelSpec (or a
function returning one) defined in the user's own file.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

Shape = Mapping[str, int]          # e.g. {"M": 4096, "N": 4096, "K": 4096}
Config = Mapping[str, Any]         # e.g. {"stages": 4, "cluster": (2, 1)}
Inputs = Mapping[str, Any]         # named tensors made by make_inputs


class ConfigRejected(ValueError):
    """A config or shape the kernel cannot run (does not fit shared memory, bad tile, ...).

    The message is shown to the user as one line; sweeps report the config as invalid.
    """


# Artifacts a CompiledKernel may build on first use instead of at compile time.
_DEFERRED = ("cubin", "sass", "ptx", "kernel_names")


@dataclass
class CompiledKernel:
    """What a compile produced. `launch(inputs)` runs it (GPU only); the artifacts
    serve compile-only inspection (any machine).

    With `artifacts` (a zero-argument function returning (cubin, PTX)), the cubin, PTX, SASS
    and kernel names are built on first use: a kernel whose launch path compiles a variant of
    its own (from real tensors) then pays for the inspected compile and its disassembly only
    when something inspects it, never in a timed or profiled run."""

    launch: Callable[[Inputs], Any] | None
    cubin: bytes | None = None
    sass: str | None = None
    ptx: str | None = None
    kernel_names: list[str] = field(default_factory=list)
    # bind(inputs) -> zero-argument launcher with all host-side argument conversion done once,
    # so that timed launches measure the kernel, not the setup. Defaults to launch(inputs).
    bind: Callable[[Inputs], Callable[[], Any]] | None = None
    artifacts: Callable[[], tuple[bytes | None, str | None]] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.artifacts is not None:
            for name in _DEFERRED:       # __getattr__ builds them when first read
                self.__dict__.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        # Reached only for attributes missing from the instance: the deferred artifacts.
        build = self.__dict__.get("artifacts")
        if name not in _DEFERRED or build is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        cubin, ptx = build()
        sass = None
        if cubin:
            from kernelscope.toolchain.sass import disassemble_cubin, kernel_symbols
            sass = disassemble_cubin(cubin)
        names = kernel_symbols(sass) if sass else []
        self.__dict__.update(cubin=cubin, ptx=ptx, sass=sass, kernel_names=names, artifacts=None)
        return self.__dict__[name]

    def materialize(self) -> "CompiledKernel":
        """Builds deferred artifacts now (where compile errors and recorded compiles belong)."""
        _ = self.cubin
        return self

    def bound(self, inputs: Inputs) -> Callable[[], Any]:
        if self.bind is not None:
            return self.bind(inputs)
        if self.launch is None:
            raise RuntimeError("this compiled kernel cannot launch (compiled without a GPU)")
        launch = self.launch
        return lambda: launch(inputs)


# The dataclass keeps each default as a class attribute, which would hide a deferred artifact
# from __getattr__; __init__ holds its own copy of the defaults, so these can go.
for _name in ("cubin", "sass", "ptx"):
    delattr(CompiledKernel, _name)


@dataclass
class KernelSpec:
    name: str
    description: str
    # Named references this target can be compared with; the first is the default.
    references: list[str]
    default_shapes: list[dict[str, int]]
    default_config: dict[str, Any]
    dtypes: list[str]                                 # e.g. ["bfloat16", "float16"]
    make_inputs: Callable[[Shape, str, int, str], Inputs]   # (shape, dtype, seed, device)
    compile: Callable[[Config, Shape, str, str], CompiledKernel]  # (config, shape, dtype, arch)
    reference_fp32: Callable[[Inputs], Any]          # exact answer for correctness
    flops: Callable[[Shape], float]
    bytes_moved: Callable[[Shape, str], float]        # fewest bytes: inputs once, outputs once
    # Absolute and relative tolerance against the fp32 reference, per dtype.
    tolerance: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Sweepable config keys and their candidate values (documentation and `sweep` defaults).
    config_space: dict[str, list[Any]] = field(default_factory=dict)
    # SASS opcodes the kernel's design needs (e.g. HGMMA, UTMALDG): `inspect` checks them.
    expected_sass: list[str] = field(default_factory=list)
    archs: list[str] = field(default_factory=lambda: ["sm_90a"])
    # How the output tensor is laid out for error localisation: names of its dims,
    # e.g. ("row", "col"); tiles of `tile` elements per dim when known.
    output_dims: tuple[str, ...] = ("row", "col")
    tile: tuple[int, ...] | None = None
    # The kernel's own torch implementation (any precision): the reference named "torch".
    # Lets a user's kernel with no library counterpart still be timed and profiled against one.
    torch_reference: Callable[[Inputs], Any] | None = None
    # Name of the output in make_inputs' mapping that launch writes (and returns).
    output: str = "out"
    # Per-shape choice over default_config (shape, dtype) -> partial config, when the fastest
    # config depends on the shape; `run` and `profile` apply it before the user's --config.
    shape_config: Callable[[Shape, str], Config] | None = None
    # Raises ConfigRejected when a full config cannot be built for (shape, dtype): lets a
    # per-shape choice the caller's overrides contradict give way (config_for).
    config_check: Callable[[Config, Shape, str], None] | None = None

    def config_for(self, shape: Shape, dtype: str, overrides: Config | None = None) -> Config:
        """default_config, then the per-shape choice, then the caller's overrides. Where the
        overrides contradict the per-shape choice (together they cannot be built), the choice
        gives way: as few of its keys are left out as make it buildable (the first such set in
        the choice's key order), else all of them."""
        tuned = self.shape_config(shape, dtype) if self.shape_config is not None else {}
        overrides = dict(overrides or {})
        merged = {**self.default_config, **tuned, **overrides}
        if not tuned or not overrides or self.config_check is None or self._buildable(merged, shape, dtype):
            return merged
        yielding = [key for key in tuned if key not in overrides]
        for count in range(1, len(yielding)):
            for left_out in itertools.combinations(yielding, count):
                fewer = {**self.default_config, **{k: v for k, v in tuned.items() if k not in left_out},
                         **overrides}
                if self._buildable(fewer, shape, dtype):
                    return fewer
        return {**self.default_config, **overrides}

    def _buildable(self, config: Config, shape: Shape, dtype: str) -> bool:
        try:
            self.config_check(config, shape, dtype)
        except ConfigRejected:
            return False
        return True

