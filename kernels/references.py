"""Named references a target is measured against: `cublas`, `sdpa`, `torch.rmsnorm`, ...

A reference reads the target's inputs (the mapping made by the spec's make_inputs) by
conventional names, so any target whose inputs follow the convention can use it:

  cublas, quack.gemm          a (M, K) or (L, M, K); b (K, N), or (N, K) which is transposed
  sdpa, sdpa.cudnn, sdpa.flash, fa4
                              q, k, v; layout "bshd" (default) or "bhsd"; causal (bool);
                              softmax_scale (optional)
  torch.rmsnorm, quack.rmsnorm
                              x (..., N); w (N,) the gain; eps (default 1e-6)
  rmsnorm+matmul              x (M, K); gamma or g (K,); w (K, N) or (N, K); eps
  torch                       the target's own torch implementation (KernelSpec.torch_reference)

`bind(name, spec, inputs)` returns a zero-argument callable with every check done up
front; a reference that does not apply or is not installed is one UserError line.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, Callable

from kernelscope.errors import UserError
from kernelscope.kernels.spec import Inputs, KernelSpec

DEFAULT_EPS = 1e-6


@dataclass(frozen=True)
class Reference:
    name: str
    description: str
    needs: tuple[str, ...]            # input names it reads
    package: str | None               # importable module it needs beyond torch
    make: Callable[[KernelSpec, Inputs], Callable[[], Any]]


def _gemm_operands(inputs: Inputs):
    a, b = inputs["a"], inputs["b"]
    if a.shape[-1] != b.shape[-2] and a.shape[-1] == b.shape[-1]:
        b = b.transpose(-1, -2)      # B given as (N, K)
    if a.shape[-1] != b.shape[-2]:
        raise UserError(f"inputs a {tuple(a.shape)} and b {tuple(b.shape)} do not multiply")
    return a, b


def _make_cublas(spec, inputs):
    import torch

    a, b = _gemm_operands(inputs)
    return lambda: torch.matmul(a, b)


def _make_quack_gemm(spec, inputs):
    from quack.gemm_interface import gemm

    a, b = _gemm_operands(inputs)
    return lambda: gemm(a, b)


def _attention_operands(inputs: Inputs, want: str):
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    layout = inputs.get("layout", "bshd")
    if layout not in ("bshd", "bhsd"):
        raise UserError(f"attention inputs: layout {layout!r} is not bshd or bhsd")
    if layout != want:
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    return q, k, v, bool(inputs.get("causal", False)), inputs.get("softmax_scale")


def _in_input_layout(out, inputs: Inputs, produced: str):
    """The output in the inputs' layout (a transposed view, no copy), so it compares with the
    target's output and the fp32 reference element for element."""
    return out if inputs.get("layout", "bshd") == produced else out.transpose(1, 2)


def _make_sdpa(backend: str | None):
    def make(spec, inputs):
        import torch.nn.functional as F

        q, k, v, causal, scale = _attention_operands(inputs, "bhsd")
        if backend is None:
            return lambda: _in_input_layout(
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale), inputs, "bhsd")
        from torch.nn.attention import SDPBackend, sdpa_kernel

        chosen = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[backend]

        def run():
            with sdpa_kernel(chosen):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
            return _in_input_layout(out, inputs, "bhsd")

        try:
            run()  # fail here, once, if the backend cannot take these inputs
        except RuntimeError as e:
            raise UserError(f"reference sdpa.{backend} cannot run these inputs: {str(e).splitlines()[0]}") from e
        return run
    return make


def _make_fa4(spec, inputs):
    from flash_attn.cute import flash_attn_func

    q, k, v, causal, scale = _attention_operands(inputs, "bshd")

    def run():
        out = flash_attn_func(q, k, v, softmax_scale=scale, causal=causal)
        out = out[0] if isinstance(out, tuple) else out      # (out, lse) in some versions
        return _in_input_layout(out, inputs, "bshd")
    return run


def _rms_operands(inputs: Inputs):
    x, w = inputs["x"], inputs["w"]
    if w.dim() != 1 or w.shape[0] != x.shape[-1]:
        raise UserError(f"rmsnorm reference: w {tuple(w.shape)} is not a gain of length {x.shape[-1]}")
    return x, w, float(inputs.get("eps", DEFAULT_EPS))


