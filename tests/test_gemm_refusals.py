"""The configs and shapes each GEMM kernel (gemm, gemm_mma, gemm_rmsnorm) refuses before any
compile, each with a reason that names what is wrong (no GPU needed)."""

import os

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from kernelscope.kernels import gemm, gemm_mma, gemm_rmsnorm  # noqa: E402
from kernelscope.kernels.spec import ConfigRejected  # noqa: E402

COMPILE = {"gemm": gemm.compile_gemm, "gemm_mma": gemm_mma.compile_gemm_mma,
           "gemm_rmsnorm": gemm_rmsnorm.compile_gemm_rmsnorm}

# Per kernel: (config overrides, a word the refusal names).
REFUSED_CONFIGS = {
    "gemm": [
        ({"stages": 9}, "shared memory"),
        ({"tile_n": 100}, "tile_n"),
        ({"tile_k": 32}, "tile_k"),
        ({"cluster": (4, 2)}, "cluster"),
        ({"cluster": (3, 1)}, "cluster"),
        ({"consumer_wgs": 3}, "consumer_wgs"),
        ({"tile_m": 192}, "tile_m"),
        ({"tile_m": 256}, "accumulators"),                       # 256x256: 256 per thread
        ({"tile_m": 128, "consumer_wgs": 1}, "accumulators"),    # 128x256 on one warpgroup
        ({"raster": "diagonal"}, "raster"),
        ({"group": 0}, "group size"),
        ({"epi_n": 48}, "epi_n"),
        ({"epi_stages": 3}, "epi_stages"),
        ({"splits": 0}, "splits"),
        ({"splits": 17}, "splits"),
        ({"splits": 2, "tail_split": True}, "exclude"),
        ({"ring_epi_n": 48}, "ring_epi_n"),
        ({"ring_epi_n": 64, "splits": 2}, "ring_epi_n"),
        ({"ring_epi_n": 64, "stages": 2, "out_dtype": "float32"}, "ring"),   # 128 KB tile, 96 KB ring
        ({"no_such_key": 1}, "unknown"),
    ],
    "gemm_mma": [
        ({"wk_iters": 3}, "wk_iters"),
        ({"wk_iters": 0}, "wk_iters"),
        ({"tile_k": 32}, "tile_k"),
        ({"stages": 9}, "shared memory"),
        ({"stages": 1}, "stages"),
        ({"tile_n": 100}, "tile_n"),
        ({"tile_m": 96, "warps_m": 4}, "tile_m"),
        ({"tile_m": 256, "tile_n": 256}, "accumulators"),
        ({"raster": "diagonal"}, "raster"),
        ({"raster": "morton", "group": 6}, "power-of-two"),
        ({"refill_at": 4}, "refill_at"),
        ({"wk_iters": 2, "refill_at": 3}, "refill_at"),
        ({"wk_iters": 4, "refill_at": 1}, "refill_at"),
        ({"cluster": (4, 1)}, "cluster"),
        ({"cluster": "2x1", "stream_k": True}, "stream_k"),
        ({"no_such_key": 1}, "unknown"),
    ],
    "gemm_rmsnorm": [
        ({"stages": 9}, "shared memory"),
        ({"tile_n": 100}, "tile_n"),
        ({"cluster": (3, 1)}, "cluster"),
        ({"raster": "diagonal"}, "raster"),
        ({"epi_n": 48}, "epi_n"),
        ({"epi_stages": 3}, "epi_stages"),
        ({"a_buffers": 3}, "a_buffers"),
        ({"pingpong": "yes"}, "pingpong"),
        ({"pingpong": True, "stages": 5}, "shared memory"),
        ({"w_major": "m"}, "w_major"),
        ({"no_such_key": 1}, "unknown"),
    ],
}

# Shapes and dtypes no GEMM kernel takes: rows TMA cannot address (not 16-byte aligned), an
# empty dimension, a 32-bit input.
UNSUPPORTED_SHAPES = [
    ({"M": 256, "N": 250, "K": 256}, "bfloat16"),       # B rows not 16-byte aligned
    ({"M": 256, "N": 256, "K": 20}, "bfloat16"),        # A rows not 16-byte aligned
    ({"M": 0, "N": 256, "K": 256}, "bfloat16"),
    ({"M": 256, "N": 256, "K": 256}, "float32"),
]


@pytest.mark.parametrize("kernel,bad,needle", [(k, bad, needle) for k, cases in REFUSED_CONFIGS.items()
                                               for bad, needle in cases])
def test_invalid_configs_are_refused_with_a_reason(kernel, bad, needle):
    with pytest.raises(ConfigRejected, match=needle):
        COMPILE[kernel](bad, {"M": 256, "N": 256, "K": 256})


@pytest.mark.parametrize("kernel", list(COMPILE))
@pytest.mark.parametrize("shape,dtype", UNSUPPORTED_SHAPES)
def test_unsupported_shapes_are_refused(kernel, shape, dtype):
    with pytest.raises(ConfigRejected):
        COMPILE[kernel]({}, shape, dtype)
