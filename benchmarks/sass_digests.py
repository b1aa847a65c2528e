"""SHA-256 digests of the shipped kernels' SASS and resource facts, compiled on the CPU for sm_90a.

    python benchmarks/sass_digests.py                       # print the digests
    python benchmarks/sass_digests.py -o digests.json       # and write them
    python benchmarks/sass_digests.py --compare benchmarks/results/sass-digests-sm90a.json.xz
    python benchmarks/sass_digests.py --only flash_attn     # the variants of one kernel

A change that only moves code (a class to module level, a helper into a shared module) must
leave every digest unchanged; --compare exits 1 and names the variants whose SASS or resources
differ. No GPU is needed.

Covered variants: the default config of every registered kernel at its first default shape (the
per-shape tuned config applied, as the static gate compiles it; the GEMMs at 2048^3, where they
were recorded, which compiles the same code as their default 4096^3), every config of
suites/static.toml, and the variants the kernels' compile tests build.

Kernel names are normalised: the DSL's mangled kernel symbol embeds the Python qualified name of
the kernel method (e.g. `_kernel_class.<locals>.HopperGemm.kernel`), which changes when a class
moves to module level though the code it generates does not. Each `.global` symbol of the
listing is replaced, everywhere in the SASS and the resource report, by `KERNEL<i>`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

ARCH = "sm_90a"

# (label, target, config overrides, shape or None for the first default shape, dtype)
# The GEMM variants were recorded at 2048^3, the first default shape before it became 4096^3:
# named here so the recorded shapes stay true (the code compiled is the same at both).
_GEMM_SHAPE = {"M": 2048, "N": 2048, "K": 2048}
# gemm_mma's 128x256 tile, named: since its per-shape choice (tuned_config) 2048^3 gets 128x128,
# and the recorded variants stay the 128x256 kernel they were.
_MMA_128X256 = {"tile_m": 128, "tile_n": 256, "warps_m": 2, "warps_n": 4, "stages": None}
# Since the per-shape choice stores 2048^3's lone tiles through the ring, the recorded GEMM
# variants name it off, and stay the kernels they were; the ring's variant has its own line.
_NO_RING = {"ring_epi_n": 0}
_FA_SHAPE = {"B": 2, "H": 3, "S": 1000, "causal": 0}
VARIANTS = [
    # Defaults (and the static suite's rmsnorm configs).
    ("rmsnorm/default", "rmsnorm", {}, None, "bfloat16"),
    ("rmsnorm/vec4", "rmsnorm", {"vec": 4}, None, "bfloat16"),
    ("rmsnorm/vec2", "rmsnorm", {"vec": 2}, None, "bfloat16"),
    ("gemm/default", "gemm", _NO_RING, _GEMM_SHAPE, "bfloat16"),
    ("gemm/default-one-tile-ring-epilogue", "gemm", {}, _GEMM_SHAPE, "bfloat16"),
    ("gemm_rmsnorm/default", "gemm_rmsnorm", {}, None, "bfloat16"),
    ("gemm_mma/default", "gemm_mma", _MMA_128X256, _GEMM_SHAPE, "bfloat16"),
    ("gemm_mma/stream-k", "gemm_mma", {**_MMA_128X256, "stream_k": True}, _GEMM_SHAPE, "bfloat16"),
    ("gemm_mma/cluster-2x1", "gemm_mma", {**_MMA_128X256, "cluster": [2, 1]}, _GEMM_SHAPE, "bfloat16"),
    ("flash_attn/default-tuned-d64-192x128-three-math-wgs", "flash_attn", {}, None, "bfloat16"),
    # tests/test_gemm_compile.py
    ("gemm/m-major-fp32-out", "gemm",
     {"a_major": "m", "b_major": "k", "out_dtype": "float32", "cluster": (1, 2), **_NO_RING}, _GEMM_SHAPE, "float16"),
    ("gemm/one-wg-raster-n", "gemm",
     {"tile_m": 64, "tile_n": 128, "consumer_wgs": 1, "cluster": (1, 1), "raster": "n", **_NO_RING}, _GEMM_SHAPE,
     "float16"),
    # tests/test_gemm_rmsnorm_compile.py
    ("gemm_rmsnorm/one-buffer-wk", "gemm_rmsnorm",
     {"a_buffers": 1, "cluster": (1, 2), "w_major": "k"}, None, "float16"),
    ("gemm_rmsnorm/n128-raster-n", "gemm_rmsnorm",
     {"tile_n": 128, "cluster": (1, 1), "raster": "n"}, None, "bfloat16"),
    ("gemm_rmsnorm/pingpong", "gemm_rmsnorm", {"pingpong": True}, None, "bfloat16"),
    ("gemm_rmsnorm/pingpong-small", "gemm_rmsnorm",
     {"pingpong": True, "a_buffers": 1, "tile_n": 128, "cluster": (1, 2), "w_major": "k"}, None, "float16"),
    # tests/test_gemm_mma_compile.py
    ("gemm_mma/b-k-major", "gemm_mma", {**_MMA_128X256, "b_major": "k", "raster": "row"}, _GEMM_SHAPE, "bfloat16"),
    ("gemm_mma/morton", "gemm_mma", {**_MMA_128X256, "raster": "morton", "wk_iters": 2}, _GEMM_SHAPE, "bfloat16"),
    # gemm_mma's per-shape choice (tests/test_gemm_mma_compile.py): what run/profile launch there.
    ("gemm_mma/per-shape-2048-128x128", "gemm_mma", {}, _GEMM_SHAPE, "bfloat16"),
    ("gemm_mma/per-shape-512-128x64", "gemm_mma", {}, {"M": 512, "N": 4096, "K": 4096}, "bfloat16"),
    ("gemm_mma/per-shape-128-64x64", "gemm_mma", {}, {"M": 128, "N": 4096, "K": 4096}, "bfloat16"),
    # tests/test_flash_attn_compile.py, which compiles without the per-shape tuning: 128 x 128
    # tiles unless the variant names others.
    ("flash_attn/d128", "flash_attn", {"qk_mn": (128, 128)}, {**_FA_SHAPE, "D": 128}, "bfloat16"),
    ("flash_attn/d128-causal", "flash_attn", {}, {**_FA_SHAPE, "D": 128, "causal": 1}, "bfloat16"),
    ("flash_attn/d64-causal-3stages-no-pingpong-fp16", "flash_attn",
     {"num_stages": 3, "pingpong": False}, {**_FA_SHAPE, "D": 64, "causal": 1}, "float16"),
    ("flash_attn/d128-causal-no-overlap", "flash_attn",
     {"intra_wg_overlap": False}, {**_FA_SHAPE, "D": 128, "causal": 1}, "bfloat16"),
    ("flash_attn/d64-no-overlap-no-pingpong-3stages", "flash_attn",
     {"qk_mn": (128, 128), "intra_wg_overlap": False, "pingpong": False, "num_stages": 3},
     {**_FA_SHAPE, "D": 64}, "bfloat16"),
    ("flash_attn/d128-causal-o-reuses-q", "flash_attn",
     {"num_stages": 3, "o_reuses_q": True}, {**_FA_SHAPE, "D": 128, "causal": 1}, "bfloat16"),
    ("flash_attn/d64-causal", "flash_attn", {}, {**_FA_SHAPE, "D": 64, "causal": 1}, "bfloat16"),
    ("flash_attn/d64-pingpong-128x128", "flash_attn", {"qk_mn": (128, 128)}, {**_FA_SHAPE, "D": 64}, "bfloat16"),
    ("flash_attn/d128-tuned-128x160", "flash_attn", {}, {"B": 4, "H": 16, "S": 8192, "D": 128, "causal": 0},
     "bfloat16"),
]


def _cuobjdump() -> str:
    from kernelscope.toolchain.tools import find_cuda_tool

    return find_cuda_tool("cuobjdump")


def _normalise(text: str, names: list[str]) -> str:
    # Longest first, so that a name that is a prefix of another is not replaced inside it.
    for i, name in sorted(enumerate(names), key=lambda p: -len(p[1])):
        text = text.replace(name, f"KERNEL{i}")
    return text


def _resources(cubin: bytes, names: list[str]) -> str:
    """cuobjdump's resource report (registers, stack, shared, local = spills, constants, barriers
    are in the ELF facts), one normalised line per function, sorted."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([_cuobjdump(), "--dump-resource-usage", f.name],
                             capture_output=True, text=True, check=True).stdout
    lines = [ln.strip() for ln in out.splitlines() if "Function" in ln or "REG:" in ln]
    return _normalise("\n".join(lines), names)


