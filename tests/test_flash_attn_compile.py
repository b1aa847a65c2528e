"""Compile-only checks of flash_attn (no GPU needed): variants covering every value of every
config knob, head dim, causal flag and dtype build for sm_90a; their SASS has WGMMA (P V with A
from registers), TMA loads and stores, register reallocation, and no local memory; the register
layout facts the softmax relies on hold (and a broken layout is caught); bad configs and shapes
are refused with a reason; the references agree on the CPU.

KERNELSCOPE_ALL_VARIANTS=1 compiles every claimed variant (112, about 25 minutes on 2 cores)."""

import itertools
import os
import re

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from gemm_testing import assert_no_stack_or_local_memory, opcodes  # noqa: E402
from kernelscope.kernels import flash_attn as fa  # noqa: E402
from kernelscope.kernels.sm90.barriers import AttentionBarrier  # noqa: E402
from kernelscope.kernels.spec import ConfigRejected  # noqa: E402
from kernelscope.toolchain.sass_loops import find_loops, innermost  # noqa: E402

_HGMMA = re.compile(r"HGMMA\.\S+\s+(R\d+),\s*(\S+?),")

# Each knob takes each of its values at least once, with both head dims, causal or not, both dtypes.
VARIANTS = [
    ({}, 128, 0, "bfloat16"),
    ({}, 128, 1, "bfloat16"),                     # serialized before P was converted by asm
    ({"num_stages": 3, "pingpong": False}, 64, 1, "float16"),
    ({"intra_wg_overlap": False}, 128, 1, "bfloat16"),
    ({"intra_wg_overlap": False, "pingpong": False, "num_stages": 3}, 64, 0, "bfloat16"),
    ({"num_stages": 3, "o_reuses_q": True}, 128, 1, "bfloat16"),   # O staged in Q's buffer
    ({"qk_mn": (192, 128)}, 64, 0, "bfloat16"),                      # three math warpgroups
    ({"qk_mn": (128, 160), "wg_epilogue": True}, 128, 0, "bfloat16"),  # an epilogue per warpgroup
]


def _all_variants():
    out = []
    for stages, overlap, pingpong, reuse, D, causal, dtype in itertools.product(
            (2, 3), (True, False), (True, False), (False, True), fa.HEAD_DIMS, (0, 1), fa.DTYPES):
        cfg = {"num_stages": stages, "intra_wg_overlap": overlap, "pingpong": pingpong, "o_reuses_q": reuse}
        try:
            fa.validate(fa.FlashAttnConfig.from_mapping(cfg), D)
        except ConfigRejected:
            continue
        out.append((cfg, D, causal, dtype))
    return out


def wgmma_serialized(sass: str) -> bool:
    """ptxas serializes the WGMMAs of a kernel it cannot fit in registers (warning C7512): a
    wait for the previous WGMMA group (WARPGROUP.DEPBAR) then sits before every HGMMA, instead
    of one per commit group."""
    return sass.count("WARPGROUP.DEPBAR") >= sass.count("HGMMA")


def _check_variant(config, D, causal, dtype):
    shape = {"B": 2, "H": 3, "S": 1000, "D": D, "causal": causal}
    ck = fa.compile_flash_attn(config, shape, dtype)
    assert ck.cubin and ck.sass, "compile produced no cubin / SASS"
    ops = opcodes(ck.sass)
    missing = [op for op in ("HGMMA", "UTMALDG", "UTMASTG", "STSM", "SHFL", "MUFU", "USETMAXREG")
               if op not in ops]
    assert not missing, f"SASS lacks {missing}"
    assert not ops & {"LDL", "STL"}, "local memory traffic in SASS"
    assert set(fa.FLASH_ATTN_SPEC.expected_sass) <= ops
    # Q K^T takes A (Q) from shared memory, P V from registers: both kinds of A operand appear.
    a_operands = [a for _, a in _HGMMA.findall(ck.sass)]
    assert any(a.startswith("R") for a in a_operands), "no HGMMA with A in registers (P V)"
    assert any(not a.startswith("R") for a in a_operands), "no HGMMA with A in shared memory (Q K^T)"
    assert_no_stack_or_local_memory(ck.cubin)
    # ptxas keeps the WGMMAs asynchronous in every variant (no C7512 serialization): one wait
    # per commit group, not one per HGMMA.
    assert not wgmma_serialized(ck.sass), "ptxas serialized the WGMMAs (C7512)"