def _make_torch_rmsnorm(spec, inputs):
    import torch.nn.functional as F

    x, w, eps = _rms_operands(inputs)
    return lambda: F.rms_norm(x, (x.shape[-1],), w, eps)


def _make_quack_rmsnorm(spec, inputs):
    from quack.rmsnorm import rmsnorm

    x, w, eps = _rms_operands(inputs)
    return lambda: rmsnorm(x, w, eps=eps)


def _make_rmsnorm_matmul(spec, inputs):
    import torch
    import torch.nn.functional as F

    x = inputs["x"]
    gamma = inputs.get("gamma", inputs.get("g"))
    if gamma is None:
        raise UserError("reference rmsnorm+matmul needs an input named gamma (or g): the rmsnorm gain")
    w = inputs["w"]
    k = x.shape[-1]
    if w.shape[0] != k and w.shape[-1] == k:
        w = w.transpose(-1, -2)
    eps = float(inputs.get("eps", DEFAULT_EPS))
    return lambda: torch.matmul(F.rms_norm(x, (k,), gamma, eps), w)


def _make_torch(spec, inputs):
    if spec.torch_reference is None:
        raise UserError(f"reference 'torch' does not apply to {spec.name}: its spec has no torch_reference")
    fn = spec.torch_reference
    return lambda: fn(inputs)


REFERENCES: dict[str, Reference] = {r.name: r for r in [
    Reference("cublas", "torch.matmul (cuBLAS)", ("a", "b"), None, _make_cublas),
    Reference("sdpa", "scaled_dot_product_attention, default backend", ("q", "k", "v"), None, _make_sdpa(None)),
    Reference("sdpa.cudnn", "scaled_dot_product_attention, cuDNN backend", ("q", "k", "v"), None, _make_sdpa("cudnn")),
    Reference("sdpa.flash", "scaled_dot_product_attention, flash backend", ("q", "k", "v"), None, _make_sdpa("flash")),
    Reference("rmsnorm+matmul", "F.rms_norm then torch.matmul (unfused)", ("x", "w"), None, _make_rmsnorm_matmul),
    Reference("torch.rmsnorm", "torch.nn.functional.rms_norm", ("x", "w"), None, _make_torch_rmsnorm),
    Reference("fa4", "flash-attn-4 (flash_attn.cute)", ("q", "k", "v"), "flash_attn.cute", _make_fa4),
    Reference("quack.gemm", "quack GEMM (CuTe DSL)", ("a", "b"), "quack", _make_quack_gemm),
    Reference("quack.rmsnorm", "quack RMSNorm (CuTe DSL)", ("x", "w"), "quack", _make_quack_rmsnorm),
    Reference("torch", "the target's own torch implementation", (), None, _make_torch),
]}


def names() -> list[str]:
    return list(REFERENCES)


def default_for(spec: KernelSpec) -> str:
    if spec.references:
        return spec.references[0]
    if spec.torch_reference is not None:
        return "torch"
    raise UserError(f"target {spec.name} names no reference; pass --vs with one of {', '.join(names())}")


def installed(name: str) -> bool:
    ref = REFERENCES[name]
    if ref.package is None:
        return True
    try:
        return importlib.util.find_spec(ref.package) is not None
    except (ImportError, ValueError):
        return False


def bind(name: str, spec: KernelSpec, inputs: Inputs) -> Callable[[], Any]:
    """A zero-argument callable running reference `name` on the target's inputs."""
    ref = REFERENCES.get(name)
    if ref is None:
        raise UserError(f"unknown reference {name!r}: known are {', '.join(names())}")
    missing = [k for k in ref.needs if k not in inputs]
    if missing:
        raise UserError(f"reference {name!r} does not apply to {spec.name}: it needs inputs "
                        f"{', '.join(ref.needs)} and {spec.name} has {', '.join(k for k in inputs)}")
    if not installed(name):
        raise UserError(f"reference {name!r} needs the Python package {ref.package}, which is not installed")
    try:
        return ref.make(spec, inputs)
    except ImportError as e:
        raise UserError(f"reference {name!r} could not be imported: {e}") from e