def digest(variant) -> dict:
    label, target, overrides, shape, dtype = variant
    from kernelscope.kernels.registry import resolve

    spec = resolve(target)
    shape = dict(shape or spec.default_shapes[0])
    config = spec.config_for(shape, dtype, overrides)
    ck = spec.compile(dict(config), shape, dtype, ARCH)
    names = list(ck.kernel_names)
    sass = _normalise(ck.sass or "", names)
    resources = _resources(ck.cubin, names)
    return {
        "label": label,
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()},
        "shape": shape,
        "dtype": dtype,
        "kernels": len(names),
        "sass_lines": sass.count("\n"),
        "sass_sha256": hashlib.sha256(sass.encode()).hexdigest(),
        "resources": resources,
        "resources_sha256": hashlib.sha256(resources.encode()).hexdigest(),
    }


def _open_text(path: str, mode: str):
    """A digest file, xz-compressed where its name ends in .xz (the committed one is)."""
    return lzma.open(path, mode + "t") if path.endswith(".xz") else open(path, mode)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", help="write the digests as JSON")
    parser.add_argument("--compare", help="a digest file to compare with; exit 1 on any difference")
    parser.add_argument("--only", action="append", help="targets to digest (repeatable); default all")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    variants = [v for v in VARIANTS if not args.only or v[1] in args.only]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(digest, variants))
    for r in results:
        print(f"{r['label']:52s} sass {r['sass_sha256'][:16]}  resources {r['resources_sha256'][:16]}  "
              f"({r['sass_lines']} lines)")
    if args.output:
        with _open_text(args.output, "w") as f:
            json.dump({"arch": ARCH, "variants": results}, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.compare:
        with _open_text(args.compare, "r") as f:
            before = {r["label"]: r for r in json.load(f)["variants"]}
        differ = [r["label"] for r in results if r["label"] not in before
                  or (before[r["label"]]["sass_sha256"], before[r["label"]]["resources_sha256"])
                  != (r["sass_sha256"], r["resources_sha256"])]
        print(f"{len(results) - len(differ)} of {len(results)} variants identical to {args.compare}")
        for label in differ:
            print(f"DIFFERS: {label}")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