@pytest.mark.parametrize("config,D,causal,dtype", VARIANTS)
def test_variant_compiles_with_expected_sass(config, D, causal, dtype):
    _check_variant(config, D, causal, dtype)


@pytest.mark.skipif(os.environ.get("KERNELSCOPE_ALL_VARIANTS") != "1",
                    reason="set KERNELSCOPE_ALL_VARIANTS=1 to compile every claimed variant")
def test_every_claimed_variant_compiles():
    variants = _all_variants()
    assert len(variants) == 112
    for v in variants:
        _check_variant(*v)


def test_fragment_checks_hold_for_the_kernel_mmas():
    """S rows live in one quad of one warp, O rows match S rows per thread, P's registers are
    S's in order: check_fragments ran on the tiled MMAs while each kernel was built (a violation
    stops the build); here, the row maps it returned for both head dims."""
    for config, D, causal, dtype in VARIANTS[:2]:
        # The artifacts are built on first use: ask for them, so the variant is traced (or was).
        assert fa.compile_flash_attn(config, {"B": 2, "H": 3, "S": 1000, "D": D, "causal": causal}, dtype).sass
        s_half, o_half, s_cols = fa.FRAGMENT_ROW_MAPS[(16, D, 128)]
        assert len(s_half) == 64 and len(o_half) == D // 2
        assert s_half.count(0) == 32 and o_half.count(0) == D // 4
        # The accumulator layout alternates rows every two values: (r, r, r + 8, r + 8, ...),
        # and steps 8 columns every four values; each row sees each of its 32 columns once.
        assert s_half[:4] == (0, 0, 1, 1) and o_half[:4] == (0, 0, 1, 1)
        assert s_cols[:8] == (0, 1, 0, 1, 8, 9, 8, 9)
        for h in (0, 1):
            assert sorted(c for c, r in zip(s_cols, s_half) if r == h) == sorted(
                8 * j + k for j in range(16) for k in (0, 1))


