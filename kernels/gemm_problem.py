"""The GEMM problem C[M, N] = A[M, K] @ B[K, N] that the `gemm` and `gemm_mma` kernels solve:
the shape suite, the inputs, the references and the work it takes (FLOPs, bytes).

Also the parts of a kernel's config and shape checks that every GEMM-shaped kernel spells the
same way (gemm_rmsnorm included): integer, positive M, N, K; known config keys; a cluster shape.
"""

from typing import Any

from kernelscope.kernels.spec import ConfigRejected

SUITE = [
    {"M": 2048, "N": 2048, "K": 2048},
    {"M": 4096, "N": 4096, "K": 4096},
    {"M": 8192, "N": 8192, "K": 8192},
    {"M": 8192, "N": 4096, "K": 4096},
    {"M": 8192, "N": 11008, "K": 4096},
    {"M": 8192, "N": 4096, "K": 11008},
    {"M": 8192, "N": 14336, "K": 4096},
    {"M": 8192, "N": 4096, "K": 14336},
    {"M": 128, "N": 4096, "K": 4096},
    {"M": 512, "N": 4096, "K": 4096},
]


def make_inputs(shape, dtype: str = "bfloat16", seed: int = 0, device: str = "cuda"):
    import torch
    M, N, K = int(shape["M"]), int(shape["N"]), int(shape["K"])
    g = torch.Generator(device="cpu").manual_seed(seed)
    tdt = getattr(torch, dtype)
    a = torch.randn((M, K), generator=g, dtype=torch.float32).to(tdt).to(device)
    b = torch.randn((K, N), generator=g, dtype=torch.float32).to(tdt).to(device)
    # NaN-poisoned output: an element the kernel never writes shows up as an error.
    out = torch.full((M, N), float("nan"), dtype=tdt, device=device)
    return {"a": a, "b": b, "out": out}


def reference_fp32(inputs):
    return inputs["a"].float() @ inputs["b"].float()


def torch_reference(inputs):
    return inputs["a"] @ inputs["b"]


def flops(shape) -> float:
    return 2.0 * shape["M"] * shape["N"] * shape["K"]


def bytes_moved(shape, out_dtype: str) -> float:
    """A and B read once (16-bit), C written once in `out_dtype`."""
    out_bytes = 4 if out_dtype == "float32" else 2
    return 2.0 * (shape["M"] * shape["K"] + shape["K"] * shape["N"]) + out_bytes * shape["M"] * shape["N"]


def problem_dims(shape, kernel: str) -> tuple[int, int, int]:
    """(M, N, K) of a shape mapping; ConfigRejected, naming the kernel, unless all are positive
    integers."""
    try:
        M, N, K = int(shape["M"]), int(shape["N"]), int(shape["K"])
    except (KeyError, TypeError, ValueError):
        raise ConfigRejected(f"{kernel} shape needs integer M, N, K, got {dict(shape)}") from None
    if min(M, N, K) < 1:
        raise ConfigRejected(f"{kernel} shape must be positive, got M={M} N={N} K={K}")
    return M, N, K


def reject_unknown_keys(config: dict[str, Any], config_class, kernel: str) -> None:
    """ConfigRejected listing the keys of `config` that are no field of the config dataclass."""
    known = set(config_class.__dataclass_fields__)
    unknown = sorted(set(config) - known)
    if unknown:
        raise ConfigRejected(f"unknown {kernel} config keys {unknown}; known: {sorted(known)}")


def parse_cluster(value) -> tuple[int, ...]:
    """A cluster shape given as (2, 1), [2, 1], "2x1" or "2,1", as a tuple of ints."""
    if isinstance(value, str):
        value = value.lower().replace("x", ",").split(",")
    return tuple(int(x) for x in value)
