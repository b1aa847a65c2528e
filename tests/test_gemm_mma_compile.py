"""Compile-only checks of gemm_mma (no GPU): the SASS holds the warp-level tensor-core path
(HMMA, LDSM for A and LDSM.MT for N-major B, TMA loads) and no WGMMA, no local memory in the
default build; it builds for sm_120a too; `kernelscope inspect` shows registers per wk_iters;
refused configs are in test_gemm_refusals.py; the residency arithmetic behind the persistent grid."""

import json
import os
import subprocess
import sys

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from gemm_testing import opcodes_with_modifiers  # noqa: E402
from kernelscope.kernels import gemm_mma  # noqa: E402
from kernelscope.kernels.spec import ConfigRejected  # noqa: E402


def _count(ops, prefix):
    return sum(1 for op in ops if op == prefix or op.startswith(prefix + "."))


@pytest.mark.parametrize("config", [{}, {"b_major": "k", "raster": "row"}, {"stream_k": True}, {"cluster": [2, 1]}])
def test_sm90a_sass_is_the_mma_sync_path_without_local_memory(config):
    ck = gemm_mma.compile_gemm_mma(config, {"M": 1000, "N": 1024, "K": 1000}, "bfloat16", "sm_90a")
    ops = opcodes_with_modifiers(ck.sass)
    assert _count(ops, "HMMA") > 0 and _count(ops, "LDSM") > 0 and _count(ops, "UTMALDG") > 0
    assert _count(ops, "HGMMA") == 0, "WGMMA in a kernel meant for the mma.sync path"
    # A is K-major: plain ldmatrix; B N-major needs the transposing form.
    assert "LDSM.16.M88.4" in ops
    assert ("LDSM.16.MT88.4" in ops) == (config.get("b_major", "n") == "n")
    assert all(op.startswith("HMMA.16816.F32.BF16") for op in ops if op.startswith("HMMA"))
    assert _count(ops, "LDL") == 0 and _count(ops, "STL") == 0, "local memory traffic in SASS"
    cfg = gemm_mma.MmaGemmConfig.from_mapping(config)
    res = gemm_mma.kernel_resources(cfg, "bfloat16", config.get("b_major", "n"), "sm_90a")
    assert res["stack_bytes"] == 0 and res["local_bytes"] == 0
    assert res["resident_blocks_per_sm"] == 1


@pytest.mark.parametrize("config,dtype", [({}, "bfloat16"), ({"tile_n": 128}, "float16")])
def test_builds_for_sm120a_without_local_memory(config, dtype):
    ck = gemm_mma.compile_gemm_mma(config, None, dtype, "sm_120a")
    ops = opcodes_with_modifiers(ck.sass)
    assert _count(ops, "HMMA") > 0 and _count(ops, "LDSM") > 0 and _count(ops, "HGMMA") == 0
    assert all(op.startswith("HMMA.16816.F32") for op in ops if op.startswith("HMMA"))
    assert _count(ops, "LDL") == 0 and _count(ops, "STL") == 0, "local memory traffic in SASS"