def test_fragment_check_catches_a_row_split_across_warps():
    # A made-up layout: thread t holds rows t % 64 and t % 64 + 8 ... but rows are shared by
    # threads 32 apart, i.e. by two warps.
    def tv(tv_pair):
        t, v = tv_pair
        row = (t % 32) // 4 + 16 * (t // 64) + 8 * ((v // 2) % 2)
        col = 2 * (t % 4) + v % 2 + 8 * (v // 4) + 64 * ((t // 32) % 2)
        return row + 128 * col

    with pytest.raises(AssertionError):
        fa.check_fragments(tv, tv, tv, 256, 128, 16, 16, 8, 16)


@pytest.mark.parametrize("config,D,why", [
    ({"qk_mn": (64, 128)}, 128, "qk_mn[0]"),
    ({"qk_mn": (128, 200)}, 64, "multiple of 16"),
    ({"qk_mn": (128, 256)}, 128, "registers"),
    ({"num_stages": 3, "qk_mn": (128, 176), "o_reuses_q": True}, 128, "shared memory"),
    ({"num_stages": 4}, 128, "num_stages"),
    ({"cluster_size_m": 4}, 128, "cluster_size_m"),
    ({"cluster_size_m": 2}, 128, "dynamic_schedule=false"),
    ({"num_stages": 3}, 128, "o_reuses_q=true saves it"),
    ({}, 96, "head dim"),
    ({"pingpong": 2}, 128, "true or false"),
])
def test_bad_configs_are_refused(config, D, why):
    with pytest.raises(ConfigRejected) as e:
        fa.compile_flash_attn(config, {"B": 1, "H": 1, "S": 128, "D": D}, "bfloat16")
    if why:
        assert why in str(e.value)
    assert "\n" not in str(e.value)


def test_cluster_pair_limits():
    pair = fa.FlashAttnConfig(cluster_size_m=2, dynamic_schedule=False)
    fa.validate(pair, 128, causal=False)
    with pytest.raises(ConfigRejected, match="non-causal"):
        fa.validate(pair, 128, causal=True)


def test_tail_plan_cuts_only_a_partial_last_wave():
    # Whole waves, the knob off, one key block or parts that gain nothing: no split.
    assert fa.tail_plan(1980, 132, 64, 8) == (1980, 0)
    assert fa.tail_plan(688, 132, 64, 1) == (688, 0)
    assert fa.tail_plan(688, 132, 1, 8) == (688, 0)
    assert fa.tail_plan(131, 132, 64, 2) == (131, 0)
    # Fewer tiles than SMs: every tile split (2 parts each; ranges across tiles would cut a tile
    # into 3 pieces, more than max_parts).
    assert fa.tail_plan(48, 132, 7, 2) == (0, 96)
    # The kernel's range arithmetic is 32-bit: (ranges + 1) x the tail's key blocks must fit (S of
    # ~19 M keys at 131 tiles); past that, no split.
    assert fa.tail_plan(131, 132, 120_000, 8) == (0, 132)
    assert fa.tail_plan(131, 132, 130_000, 8) == (131, 0)


def test_tail_plan_prices_each_round_of_parts():
    overhead = fa.part_overhead_blocks(128, 160, 128)
    assert overhead == 7.0
    assert fa.part_overhead_blocks(192, 128, 64) > overhead      # smaller blocks: more of them
    # Equal parts per tile only (the v10 plan): 68 tiles of 103 key blocks: 7 parts take 4
    # rounds, 3 parts 2; with what a round costs beyond its keys, 3 parts end first
    # (2 x (1/3 + 7/103) against 4 x (1/7 + 7/103)): 204 ranges.
    assert fa.tail_plan(2048, 132, 103, 8, overhead, cross_tiles=False) == (1980, 3 * 68)
    # One round either way: as many parts as allowed, as without the overhead.
    assert fa.tail_plan(4096, 132, 52, 8, overhead, cross_tiles=False) == (4092, 8 * 4)
    assert fa.tail_plan(688, 132, 64, 8, fa.part_overhead_blocks(192, 128, 64), False) == (660, 4 * 28)
    # Tiles of few key blocks: a round of parts costs more than the whole tile.
    assert fa.tail_plan(48, 132, 8, 2, fa.part_overhead_blocks(128, 128, 128)) == (48, 0)
    assert fa.tail_plan(64, 132, 32, 2, fa.part_overhead_blocks(128, 128, 128)) == (0, 2 * 64)


def test_tail_plan_crosses_tiles_where_one_round_ends_sooner():
    overhead = fa.part_overhead_blocks(128, 160, 128)
    # 68 tiles of 103 key blocks in 132 ranges of 53-54 blocks: a range that crosses a tile
    # boundary is two pieces, so the round ends after 54 + 2 x 7 = 68 blocks, against 82.7 for
    # two rounds of 3 parts.
    assert fa.tail_plan(2048, 132, 103, 8, overhead) == (1980, 132)
    # Few tiles of few blocks: ranges of 1-2 blocks would pay two overheads; equal parts stay.
    assert fa.tail_plan(4096, 132, 52, 8, overhead) == (4092, 32)
    assert fa.tail_plan(688, 132, 64, 8, fa.part_overhead_blocks(192, 128, 64)) == (660, 112)
    # Without overheads the plan takes the most even round: 1792 blocks in ranges of 14.
    assert fa.tail_plan(688, 132, 64, 8) == (660, 128)


@pytest.mark.parametrize("tail_tiles,key_blocks", [(1, 1), (1, 9), (3, 4), (7, 13), (12, 5), (28, 64)])
def test_tail_pieces_cover_every_key_block_once(tail_tiles, key_blocks):
    """The kernel's range arithmetic (tail_pieces is its host mirror): every key block in one
    piece, one reducer per tile holding its last block, its writers the first pieces of the
    ranges just before its own, and the reducer after them in work order."""
    for ranges in range(tail_tiles, min(140, tail_tiles * key_blocks) + 1):
        pieces = fa.tail_pieces(tail_tiles, key_blocks, ranges)
        seen = [[0] * key_blocks for _ in range(tail_tiles)]
        for p in pieces:
            assert p.blocks >= 1
            for b in range(p.first_block, p.first_block + p.blocks):
                seen[p.tile][b] += 1
        assert all(n == 1 for row in seen for n in row), ranges
        assert {p.range for p in pieces} == set(range(ranges))
        for t in range(tail_tiles):
            mine = [p for p in pieces if p.tile == t]
            [reducer] = [p for p in mine if p.reducer]
            assert reducer.first_block + reducer.blocks == key_blocks
            writers = [p for p in mine if not p.reducer]
            assert all(w.piece == 0 for w in writers)
            assert sorted(w.range for w in writers) == list(range(reducer.first_writer, reducer.range))
            assert all(2 * w.range + w.piece < 2 * reducer.range + reducer.piece for w in writers)


def test_tail_split_limits():
    with pytest.raises(ConfigRejected, match="non-causal"):
        fa.validate(fa.FlashAttnConfig(tail_parts=8), 128, causal=True)
    with pytest.raises(ConfigRejected, match="cannot be combined with cluster_size_m=2"):
        fa.validate(fa.FlashAttnConfig(tail_parts=8, o_reuses_q=True, num_stages=3), 128, causal=False)
    with pytest.raises(ConfigRejected, match="0..16"):
        fa.validate(fa.FlashAttnConfig(tail_parts=17), 128, causal=False)
    assert fa.tuned_config({"B": 2, "H": 8, "S": 8192, "D": 64, "causal": 0})["tail_parts"] == 8
    assert "tail_parts" not in fa.tuned_config({"B": 4, "H": 16, "S": 8192, "D": 128, "causal": 1})


def test_three_math_warpgroups_limits():
    with pytest.raises(ConfigRejected, match="square tiles"):
        fa.validate(fa.FlashAttnConfig(qk_mn=(192, 128)), 64, causal=True)
    with pytest.raises(ConfigRejected, match="160 registers each"):
        fa.validate(fa.FlashAttnConfig(qk_mn=(192, 128)), 128, causal=False)
    with pytest.raises(ConfigRejected, match="128 or 192"):
        fa.validate(fa.FlashAttnConfig(qk_mn=(256, 128)), 64, causal=False)
    assert fa.math_warpgroups(fa.FlashAttnConfig(qk_mn=(192, 128))) == 3


_TURN_BAR = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?BAR\.(SYNC\.DEFER_BLOCKING|ARV)\s+(\w+), 0x100 ;",
                       re.MULTILINE)


