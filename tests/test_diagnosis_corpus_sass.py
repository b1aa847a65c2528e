"""The diagnosis corpus compiles for sm_90a, and each planted pair of corpus_set2.cuh carries
its defect in the SASS and nothing else: the slow kernel holds the defect's instructions (DFMA and
F2F, extra BAR, MEMBAR, 256 KB of code, per-lane LDC), the fast twin does not; the two load-imbalance
pairs differ only in which rows a block or warp takes, and only the slow shared-atomics kernel adds
to shared memory inside its element loop, and only the fast data-reuse kernel stages tiles in shared
memory. The pairs of sets 3 and 4 likewise (spills only in the slow kernels, HMMA only in the WMMA
GEMM, one kernel where only the grid or the data order differs, ...). No GPU: nvcc and cuobjdump only
(what they measure on one: benchmarks/diagnosis/README.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kernelscope.toolchain.sass import dump_sass, sass_opcodes
from kernelscope.toolchain.tools import which_cuda_tool

CORPUS = Path(__file__).resolve().parent.parent / "benchmarks" / "diagnosis"


@pytest.fixture(scope="module")
def listings(tmp_path_factory) -> dict[str, str]:
    nvcc = shutil.which("nvcc")
    if nvcc is None or which_cuda_tool("cuobjdump") is None:
        pytest.skip("nvcc or cuobjdump is not available")
    cubin = tmp_path_factory.mktemp("corpus") / "corpus.cubin"
    subprocess.run([nvcc, "-O3", "-arch=sm_90a", "-lineinfo", "-cubin", "-o", str(cubin), str(CORPUS / "corpus.cu")],
                   check=True, capture_output=True)
    return dump_sass(str(cubin))


@pytest.fixture(scope="module")
def sass(listings) -> dict[str, list[str]]:
    return {name: sass_opcodes(listing) for name, listing in listings.items()}


_SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")


def _lines_and_loops(listing: str) -> tuple[list[tuple[int, str]], list[tuple[int, int]]]:
    """(address, instruction) of each SASS line, and each loop as (a backward branch's target, the
    branch's address)."""
    lines = [(int(m.group(1), 16), m.group(2)) for m in _SASS_LINE.finditer(listing)]
    loops = []
    for address, text in lines:
        branch = re.search(r"\bBRA\s+(0x[0-9a-f]+)", text)
        if branch and int(branch.group(1), 16) < address:
            loops.append((int(branch.group(1), 16), address))
    return lines, loops


def _in_loops(listing: str, opcode: str) -> int:
    """Instructions starting with `opcode` inside a loop body: between a backward branch's target
    and the branch itself."""
    lines, loops = _lines_and_loops(listing)
    return sum(any(lo <= address <= hi for lo, hi in loops)
               for address, text in lines if re.sub(r"^@!?U?P\w+\s+", "", text).startswith(opcode))


def _bases(opcodes: list[str]) -> Counter:
    return Counter(op.split(".", 1)[0] for op in opcodes)


def _differs_only_in(slow: list[str], fast: list[str], allowed: set[str]) -> set[str]:
    """Base opcodes whose counts differ between the two kernels, outside `allowed`."""
    a, b = _bases(slow), _bases(fast)
    return {op for op in a.keys() | b.keys() if a[op] != b[op]} - allowed


def test_every_planted_pair_compiles_both_kernels(sass):
    source = (CORPUS / "corpus.cu").read_text() + (CORPUS / "corpus_set2.cuh").read_text()
    pairs = set(re.findall(r'pairs\.push_back\(\{"(\w+)"', source))
    assert {"fp64", "excess_sync", "memory_fences", "icache", "constant_cache", "block_size",
            "imbalance_sms", "imbalance_warps", "shared_atomics", "data_reuse"} <= pairs
    for pair in pairs:
        assert f"{pair}_slow" in sass and f"{pair}_fast" in sass, pair


def test_fp64_pair_promotes_to_double_only_in_the_slow_kernel(sass):
    slow, fast = sass["fp64_slow"], sass["fp64_fast"]
    assert {"F2F.F64.F32", "F2F.F32.F64"} <= set(slow)
    assert _bases(slow)["DFMA"] >= 16                       # one per step of the 16-fold unrolled body
    assert not {op for op in fast if op.startswith(("DFMA", "DADD", "DMUL", "F2F"))}
    assert _bases(fast)["FFMA"] >= 16


def test_excess_sync_pair_differs_only_by_barriers(sass):
    slow, fast = sass["excess_sync_slow"], sass["excess_sync_fast"]
    assert _bases(fast)["BAR"] == 2                          # the two each tile needs
    assert _bases(slow)["BAR"] == 2 + 16                      # and one per tap
    assert _differs_only_in(slow, fast, {"BAR"}) == set()


def test_memory_fence_pair_fences_only_in_the_slow_kernel(sass):
    slow, fast = sass["memory_fences_slow"], sass["memory_fences_fast"]
    assert "MEMBAR.SC.GPU" in slow
    assert not [op for op in fast if op.startswith("MEMBAR")]


def test_icache_pair_bloats_only_the_code(sass):
    slow, fast = sass["icache_slow"], sass["icache_fast"]
    assert _bases(slow)["FFMA"] == 16384 and _bases(fast)["FFMA"] == 64
    assert len(slow) * 16 >= 256 * 1024                       # 16-byte instructions: 256 KB of SASS
    assert len(fast) * 16 <= 4 * 1024


def test_constant_cache_pair_reads_the_table_from_constant_memory_only_in_the_slow_kernel(sass):
    slow, fast = _bases(sass["constant_cache_slow"]), _bases(sass["constant_cache_fast"])
    assert slow["LDC"] >= fast["LDC"] + 8                     # the 8-fold unrolled lookups
    assert slow["LDG"] == 1 and fast["LDG"] >= 1 + 8          # the input, plus the lookups in the fast one


def test_block_size_pair_is_one_kernel_launched_with_smaller_blocks(sass):
    assert sass["block_size_slow"] == sass["block_size_fast"]
    source = (CORPUS / "corpus_set2.cuh").read_text()
    assert "block_size_slow<<<n / 32, 32>>>" in source
    assert "block_size_fast<<<n / kThreads, kThreads>>>" in source


# Integer, address and control instructions: what a different assignment of rows to blocks or
# warps may change. Loads, adds, shuffles and stores may not.
INDEX_MATH = {"IMAD", "IADD3", "VIADD", "VIADDMNMX", "VIMNMX", "LEA", "LOP3", "SHF", "USHF", "ISETP", "SEL", "MOV",
              "S2R", "S2UR", "LDC", "ULDC", "NOP", "I2F", "F2I", "MUFU"}


@pytest.mark.parametrize("pair", ["imbalance_sms", "imbalance_warps"])
def test_imbalance_pairs_differ_only_in_which_rows_a_block_or_warp_takes(sass, pair):
    slow, fast = sass[f"{pair}_slow"], sass[f"{pair}_fast"]
    assert not _differs_only_in(slow, fast, INDEX_MATH)
    a, b = _bases(slow), _bases(fast)
    assert all(a[op] == b[op] > 0 for op in ("LDG", "FADD", "SHFL", "STG")), (a, b)
    # The only floating-point unit work besides the sums: the slow SM split's one division per block
    # (rows / blocks, at run time), which the cyclic split does not need.
    assert b["MUFU"] == 0 and a["MUFU"] <= 1


def test_shared_atomics_pair_adds_per_element_only_in_the_slow_kernel(sass, listings):
    slow, fast = sass["shared_atomics_slow"], sass["shared_atomics_fast"]
    # Weights, not increments: an add of 1 compiles to ATOMS.POPC.INC, which merges colliding lanes itself.
    assert not any("POPC" in op for op in slow + fast)
    # The slow kernel's one ATOMS.ADD sits in the element loop; the fast one adds its four register
    # sums after the loop's backward branch, with no shared atomic inside it.
    assert _in_loops(listings["shared_atomics_slow"], "ATOMS.ADD") == 1
    assert _in_loops(listings["shared_atomics_fast"], "ATOMS.ADD") == 0 and _bases(fast)["ATOMS"] == 4
    assert _in_loops(listings["shared_atomics_fast"], "LDG") == 1            # the element loop is there


def test_data_reuse_pair_stages_tiles_in_shared_memory_only_in_the_fast_kernel(sass):
    slow, fast = _bases(sass["data_reuse_slow"]), _bases(sass["data_reuse_fast"])
    assert slow["LDS"] == slow["STS"] == slow["BAR"] == 0 and slow["LDG"] >= 2 * slow["FFMA"] > 0
    assert fast["LDS"] > 0 and fast["STS"] == 2 and fast["BAR"] == 2 and fast["LDG"] == 2 and fast["FFMA"] == 32


def test_set3_and_set4_pairs_carry_their_defects_in_the_sass(sass):
    b = {name: _bases(ops) for name, ops in sass.items()}
    # One kernel each, launched on another grid or over other data.
    assert sass["tail_wave_slow"] == sass["tail_wave_fast"] and sass["trip_counts_slow"] == sass["trip_counts_fast"]
    assert sass["block_512_slow"] == sass["block_512_fast"]
    assert b["wmma_gemm_slow"]["HMMA"] == 0 < b["wmma_gemm_fast"]["HMMA"]
    assert b["wmma_gemm_fast"]["FFMA"] == 0 < b["wmma_gemm_slow"]["FFMA"]
    for pair in ("sort_rolled", "register_cap"):
        assert b[f"{pair}_slow"]["STL"] > 0 and b[f"{pair}_fast"]["STL"] == b[f"{pair}_fast"]["LDL"] == 0, pair
    # The Horner chains: rolled over the 4 points (one chain in the code) after the same 4 loads.
    assert 4 * b["horner_chains_slow"]["FFMA"] == b["horner_chains_fast"]["FFMA"]
    assert b["horner_chains_slow"]["LDG"] == b["horner_chains_fast"]["LDG"] == 4
    assert b["one_counter_slow"]["SHFL"] == 0 < b["one_counter_fast"]["SHFL"]
    assert b["transpose_store_slow"]["STS"] == 0 < b["transpose_store_fast"]["STS"]
    # The padding only moves addresses (and keeps ptxas from reading 4 words of a padded row at once).
    assert not _differs_only_in(sass["gemv_rows_slow"], sass["gemv_rows_fast"], INDEX_MATH | {"LDS", "ULEA", "UMOV"})
    assert all(b["gemv_rows_slow"][op] == b["gemv_rows_fast"][op] > 0 for op in ("LDG", "STS", "FFMA", "STG"))
    assert sum(b["softsign_fp64_slow"][op] for op in ("DMUL", "DADD", "DFMA")) > 0
    assert sum(b["softsign_fp64_fast"][op] for op in ("DMUL", "DADD", "DFMA", "F2F")) == 0
    assert b["modulo_ring_slow"]["LDG"] == b["modulo_ring_fast"]["LDG"] == 16
    assert b["reduce_syncs_slow"]["BAR"] > b["reduce_syncs_fast"]["BAR"]
    assert not _differs_only_in(sass["stride2_conflicts_slow"], sass["stride2_conflicts_fast"], INDEX_MATH)
    # Why the skewed histogram's planting failed: an add of 1 is ATOMS.POPC.INC, which merges the
    # lanes that hit one word itself; the "fast" kernel's MATCH.ANY had nothing to remove.
    assert "ATOMS.POPC.INC.32" in sass["hist_skewed_slow"] and b["hist_skewed_fast"]["MATCH"] > 0
    # Set 5: the block order and the skewed rounds change indices and conditions only; the prefetch
    # issues a second cp.async; the loop-invariant division is one reciprocal instead of 64 divisions.
    assert not _differs_only_in(sass["block_order_slow"], sass["block_order_fast"], INDEX_MATH | {"ULOP3"})
    assert b["rotating_skew_slow"]["BAR"] == b["rotating_skew_fast"]["BAR"] == 1
    assert b["rotating_skew_slow"]["FFMA"] == b["rotating_skew_fast"]["FFMA"] > 0
    assert b["tile_prefetch_slow"]["LDGSTS"] == 1 and b["tile_prefetch_fast"]["LDGSTS"] == 2
    assert b["loop_division_slow"]["MUFU"] > 2 * b["loop_division_fast"]["MUFU"]


def test_set6_pairs_carry_their_defects_in_the_sass(sass):
    b = {name: _bases(ops) for name, ops in sass.items()}
    # The pass order and the strided loads change indices only; the narrow kernel loads 2 bytes a lane.
    assert not _differs_only_in(sass["pass_order_slow"], sass["pass_order_fast"], INDEX_MATH | {"ULOP3", "UIADD3", "UMOV", "HFMA2"})  # HFMA2.MMA: a constant move
    assert not _differs_only_in(sass["stride2_loads_slow"], sass["stride2_loads_fast"], INDEX_MATH)
    assert "LDG.E.U16" in " ".join(sass["bf16_narrow_slow"]) and "LDG.E.128" in " ".join(sass["bf16_narrow_fast"])
    assert b["broadcast_reads_slow"]["LDS"] == b["broadcast_reads_fast"]["LDS"] > 0


def test_set7_pairs_carry_their_defects_in_the_sass(sass):
    b = {name: _bases(ops) for name, ops in sass.items()}
    # The static array changes only the shared memory a block declares, not the code.
    assert sass["static_smem_slow"] == sass["static_smem_fast"]
    assert b["fence_each_slow"]["MEMBAR"] == 8 and b["fence_each_fast"]["MEMBAR"] == 1
    assert b["cubic_lut_slow"]["LDS"] == 0 < b["cubic_lut_fast"]["LDS"]
    assert b["cubic_lut_slow"]["LDC"] > b["cubic_lut_fast"]["LDC"]


def test_set8_pairs_carry_their_defects_in_the_sass(sass, listings):
    b = {name: _bases(ops) for name, ops in sass.items()}
    # The hash streams: the fast loop advances four streams per step, the slow one one.
    assert _in_loops(listings["hash_chain_fast"], "IMAD") >= 3 * _in_loops(listings["hash_chain_slow"], "IMAD") > 0
    # The stencil: 33 loads from global memory per output, or from shared memory after two.
    assert b["stencil_global_slow"]["LDG"] == 33 and b["stencil_global_slow"]["LDS"] == 0
    assert b["stencil_global_fast"]["LDS"] == 33 and b["stencil_global_fast"]["LDG"] == 2
    # One kernel body, launched with two block shapes.
    assert sass["tiny_blocks_2d_slow"] == sass["tiny_blocks_2d_fast"]
    # The complex multiply-add: FMUL + FADD against FFMA, twice the FP32 instructions.
    assert b["complex_mac_slow"]["FFMA"] == 0 and b["complex_mac_fast"]["FMUL"] == 0
    assert b["complex_mac_slow"]["FMUL"] + b["complex_mac_slow"]["FADD"] == 2 * b["complex_mac_fast"]["FFMA"] > 0
    # 32 specialised copies of the 1024-step chain against one 64-step body; no local memory.
    assert b["variant_bloat_slow"]["FFMA"] >= 32 * 1024 and b["variant_bloat_slow"]["CALL"] == 32
    assert b["variant_bloat_fast"]["FFMA"] < 2 * 64
    assert not any(b[k][op] for k in ("variant_bloat_slow", "variant_bloat_fast") for op in ("LDL", "STL"))
    # Index division adds integer instructions only: one load and one store on both sides.
    slow, fast = b["same_index_div_slow"], b["same_index_div_fast"]
    assert slow["LDG"] == fast["LDG"] == 1 and slow["STG"] == fast["STG"] == 1
    assert slow["IMAD"] > fast["IMAD"] and sum(slow.values()) > sum(fast.values())


def test_set9_pairs_carry_their_defects_in_the_sass(sass, listings):
    b = {name: _bases(ops) for name, ops in sass.items()}
    # Aliasing: the same instructions, the loads interleaved with the stores or issued together.
    assert b["alias_prefix_slow"] == b["alias_prefix_fast"] and b["alias_prefix_slow"]["LDG"] == 16

    def memory_order(name):
        return "".join(op[0] for op in sass[name] if op.split(".", 1)[0] in ("LDG", "STG"))
    assert memory_order("alias_prefix_slow") == "LS" * 16
    assert memory_order("alias_prefix_fast").startswith("L" * 16)
    # The fast-math power: two MUFU per square; none on the fast side.
    assert b["pow_square_slow"]["MUFU"] == 32 and b["pow_square_fast"]["MUFU"] == 0
    # One interpreter body (a jump table over eight loops), launched over two orders of the data.
    assert sass["interpreter_slow"] == sass["interpreter_fast"] and b["interpreter_slow"]["BRX"] >= 1
    # The mask: 16 bytes per four elements against 4.
    assert "LDG.E.128" in " ".join(sass["float_mask_slow"]) and "LDG.E.128" in " ".join(sass["float_mask_fast"])
    assert sum(op.startswith("LDG.E.128") for op in sass["float_mask_slow"]) == 2
    assert sum(op.startswith("LDG.E.128") for op in sass["float_mask_fast"]) == 1
    # Precise expf adds arithmetic only: one load and one store on both sides.
    slow, fast = b["same_expf_slow"], b["same_expf_fast"]
    assert slow["LDG"] == fast["LDG"] == 1 and slow["STG"] == fast["STG"] == 1
    assert slow["MUFU"] == fast["MUFU"] == 4 and sum(slow.values()) > sum(fast.values())


def test_set10_pairs_carry_their_defects_in_the_sass(sass):
    b = {name: _bases(ops) for name, ops in sass.items()}
    # mma.sync of half the K against the full one, the same number per loop body.
    slow_mma = [op for op in sass["mma_half_k_slow"] if op.startswith("HMMA")]
    fast_mma = [op for op in sass["mma_half_k_fast"] if op.startswith("HMMA")]
    assert slow_mma and set(slow_mma) == {"HMMA.1688.F32"} and set(fast_mma) == {"HMMA.16816.F32"}
    # The table: local memory on the slow side only, shared memory on the fast side.
    assert b["local_table_slow"]["LDL"] > 0 and b["local_table_slow"]["STL"] > 0 and b["local_table_slow"]["LDS"] == 0
    assert b["local_table_fast"]["LDL"] == b["local_table_fast"]["STL"] == 0 and b["local_table_fast"]["LDS"] > 0
    # The gather and the block-size pair: one kernel body each, launched over other data or blocks.
    assert sass["gather_order_slow"] == sass["gather_order_fast"]
    assert sass["same_block_128_slow"] == sass["same_block_128_fast"]


def _highest_register(listing: str) -> int:
    """The highest general register an instruction names (registers a thread needs: about one more)."""
    return max(int(r) for r in re.findall(r"\bR(\d+)\b", " ".join(m.group(2) for m in _SASS_LINE.finditer(listing))))


def test_set11_pairs_carry_their_defects_in_the_sass(sass, listings):
    b = {name: _bases(ops) for name, ops in sass.items()}
    # The MLP: the same 80 FFMA and 16 FMNMX an element. The slow kernel holds its 96 weights in
    # registers (24 LDG.128 before the loop; R96 and above, so at most 2 blocks of 256 fit an SM's 64 K
    # registers), the fast one reads them from constant bank 3 and fits 8 blocks (at most 32 registers).
    slow, fast = b["mlp_registers_slow"], b["mlp_registers_fast"]
    assert slow["FFMA"] == fast["FFMA"] == 80 and slow["FMNMX"] == fast["FMNMX"] == 16
    assert sum(op.startswith("LDG.E.128") for op in sass["mlp_registers_slow"]) == 24 and fast["LDG"] == 1
    assert "c[0x3]" not in listings["mlp_registers_slow"] and listings["mlp_registers_fast"].count("c[0x3]") >= 40
    assert _highest_register(listings["mlp_registers_slow"]) >= 96 and _highest_register(listings["mlp_registers_fast"]) < 32
    # One block per row against a cluster of 4: the same unrolled float4 loops on both sides; only the
    # fast kernel meets its cluster (two cluster barriers) and reads the other blocks' sums (DSMEM loads).
    slow, fast = b["few_rows_slow"], b["few_rows_fast"]
    for op in ("LDG.E.128.CONSTANT", "STG.E.128"):
        assert sass["few_rows_slow"].count(op) == sass["few_rows_fast"].count(op) > 0, op
    assert slow["BAR"] == fast["BAR"] == 1 and slow["UCGABAR_ARV"] == slow["LD"] == 0
    assert fast["UCGABAR_ARV"] == fast["UCGABAR_WAIT"] == 2 and fast["LD"] == 4
    # Per-channel taps: 9 LDC at a per-lane offset on the slow side, 9 more LDG on the fast one.
    assert len(re.findall(r"LDC R\d+, c\[0x3\]\[R", listings["channel_taps_slow"])) == 9
    assert "c[0x3]" not in listings["channel_taps_fast"]
    assert b["channel_taps_slow"]["LDG"] == 9 and b["channel_taps_fast"]["LDG"] == 18
    assert b["channel_taps_slow"]["FFMA"] == b["channel_taps_fast"]["FFMA"] == 9
    # The double sum: a widening and a DADD per point of the 8-fold unrolled loop, one narrowing at the
    # end; the float sum is one FFMA per point and no FP64 at all.
    slow, fast = sass["double_sum_slow"], sass["double_sum_fast"]
    assert slow.count("F2F.F64.F32") == 8 and slow.count("F2F.F32.F64") == 1 and _bases(slow)["DADD"] == 8
    assert not [op for op in fast if op.startswith(("DADD", "DFMA", "DMUL", "F2F"))] and _bases(fast)["FFMA"] == 8
    # seq_cst against relaxed: a fence (and its L1 invalidations) before each of the 8 ATOMs, nothing else.
    slow, fast = sass["seq_cst_deposit_slow"], sass["seq_cst_deposit_fast"]
    assert slow.count("MEMBAR.SC.GPU") == 8 and not [op for op in fast if op.startswith(("MEMBAR", "CCTL"))]
    assert _bases(slow)["ATOM"] == _bases(fast)["ATOM"] == 8 and _bases(slow)["LDG"] == _bases(fast)["LDG"] == 3
    assert not _differs_only_in(slow, fast, INDEX_MATH | {"MEMBAR", "ERRBAR", "CGAERRBAR", "CCTL"})
    # The unused shared memory: one kernel, launched with 64 KB of dynamic shared memory or none.
    assert sass["same_smem_64k_slow"] == sass["same_smem_64k_fast"]
    source = (CORPUS / "corpus_set11.cuh").read_text()
    assert "same_smem_64k_slow<<<threads / kThreads, kThreads, kUnusedSmem>>>" in source
    assert "same_smem_64k_fast<<<threads / kThreads, kThreads>>>" in source and "kUnusedSmem = 64 * 1024" in source


def test_precise_expf_adds_exponent_shifts_not_index_math(listings):
    # The same_expf pair: expf's range reduction builds 2^n with SHF.L.U32 n, 0x17 -- integer
    # opcodes that the index-math share used to count (24-39 % of a noise gap claimed as index math).
    from kernelscope.toolchain.sass_idioms import FLOAT_EXPONENT, idiom_counts
    lines = {name: [m.group(2) for m in _SASS_LINE.finditer(listings[name])] for name in ("same_expf_slow", "same_expf_fast")}
    slow = idiom_counts((text, 1.0) for text in lines["same_expf_slow"])
    fast = idiom_counts((text, 1.0) for text in lines["same_expf_fast"])
    assert slow[FLOAT_EXPONENT] == 4 and fast[FLOAT_EXPONENT] == 0
    # What is left of the integer ops after the shifts is the same address math on both sides.
    integer = ("IMAD", "LEA", "IADD3", "SHF", "VIADD")
    left = {name: sum(t.split()[0].split(".")[0] in integer for t in texts) for name, texts in lines.items()}
    assert left["same_expf_slow"] - slow[FLOAT_EXPONENT] == left["same_expf_fast"]


def _barrier_free_loops_with(listing: str, opcode: str) -> int:
    """Loops (a backward branch and its target) that hold `opcode` but no block barrier: work one
    warp repeats between two barriers."""
    lines, loops = _lines_and_loops(listing)
    body = lambda lo, hi: [re.sub(r"^@!?U?P\w+\s+", "", t) for a, t in lines if lo <= a <= hi]
    return sum(any(t.startswith(opcode) for t in body(lo, hi)) and not any(t.startswith("BAR") for t in body(lo, hi))
               for lo, hi in loops)


def test_set12_pairs_carry_their_defects_in_the_sass(sass, listings):
    b = {name: _bases(ops) for name, ops in sass.items()}
    source = (CORPUS / "corpus_set12.cuh").read_text()
    # Causal tiles: the same tile loop on both sides (16 queries and 8 keys loaded, 256 FFMA and 128
    # FMUL a key tile); only the tile index differs: 2b and 2b + 1 on the slow side, b and T - 1 - b
    # on the fast one.
    slow, fast = b["causal_tiles_slow"], b["causal_tiles_fast"]
    assert slow["FFMA"] == fast["FFMA"] == 256 and slow["FMUL"] == fast["FMUL"] == 128
    assert slow["LDG"] == fast["LDG"] == 24 and slow["STG"] == fast["STG"] == 16
    assert not _differs_only_in(sass["causal_tiles_slow"], sass["causal_tiles_fast"],
                                INDEX_MATH | {"UISETP", "USEL", "ULEA", "ULOP3", "ULDC", "NOP"})
    slow_body = source.split("causal_tiles_slow(", 1)[1].split("\n}\n", 1)[0]
    fast_body = source.split("causal_tiles_fast(", 1)[1].split("\n}\n", 1)[0]
    assert "2 * blockIdx.x + half" in slow_body and "last - blockIdx.x" not in slow_body
    assert "half ? last - blockIdx.x : blockIdx.x" in fast_body
    # One warp keeps the books: two barriers a row on both sides; only the slow kernel repeats the
    # segment's shuffle reduction in a loop of one warp between them (its fallback for a divergent
    # warp aside: BRA.DIV, WARPSYNC, never taken since the branch is per warp).
    slow, fast = b["bookkeeping_warp_slow"], b["bookkeeping_warp_fast"]
    assert slow["BAR"] == fast["BAR"] == 2 and fast["SHFL"] == 5 and slow["SHFL"] >= 5
    assert _barrier_free_loops_with(listings["bookkeeping_warp_slow"], "SHFL") == 1
    assert _barrier_free_loops_with(listings["bookkeeping_warp_fast"], "SHFL") == 0
    # Batched 64x64 products: the same staging (LDG and STS) on both sides; FFMA on converted halves
    # (HADD2.F32) in the slow kernel, HMMA from LDSM-loaded fragments in the fast one.
    slow, fast = b["batched_64x64_slow"], b["batched_64x64_fast"]
    assert slow["LDG"] == fast["LDG"] and slow["STS"] == fast["STS"] > 0
    assert slow["HMMA"] == 0 and slow["FFMA"] == 64 and sum(op.startswith("HADD2.F32") for op in sass["batched_64x64_slow"]) >= 16
    assert fast["HMMA"] == 16 and fast["FFMA"] == 0 and fast["LDSM"] > 0
    # The DRAM stream: one kernel, launched with 2 or 8 blocks per SM.
    assert sass["same_stream_blocks_slow"] == sass["same_stream_blocks_fast"]
    assert b["same_stream_blocks_slow"]["LDG"] == 8
    assert "same_stream_blocks_slow<<<g_sms * 2, kThreads>>>" in source
    assert "same_stream_blocks_fast<<<g_sms * 8, kThreads>>>" in source


def test_set13_pairs_carry_their_defects_in_the_sass(sass, listings):
    b = {name: _bases(ops) for name, ops in sass.items()}
    source = (CORPUS / "corpus_set13.cuh").read_text()
    # LayerNorm: one kernel, which stages its row in dynamic shared memory (STS.128, read back by LDS.128
    # for the variance and the normalisation) between two block sums (4 barriers); launched with a buffer
    # for the widest supported row (32,768 floats, 128 KB: one block per SM) or for the row at hand.
    assert sass["layernorm_smem_slow"] == sass["layernorm_smem_fast"]
    assert b["layernorm_smem_slow"]["BAR"] == 4 and b["layernorm_smem_slow"]["SHFL"] == 10
    assert "STS.128" in sass["layernorm_smem_slow"] and sass["layernorm_smem_slow"].count("LDS.128") >= 2
    assert "layernorm_smem_slow<<<rows, kThreads, kLnMaxCols * sizeof(float)>>>" in source
    assert "layernorm_smem_fast<<<rows, kThreads, cols * sizeof(float)>>>" in source
    assert "kLnCols = 1024, kLnMaxCols = 32768" in source
    # The router softmax: one kernel (a warp a token, found from block and warp index), launched as one
    # warp a block or 8 warps a block.
    assert sass["router_softmax_slow"] == sass["router_softmax_fast"]
    assert b["router_softmax_slow"]["SHFL"] == 10 and sass["router_softmax_slow"].count("MUFU.EX2") == 2
    assert sass["router_softmax_slow"].count("LDG.E.64.CONSTANT") == 1 and sass["router_softmax_slow"].count("STG.E.64") == 1
    assert "router_softmax_slow<<<rows, 32>>>" in source and "router_softmax_fast<<<rows / 8, kThreads>>>" in source
    # The Coulomb potential: the same LDS.128 and distance arithmetic (4 tiles x 4 unrolled pairs); the
    # slow kernel's IEEE square root and division add a MUFU.RCP, an FCHK and two slow-path calls a pair,
    # the fast one's rsqrtf is one MUFU.RSQ a pair and nothing else on the XU.
    slow, fast = sass["coulomb_rsqrt_slow"], sass["coulomb_rsqrt_fast"]
    assert slow.count("LDS.128") == fast.count("LDS.128") == 16 and b["coulomb_rsqrt_slow"]["LDG"] == b["coulomb_rsqrt_fast"]["LDG"]
    assert fast.count("MUFU.RSQ") == 16 and b["coulomb_rsqrt_fast"]["MUFU"] == 16
    assert not [op for op in fast if op.startswith(("MUFU.RCP", "FCHK", "CALL"))]
    assert slow.count("MUFU.RSQ") >= 16 and slow.count("MUFU.RCP") >= 16 and b["coulomb_rsqrt_slow"]["FCHK"] == 16
    assert b["coulomb_rsqrt_slow"]["CALL"] == 32
    assert len(slow) > 2 * len(fast)
    # The raking scan: the same instructions (scalar LDS and STS on both sides: no LDS.128 in the raking
    # pass, which would split a conflict over quarter warps); only the tile's layout differs: thread t's
    # raking items at byte 128 t (a shift by 7: all lanes in one bank) or 132 t (an IMAD by 0x84).
    slow, fast = b["raking_scan_slow"], b["raking_scan_fast"]
    assert not _differs_only_in(sass["raking_scan_slow"], sass["raking_scan_fast"], INDEX_MATH)
    for op in ("LDG", "STG", "FADD", "SHFL", "BAR"):
        assert slow[op] == fast[op] > 0, op
    for op in ("LDS", "STS"):  # 32 striped and 32 raking accesses a thread, plus the prefixes
        assert sass["raking_scan_slow"].count(op) == sass["raking_scan_fast"].count(op) >= 64, op
    assert re.search(r"LEA R\d+, R\d+, R\d+, 0x7 ;", listings["raking_scan_slow"])
    assert not re.search(r"IMAD R\d+, R\d+, 0x84,", listings["raking_scan_slow"])
    assert re.search(r"IMAD R\d+, R\d+, 0x84, R\d+ ;", listings["raking_scan_fast"])
    # The k-NN mean: 8 index loads of 8 bytes (int64) or 4 bytes (int32), then the same 8 gathers, 40
    # shuffles, adds and 8 stores.
    slow, fast = sass["knn_int64_slow"], sass["knn_int64_fast"]
    assert slow.count("LDG.E.64.CONSTANT") == 8 and slow.count("LDG.E.CONSTANT") == 8
    assert "LDG.E.64.CONSTANT" not in fast and fast.count("LDG.E.CONSTANT") == 16
    for op in ("SHFL", "FADD", "FMUL", "STG"):
        assert b["knn_int64_slow"][op] == b["knn_int64_fast"][op] > 0, op
    # The transpose (the same time): the same memory instructions; the swizzle adds integer ops only.
    slow, fast = b["same_swizzle_pad_slow"], b["same_swizzle_pad_fast"]
    for op in ("LDG", "STS", "LDS", "STG", "BAR"):
        assert slow[op] == fast[op] > 0, op
    assert slow["LOP3"] >= 4 and fast["LOP3"] == 0
    assert not _differs_only_in(sass["same_swizzle_pad_slow"], sass["same_swizzle_pad_fast"], INDEX_MATH | {"ULEA", "UMOV"})


def test_set14_pairs_carry_their_defects_in_the_sass(sass, listings):
    b = {name: _bases(ops) for name, ops in sass.items()}
    source = (CORPUS / "corpus_set14.cuh").read_text()
    # The rod: one body, declared with clusters of 4 or of 2 (the same cluster barriers and
    # distributed shared-memory reads either way).
    assert sass["rod_cluster4_slow"] == sass["rod_cluster4_fast"] and b["rod_cluster4_slow"]["UCGABAR_WAIT"] == 3
    assert re.search(r"__cluster_dims__\(4, 1, 1\)[^\n]*\n?[^\n]*rod_cluster4_slow", source)
    assert re.search(r"__cluster_dims__\(2, 1, 1\)[^\n]*\n?[^\n]*rod_cluster4_fast", source)
    # The NF4 codebook: 8 constant loads indexed by a register in the slow kernel; the fast one reads
    # the table from shared memory (8 LDS after one barrier) and indexes no constant bank.
    indexed_constant = re.compile(r"LDC(\.\w+)* R\d+, c\[0x3\]\[R")
    assert len(indexed_constant.findall(listings["nf4_codebook_slow"])) == 8
    assert not indexed_constant.search(listings["nf4_codebook_fast"]) and b["nf4_codebook_fast"]["LDS"] == 8
    assert b["nf4_codebook_slow"]["FMUL"] == b["nf4_codebook_fast"]["FMUL"] == 8
    # The sorted scatter: one global atomic a thread in both; the fast kernel sums each run of equal
    # destinations over the warp first (shuffles) and only a run's last lane adds.
    assert b["scatter_sorted_slow"]["REDG"] == b["scatter_sorted_fast"]["REDG"] == 1
    assert b["scatter_sorted_slow"]["SHFL"] == 0 and b["scatter_sorted_fast"]["SHFL"] >= 5
    # The fused ops: the same eight ops, their element loops unrolled 12 times (12x the code and the
    # FFMAs listed) or rolled.
    assert b["fused_ops_unroll_slow"]["FFMA"] == 12 * b["fused_ops_unroll_fast"]["FFMA"] > 0
    assert len(sass["fused_ops_unroll_slow"]) > 8 * len(sass["fused_ops_unroll_fast"])
    # The SpMV: the same kernel; only the table of rows each block takes differs.
    assert sass["spmv_degree_split_slow"] == sass["spmv_degree_split_fast"]
    # The row sums (the same time): a shared-memory tree with a barrier a step against shuffles.
    assert b["same_tree_shuffle_slow"]["BAR"] == 9 and b["same_tree_shuffle_fast"]["BAR"] == 1
    assert b["same_tree_shuffle_slow"]["SHFL"] == 0 and b["same_tree_shuffle_fast"]["SHFL"] == 5
    assert b["same_tree_shuffle_slow"]["LDG"] == b["same_tree_shuffle_fast"]["LDG"] == 16


def test_set15_pairs_carry_their_defects_in_the_sass(sass, listings):
    from kernelscope.profiler.report_sass import sass_facts
    from kernelscope.toolchain.sass import sass_instruction_texts
    b = {name: _bases(ops) for name, ops in sass.items()}

    def fact(kernel, name):
        metric = sass_facts(sass_instruction_texts(listings[kernel])).get(name)
        return None if metric is None else metric.value
    # Planar indexing over interleaved pixels: the same load, FFMA and store; only the address math differs.
    assert not _differs_only_in(sass["rgba_planar_slow"], sass["rgba_planar_fast"], {"SHF", "IMAD", "LOP3", "PRMT", "IADD3", "NOP"})
    assert b["rgba_planar_slow"]["LDG"] == b["rgba_planar_fast"]["LDG"]
    # The cp.async pipeline: the slow kernel drains every group at its wait, the fast one leaves one in flight.
    assert (fact("kv_pipeline_slow", "static__async_copy_groups_in_flight"),
            fact("kv_pipeline_fast", "static__async_copy_groups_in_flight")) == (0, 1)
    # Pair forces: the same six 64-bit reductions; the fast kernel sums the warp's lanes first (shuffles).
    assert b["lj_newton3_slow"]["REDG"] == b["lj_newton3_fast"]["REDG"] == 6
    assert b["lj_newton3_slow"]["SHFL"] == 0 and b["lj_newton3_fast"]["SHFL"] == 30
    # The pricer and the shading stage: one kernel each; only the launch or the data order differs.
    assert sass["mc_fixed_grid_slow"] == sass["mc_fixed_grid_fast"]
    assert sass["material_sort_slow"] == sass["material_sort_fast"]
    # The T-table: the same shared loads and logic (within two instructions); only the table's layout differs.
    assert b["aes_ttable_slow"]["LDS"] == b["aes_ttable_fast"]["LDS"]
    assert abs(len(sass["aes_ttable_slow"]) - len(sass["aes_ttable_fast"])) <= 2
    # The oscillators: the same FFMA and FMUL per oscillator step, in one chain or four interleaved.
    assert b["duffing_chains_slow"]["FFMA"] * b["duffing_chains_fast"]["FMUL"] == b["duffing_chains_fast"]["FFMA"] * b["duffing_chains_slow"]["FMUL"]
    # The norms (the same time): double sums where the fast kernel adds floats, the same loads.
    assert b["same_double_norm_slow"]["DADD"] == 4 and b["same_double_norm_fast"]["DADD"] == 0
    assert b["same_double_norm_slow"]["LDG"] == b["same_double_norm_fast"]["LDG"] == 4


def test_the_recorded_basic_set_facts_are_the_corpus_code(listings):
    # reports/planted-basic-sass.json.xz carries facts the reader learned after it was recorded (MUFU, FCHK,
    # IMAD.HI, HMMA shapes), taken from this compile (benchmarks/diagnosis/compiled_sass_facts.py): every
    # fact the report read itself still equals the compile's, for all its kernels, and nothing is left to add.
    import sys
    sys.path.insert(0, str(CORPUS))
    from compiled_sass_facts import listing_facts, merge_facts, read_document
    doc = read_document(CORPUS / "reports" / "planted-basic-sass.json.xz")
    checked, added, mismatches = merge_facts(doc, listing_facts(listings))
    assert checked == 170 and not mismatches and not added, (mismatches[:5], added)