def _inspect_registers(config: str, tmp_path) -> dict:
    env = dict(os.environ)      # the suite's compile cache: the static gate compiles gemm_mma too
    env.pop("CUTE_DSL_ARCH", None)
    result = subprocess.run(
        [sys.executable, "-m", "kernelscope", "inspect", "gemm_mma", "--config", config, "--format", "json"],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    profile = doc["kernels"][0]["profile"]
    return {k: v["value"] for k, v in profile["metrics"].items()}


def test_inspect_shows_registers_per_wk_iters(tmp_path):
    # 128x256 tile, 8 warps: 128 fp32 accumulators per thread. One k-block of fragments ahead
    # fits with room to spare; all four k-blocks of a stage do not fit in 255 registers.
    one = _inspect_registers("wk_iters=1", tmp_path)
    four = _inspect_registers("wk_iters=4", tmp_path)
    assert one["launch__registers_per_thread"] < four["launch__registers_per_thread"] <= 255
    assert one["static__stack_frame_bytes"] == 0
    assert four["static__stack_frame_bytes"] > 0


def test_stages_follow_the_architecture_shared_memory():
    assert gemm_mma.resolve_config(gemm_mma.MmaGemmConfig(), "sm_90a").stages == 4
    assert gemm_mma.resolve_config(gemm_mma.MmaGemmConfig(), "sm_120a").stages == 2
    assert gemm_mma.resolve_config(gemm_mma.MmaGemmConfig(tile_n=128), "sm_120a").stages == 3
    with pytest.raises(ConfigRejected, match="shared memory"):
        gemm_mma.resolve_config(gemm_mma.MmaGemmConfig(stages=3), "sm_120a")


@pytest.mark.parametrize("regs,threads,smem,arch,blocks", [
    (233, 256, 198656, "sm_90a", 1),     # the default build: shared memory allows one
    (128, 256, 40000, "sm_90a", 2),      # registers: 256 threads x 128 = half the file
    (64, 128, 20000, "sm_90a", 8),       # 20 KB + 1 KB reserved: shared memory allows 10; registers 8
    (168, 288, 1000, "sm_90a", 1),       # 9 warps of 168 registers
    (146, 256, 99328, "sm_120a", 1),
    (32, 1024, 0, "sm_120a", 1),         # threads: 1536 per SM
])
def test_resident_blocks_per_sm(regs, threads, smem, arch, blocks):
    assert gemm_mma.resident_blocks_per_sm(regs, threads, smem, arch) == blocks


@pytest.mark.parametrize("shape, tile", [
    ((128, 4096, 4096), (64, 64)), ((512, 4096, 4096), (128, 64)), ((2048, 2048, 2048), (128, 128)),
    ((4096, 4096, 4096), (128, 256)), ((8192, 4096, 14336), (128, 256)), ((1, 8, 8), (64, 64)),
])
def test_per_shape_choice_is_the_largest_tile_that_fills_every_sm(shape, tile):
    M, N, K = shape
    spec_config = gemm_mma.GEMM_MMA_SPEC.config_for({"M": M, "N": N, "K": K}, "bfloat16")
    cfg = gemm_mma.MmaGemmConfig.from_mapping(gemm_mma.tuned_config({"M": M, "N": N, "K": K}, sms=132))
    assert (cfg.tile_m, cfg.tile_n) == tile
    assert (spec_config["tile_m"], spec_config["tile_n"]) == tile      # what run/profile launch
    # On a part with fewer SMs the same problem fills them with bigger tiles (64 of 128x256).
    if shape == (512, 4096, 4096):
        smaller_part = gemm_mma.MmaGemmConfig.from_mapping(gemm_mma.tuned_config({"M": M, "N": N, "K": K}, sms=64))
        assert (smaller_part.tile_m, smaller_part.tile_n) == (128, 256)


@pytest.mark.parametrize("fields", gemm_mma.SHAPE_CANDIDATES[1:], ids=lambda f: f"{f.get('tile_m', 128)}x{f['tile_n']}")
def test_smaller_candidates_fit_two_blocks_per_sm_without_local_memory(fields):
    """Their point is a second resident block (one's epilogue under the other's MMAs): read from
    each compiled kernel's own registers and shared memory."""
    res = gemm_mma.kernel_resources(gemm_mma.MmaGemmConfig.from_mapping(fields), "bfloat16", "n", "sm_90a")
    assert res["resident_blocks_per_sm"] == 2
    assert res["local_bytes"] == 0 and res["stack_bytes"] == 0


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2)])
def test_a_cluster_multicasts_the_shared_operand_and_syncs_the_cluster(cluster):
    """A 2-block cluster loads its share of the shared operand's box with the multicast form of
    the TMA load and the other operand whole; the ring's set-up is published to the cluster (a
    cluster barrier) and each block waits for its peers' releases before exit."""
    ck = gemm_mma.compile_gemm_mma({"cluster": list(cluster)}, {"M": 4096, "N": 4096, "K": 4096}, "bfloat16", "sm_90a")
    ops = opcodes_with_modifiers(ck.sass)
    plain = gemm_mma.compile_gemm_mma({}, {"M": 4096, "N": 4096, "K": 4096}, "bfloat16", "sm_90a")
    plain_ops = opcodes_with_modifiers(plain.sass)
    assert any(op.startswith("UTMALDG") and "MULTICAST" in op for op in ops)
    assert not any("MULTICAST" in op for op in plain_ops)
    assert "UCGABAR_ARV" in ops and "UCGABAR_WAIT" in ops
    assert "UCGABAR_ARV" not in plain_ops
    # As many TMA loads as the plain build: one A and one B box a stage, multicast or not.
    assert _count(ops, "UTMALDG") == _count(plain_ops, "UTMALDG")
    res = gemm_mma.kernel_resources(gemm_mma.MmaGemmConfig.from_mapping({"cluster": list(cluster)}), "bfloat16", "n", "sm_90a")
    assert res["local_bytes"] == 0 and res["stack_bytes"] == 0 and res["resident_blocks_per_sm"] == 1


def test_clusters_are_built_for_sm90a_only():
    with pytest.raises(ConfigRejected, match="sm_90a only"):
        gemm_mma.compile_gemm_mma({"cluster": [2, 1]}, {"M": 1024, "N": 1024, "K": 1024}, "bfloat16", "sm_120a")


def test_stream_k_moves_partial_sums_in_16_byte_accesses():
    """The stream-K exchange writes and reads a thread's 128 partial sums four at a time: 32
    STG.E.128 and 32 LDG.E.128 (one fp32 an access would be 128 of each, bound by their issue)."""
    ck = gemm_mma.compile_gemm_mma({"stream_k": True}, {"M": 4096, "N": 4096, "K": 4096}, "bfloat16", "sm_90a")
    ops = opcodes_with_modifiers(ck.sass)
    assert ops.count("STG.E.128") == 32 and ops.count("LDG.E.128") == 32
    # The epilogue's bf16 pairs stay 32-bit stores; no other global load than the counters' polls.
    assert not [op for op in ops if op.startswith("LDG") and op not in ("LDG.E.128", "LDG.E.STRONG.GPU")]


@pytest.mark.parametrize("shape,stream_k", [
    ((8192, 8192, 8192), True),      # 2048 tiles on 132 SMs: the last wave leaves 48 % idle
    ((8192, 4096, 4096), True),      # 24 % idle
    ((4096, 4096, 4096), False),     # 12 % idle: measured slower with stream-K
    ((8448, 8192, 4096), False),     # 2112 tiles, 16 whole waves: nothing to share
    ((2048, 2048, 2048), False),     # 128x128 tiles
])
def test_per_shape_choice_takes_stream_k_where_the_last_wave_leaves_a_fifth_idle(shape, stream_k):
    M, N, K = shape
    assert gemm_mma.tuned_config({"M": M, "N": N, "K": K}, sms=132).get("stream_k", False) is stream_k