@pytest.mark.parametrize("qk_mn,D", [((128, 128), 128), ((192, 128), 64)])
def test_turn_barriers_take_the_warpgroup_index_at_run_time(qk_mn, D):
    """The math warpgroups' turns (256-thread named barriers) are one bar.sync and one bar.arrive
    on a barrier id held in a register, never predicated copies per warpgroup: those are issued
    even when predicated off (2.3x fa4's BARs at D=64; kernels/sm90/pingpong.py)."""
    ck = fa.compile_flash_attn({"qk_mn": qk_mn}, {"B": 2, "H": 3, "S": 1000, "D": D, "causal": 0})
    bars = _TURN_BAR.findall(ck.sass)
    by_register = [(kind, bar_id) for pred, kind, bar_id in bars if re.fullmatch(r"R\d+", bar_id)]
    constant = [(kind, int(bar_id, 16)) for _, kind, bar_id in bars if not re.fullmatch(r"R\d+", bar_id)]
    turn_ids = {int(AttentionBarrier.TURN_WG0) + w for w in range(fa.math_warpgroups(fa.FlashAttnConfig(qk_mn=qk_mn)))}
    # The one constant turn barrier: warpgroup 0's first turn, given once before the loops.
    assert [c for c in constant if c[1] in turn_ids] == [("ARV", int(AttentionBarrier.TURN_WG0))], constant
    # A tile's first Q K^T (first_block_turn), the key-block loop and a tile's last P V each wait
    # for the turn and hand it over.
    assert sorted(kind for kind, _ in by_register) == ["ARV"] * 3 + ["SYNC.DEFER_BLOCKING"] * 3, bars
    # The key-block loop (the innermost loop with WGMMAs): its two turn barriers and nothing else.
    (key_block,) = [loop for loop in innermost(find_loops(ck.sass)) if loop.opcodes.get("HGMMA")]
    wgmmas = (qk_mn[1] // 16) + (D // 16)       # P V's k-blocks, then Q K^T's
    assert key_block.opcodes["HGMMA"] == wgmmas and key_block.opcodes["BAR"] == 2, key_block.to_dict()


_ATOMIC = re.compile(r"\bATOMG\.E\.(ADD|EXCH)\b")


@pytest.mark.parametrize("config,D,causal", [({}, 128, 1), ({"qk_mn": (192, 128)}, 64, 0), ({}, 64, 0)])
def test_the_work_queue_costs_one_atomic_per_tile_and_the_fixed_stride_none(config, D, causal):
    """With dynamic_schedule (the default) the producer claims each next tile with one atomic
    add; at its end one more add counts the CTA done and two exchanges reset the counter
    (kernels/sm90/work_queue.py). The fixed stride touches no global counter. The key-block loop
    does the same work either way; ptxas places a few register moves differently (at D=64 up to
    6 more UMOV with the queue)."""
    shape = {"B": 2, "H": 3, "S": 1000, "D": D, "causal": causal}
    queue = fa.compile_flash_attn(config, shape)
    stride = fa.compile_flash_attn({**config, "dynamic_schedule": False}, shape)
    assert sorted(_ATOMIC.findall(queue.sass)) == ["ADD", "ADD", "EXCH", "EXCH"]
    assert _ATOMIC.findall(stride.sass) == []
    (q_loop,) = [loop for loop in innermost(find_loops(queue.sass)) if loop.opcodes.get("HGMMA")]
    (s_loop,) = [loop for loop in innermost(find_loops(stride.sass)) if loop.opcodes.get("HGMMA")]
    moves = {"UMOV", "MOV", "IMAD"}
    assert ({k: v for k, v in q_loop.opcodes.items() if k not in moves}
            == {k: v for k, v in s_loop.opcodes.items() if k not in moves})
    assert abs(q_loop.instructions - s_loop.instructions) <= 6


_EPILOGUE_BAR = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?BAR\.SYNC(?:\.DEFER_BLOCKING)?\s+(\w+), (0x\w+) ;",
                           re.MULTILINE)


@pytest.mark.parametrize("qk_mn,D", [((128, 160), 128), ((192, 128), 64)])
def test_each_warpgroup_waits_only_for_itself_in_its_epilogue(qk_mn, D):
    """With wg_epilogue the epilogue's barriers count one warpgroup (128 threads) on an id picked
    by the warpgroup at run time; without, all math threads meet on the one constant id."""
    shape = {"B": 2, "H": 3, "S": 1000, "D": D, "causal": 0}
    own = fa.compile_flash_attn({"qk_mn": qk_mn, "wg_epilogue": True}, shape)
    shared = fa.compile_flash_attn({"qk_mn": qk_mn}, shape)
    math_threads = 128 * fa.math_warpgroups(fa.FlashAttnConfig(qk_mn=qk_mn))

    def syncs(sass):
        return [(bar_id, int(count, 16)) for bar_id, count in _EPILOGUE_BAR.findall(sass)]

    # The wait of all math threads on the shared epilogue barrier is gone; the new 128-thread
    # waits name a register (the turn barriers' 256-thread waits do too, as before).
    everyone = (hex(int(AttentionBarrier.EPILOGUE)), math_threads)
    assert everyone in syncs(shared.sass)
    assert not [s for s in syncs(own.sass) if s[0] == everyone[0]], syncs(own.sass)
    own_epilogue = [i for i, c in syncs(own.sass) if c == 128]
    assert own_epilogue and all(re.fullmatch(r"R\d+", i) for i in own_epilogue), syncs(own.sass)
    assert fa.smem_bytes(fa.FlashAttnConfig(qk_mn=qk_mn, wg_epilogue=True), D) == \
        fa.smem_bytes(fa.FlashAttnConfig(qk_mn=qk_mn), D)


def test_an_epilogue_per_warpgroup_only_where_it_paid():
    # kernels/flash_attn/NOTES.md, v7 and v8: faster at D=128 (causal below S=8192); slower with
    # three warpgroups.
    for shape in ({"B": 16, "H": 16, "S": 2048, "D": 128, "causal": 0}, {"B": 16, "H": 16, "S": 2048, "D": 128, "causal": 1},
                  {"B": 4, "H": 16, "S": 8192, "D": 128, "causal": 0}, {"B": 1, "H": 16, "S": 16384, "D": 128, "causal": 0}):
        assert fa.tuned_config(shape)["wg_epilogue"] is True
    for shape in ({"B": 2, "H": 8, "S": 8192, "D": 64, "causal": 0}, {"B": 4, "H": 16, "S": 8192, "D": 128, "causal": 1}):
        assert fa.FlashAttnConfig.from_mapping(fa.tuned_config(shape)).wg_epilogue is False
    with pytest.raises(ConfigRejected, match="O's own buffer"):
        fa.validate(fa.FlashAttnConfig(wg_epilogue=True, o_reuses_q=True), 128)


def test_a_tiles_first_q_k_takes_a_turn_only_where_turns_are_taken():
    shape = {"B": 2, "H": 3, "S": 1000, "D": 128, "causal": 0}
    turn = fa.compile_flash_attn({}, shape)
    no_turn = fa.compile_flash_attn({"first_block_turn": False}, shape)
    assert len(_TURN_BAR.findall(turn.sass)) == len(_TURN_BAR.findall(no_turn.sass)) + 2
    # Without ping-pong there are no turns to take: the flag changes nothing.
    plain = {"pingpong": False}
    assert (fa.compile_flash_attn(plain, shape).sass
            == fa.compile_flash_attn({**plain, "first_block_turn": False}, shape).sass)
    with pytest.raises(ConfigRejected, match="true or false"):
        fa.validate(fa.FlashAttnConfig(first_block_turn=0), 128)


def test_a_per_shape_choice_gives_way_to_overrides_it_cannot_be_built_with():
    spec = fa.FLASH_ATTN_SPEC
    causal = {"B": 1, "H": 2, "S": 1000, "D": 128, "causal": 1}
    assert spec.config_for(causal, "bfloat16")["wg_epilogue"] is True
    # O in Q's buffer is stored by all warpgroups together: the per-warpgroup epilogue yields.
    cfg = spec.config_for(causal, "bfloat16", {"o_reuses_q": True})
    assert cfg["o_reuses_q"] is True and cfg["wg_epilogue"] is False
    # Only the contradicted key goes: the wider key blocks stay.
    cfg = spec.config_for({**causal, "causal": 0}, "bfloat16", {"o_reuses_q": True})
    assert tuple(cfg["qk_mn"]) == (128, 160) and cfg["wg_epilogue"] is False
    # Two keys go where both contradict it (the last-wave split does not work with O in Q).
    assert cfg["tail_parts"] == 0
    # Overrides that cannot be built at all stay as given, for compile to refuse with its reason.
    assert spec.config_for(causal, "bfloat16", {"num_stages": 5})["num_stages"] == 5


def test_every_suite_shape_takes_its_work_from_the_queue():
    # The fixed stride was kept at long non-causal D=128 tiles until the queue and the
    # per-warpgroup epilogue together beat it there (kernels/flash_attn/NOTES.md, v6 and v8).
    for shape in fa.SUITE:
        assert fa.FlashAttnConfig.from_mapping(fa.tuned_config(shape)).dynamic_schedule is True
    assert fa.FlashAttnConfig.from_mapping({"dynamic_schedule": "false"}).dynamic_schedule is False
    with pytest.raises(ConfigRejected, match="true or false"):
        fa.validate(fa.FlashAttnConfig(dynamic_schedule=1), 128)


def test_causal_sections_fit_half_of_l2():
    l2 = 50 * 1024 * 1024
    assert fa.section_heads(8192, 128, 2, 64, l2) == 6           # 4 MiB of K and V per pair
    assert fa.section_heads(4096, 128, 2, 8, l2) == 8            # all pairs fit: one section
    assert fa.section_heads(1 << 20, 128, 2, 4, l2) == 1         # at least one pair
    assert fa.section_heads(128, 64, 2, 3, l2) == 3              # at most all pairs


def test_wide_key_blocks_refused_when_causal():
    with pytest.raises(ConfigRejected, match="square tiles"):
        fa.compile_flash_attn({"qk_mn": (128, 192)}, {"B": 1, "H": 1, "S": 128, "D": 64, "causal": 1})
    fa.validate(fa.FlashAttnConfig(qk_mn=(128, 192)), 64, causal=False)
    fa.validate(fa.FlashAttnConfig(num_stages=3, o_reuses_q=True), 128, causal=True)


def test_unknown_key_dtype_and_arch_are_refused():
    with pytest.raises(ConfigRejected, match="unknown"):
        fa.FlashAttnConfig.from_mapping({"tile": 3})
    with pytest.raises(ConfigRejected, match="dtype"):
        fa.compile_flash_attn({}, {"B": 1, "H": 1, "S": 128, "D": 64}, "float32")
    with pytest.raises(ConfigRejected, match="sm_90a"):
        fa.compile_flash_attn({}, {"B": 1, "H": 1, "S": 128, "D": 64}, "bfloat16", arch="sm_80")
    with pytest.raises(ConfigRejected, match="positive"):
        fa.compile_flash_attn({}, {"B": 1, "H": 1, "S": 0, "D": 64}, "bfloat16")


@pytest.mark.parametrize("causal", [0, 1])
def test_references_agree_on_cpu(causal):
    import torch
    import torch.nn.functional as F

    inputs = fa.make_inputs({"B": 2, "H": 3, "S": 77, "D": 64, "causal": causal}, "bfloat16", device="cpu")
    ref = fa.reference_fp32(inputs)
    q, k, v = (inputs[n].float().transpose(1, 2) for n in "qkv")
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)).transpose(1, 2)
    assert (ref - sdpa).abs().max().item() < 1e-5
    low = fa.torch_reference(inputs).float()
    assert 0 < (low - ref).abs().max().item() < 5e-2
    assert torch.isnan(inputs["out"]).all()


def test_flops_and_spec():
    s = {"B": 4, "H": 16, "S": 8192, "D": 128, "causal": 0}
    assert fa.attention_flops(s) == 4.0 * 4 * 16 * 8192 * 8192 * 128
    assert fa.attention_flops(dict(s, causal=1)) == fa.attention_flops(s) / 2
    assert fa.FLASH_ATTN_SPEC.references[0] == "sdpa"
    assert fa.FLASH_ATTN_SPEC.default_config == fa.FlashAttnConfig().to_dict()


