"""The diagnosis benchmark on its committed H100 reports: the labels use the cause vocabulary, the
mapping of kernelscope findings and of ncu's rule results onto causes, the ranking of ncu's
results, and the hit totals measured on the corpus (floors for kernelscope, exact for ncu's rules,
which depend only on the recorded reports and the mapping table)."""

import json
import lzma
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_diagnosis as bench  # noqa: E402

pytest.importorskip("ncu_report")

REQUIRED_CAUSES = {
    "uncoalesced-access", "narrow-access", "bank-conflicts", "divergence", "atomic-contention",
    "spills-local", "grid-too-small", "occupancy-registers", "unfused-fp32", "integer-index-math",
    "special-math", "exposed-latency", "dram-traffic",
}
# Measured on the committed corpus (78 scored pairs): kernelscope hit@1 78 and hit@3 78. On the
# first 16: 14 and 15 of 15 before the impact model compared costs on both kernels, 3 and 4 before
# the cause rules. On the 11 recorded later (planted-set2, gemm-cluster), at their first diff: 9 of
# the 10 planted pairs first (one-warp blocks blamed on warp imbalance), and the cluster pair named
# only its symptom (load imbalance) before the cluster-residency rule; the skinny-GEMM ring pair its
# symptom (the tensor pipe) before the DRAM-rate rule. The 10 of set 3, held out: 8 first, 9 in the
# first three; the 3 scored of set 4, the 4 of set 5 and the 2 of set 6, held out likewise: all first;
# the 3 of set 7: 2 first; the 4 scored of set 8: all first, one with ~4 % of its gap (no main
# reason) before the Wait-growth count; the 4 of set 9: 3 first, and its same-time pair a false alarm;
# the 3 of set 10: all first, one with ~20 % of its gap (no main reason) before the MMA-shape rule;
# the 3 CuTe DSL pairs: all first; the 5 of set 11: all first, its same-time pair quiet; the 3 of
# the second CuTe DSL set: all first; the 3 of set 12: all first, its same-time pair quiet; the 5 of
# set 13: all first, its same-time pair quiet (benchmarks/diagnosis/README.md). ncu's rules hit@1 8,
# hit@3 30. Set 14 and the third CuTe DSL set (held out, H200): 8 of 10 first, 9 in three, both
# same-time pairs quiet; ncu's rules 0 first, 3 in three. Since then scatter_sorted is named first
# (rule atomic-traffic-vs-reference, written after its miss: no longer held out), and rod_cluster4
# (cluster-residency-limit counts the waves a cluster shape adds, and load-imbalance-sms expects them:
# written after its miss). Set 15 (held out, H200): 7 of 7 first at its first diff, its same-time pair
# quiet; ncu's rules 1 first, 4 in three.
KERNELSCOPE_FLOOR = {"hit1": 100, "hit3": 100}
NCU_MEASURED = {"hit1": 9, "hit3": 37}
# kernelscope (hit@1, hit@3) on the held-out pairs it missed at their first diff and still misses.
HELD_OUT_MISSES: dict[str, tuple[bool, bool]] = {}
# ncu's own top rules per pair, as recorded (hit@1, hit@3): every other scored pair is (False, False).
NCU_HITS = {"uncoalesced": (False, True), "bank_conflicts": (False, True), "divergence": (True, True),
            "spills_local": (False, True), "unfused_fp32": (True, True), "exposed_latency": (False, True),
            "gemm_ring_depth": (False, True), "tail_wave": (True, True), "transpose_store": (False, True),
            "aos_fields": (False, True), "sort_rolled": (False, True), "register_cap": (True, True),
            "gemv_rows": (False, True), "trip_counts": (True, True), "stride2_conflicts": (True, True),
            "row_per_thread": (False, True), "block_order": (False, True),
            "mlp_registers": (False, True), "few_rows": (False, True),
            "cute2_thread_layout_order": (False, True), "cute2_halves_by_lane": (True, True),
            "stride2_loads": (False, True), "complex_mac": (True, True),
            "alias_prefix": (False, True), "local_table": (False, True), "gather_order": (False, True),
            "cute_smem_transpose": (False, True), "cute_local_fragment": (False, True),
            "layernorm_smem": (False, True), "raking_scan": (False, True),
            "cute3_cta_tile_count": (False, True), "cute3_smem_reserve": (False, True),
            "cute3_persistent_split": (False, True),
            "rgba_planar": (False, True), "mc_fixed_grid": (False, True), "aes_ttable": (True, True),
            "material_sort": (False, True)}


@pytest.fixture(scope="module")
def result():
    return bench.run(bench.DEFAULT_DIR)


def test_labels_cover_the_required_causes_with_ids_of_the_vocabulary():
    causes = bench.load_causes()
    pairs = bench.load_pairs(bench.DEFAULT_DIR, causes)
    scored = [p for p in pairs if p.scored]
    assert len(scored) >= 13
    assert REQUIRED_CAUSES <= {p.cause for p in scored}
    assert all(p.cause in causes for p in scored)
    assert len({p.id for p in pairs}) == len(pairs)
    assert all(p.why.strip() and p.report.exists() and p.fast_source.exists() for p in pairs)
    # the unscored pairs, each saying why
    assert [p.id for p in pairs if not p.scored] == ["attention_cudnn_vs_fa4", "fused_norm_clock",
                                                     "attention_causal_stride", "attention_shared_epilogue",
                                                     "gemm_raster_panel", "attention_intra_wg_overlap",
                                                     "softsign_fp64", "gather_chain", "hist_skewed", "reduce_syncs", "pass_order",
                                                     "stencil_global", "same_attention", "same_attention_no_overlap", "same_gemm",
                                                     "same_gemm_mma", "same_gemm_8192", "equal_gemm_ring3",
                                                     "equal_gemm_mma_ring3", "same_rmsnorm_without_squares",
                                                     "gemm_transposed_tile", "rmsnorm_squares_from_shared", "same_copy_unroll", "same_block_512",
                                                     "same_broadcast_reads", "same_index_div", "same_expf",
                                                     "same_block_128", "cute_same_stride_unroll", "same_smem_64k",
                                                     "cute2_same_layout_rows", "same_stream_blocks", "same_swizzle_pad",
                                                     "same_tree_shuffle", "cute3_same_tile_waves", "same_double_norm"]
    assert "serialized-wgmma" in {p.cause for p in scored}


def test_the_mapping_tables_name_only_causes_of_the_vocabulary():
    causes = bench.load_causes()
    assert set(bench.KERNELSCOPE_RULE_CAUSES.values()) <= causes
    assert {cause for _, _, cause in bench.NCU_RULE_CAUSES} <= causes


def test_kernelscope_table_names_rules_that_exist():
    from kernelscope.rules.engine import load_rules
    ids = set(load_rules().rules)
    assert set(bench.KERNELSCOPE_RULE_CAUSES) <= ids
    assert "occupancy-limiter" in ids


def test_a_finding_cause_field_wins_over_the_rule_table():
    assert bench.kernelscope_cause({"rule": "stall-long-scoreboard"}) == "exposed-latency"
    assert bench.kernelscope_cause({"rule": "stall-long-scoreboard", "cause": "atomic-contention"}) == "atomic-contention"
    assert bench.kernelscope_cause({"rule": "shared-bank-conflicts", "cause": None}) is None
    assert bench.kernelscope_cause({"rule": "sm-throughput-below-reference"}) is None
    assert bench.kernelscope_cause({"rule": "occupancy-limiter", "message": "... limited by registers; achieved 19%"}) == "occupancy-registers"
    assert bench.kernelscope_cause({"rule": "occupancy-limiter", "message": "... limited by shared memory; ..."}) == "occupancy-shared-memory"
    assert bench.kernelscope_cause({"rule": "occupancy-limiter", "message": "... limited by warps"}) is None
    assert bench.kernelscope_cause({"rule": "occupancy-limiter", "message": "... limited by block slots; ..."}) == "occupancy-block-size"


def _ncu(rule, title="", message="text", speedup=None, kind=2):
    result = {"rule_identifier": rule, "rule_message": {"title": title, "message": message, "type": kind}}
    if speedup is not None:
        result["speedup_estimation"] = {"type": 1, "speedup": speedup}
    return result


def test_ncu_rules_map_to_a_cause_only_when_their_text_is_about_it():
    assert bench.ncu_cause(_ncu("UncoalescedGlobalAccess")) == "uncoalesced-access"
    assert bench.ncu_cause(_ncu("FPInstructions", "FP32 Non-Fused Instructions")) == "unfused-fp32"
    assert bench.ncu_cause(_ncu("FPInstructions", "FP64 Instructions", "double precision")) is None
    assert bench.ncu_cause(_ncu("TheoreticalOccupancy", "", "limited by the number of required registers")) == "occupancy-registers"
    assert bench.ncu_cause(_ncu("TheoreticalOccupancy", "", "limited by the required amount of shared memory")) == "occupancy-shared-memory"
    assert bench.ncu_cause(_ncu("SOLBottleneck", "Small Grid")) == "grid-too-small"
    assert bench.ncu_cause(_ncu("SOLBottleneck", "High Throughput")) is None
    assert bench.ncu_cause(_ncu("MemoryCacheAccessPattern", "L1TEX Local Load Access Pattern")) == "spills-local"
    assert bench.ncu_cause(_ncu("MemoryCacheAccessPattern", "L2 Global Store Access Pattern")) == "uncoalesced-access"
    assert bench.ncu_cause(_ncu("CPIStall", "Long Scoreboard Stalls")) == "exposed-latency"
    assert bench.ncu_cause(_ncu("CPIStall", "Mio Throttle Stalls")) is None
    assert bench.ncu_cause(_ncu("HighPipeUtilization", "Low Utilization", "All compute pipelines are under-utilized")) is None


def test_ncu_results_rank_by_estimated_speedup_and_skip_what_did_not_fire():
    results = [
        _ncu("A", speedup=5.0), _ncu("B"), _ncu("C", speedup=40.0), _ncu("D", speedup=90.0, kind=1),
        _ncu("E", message="", speedup=99.0), _ncu("F", speedup=12.0),
    ]
    assert [r["rule_identifier"] for r in bench.ncu_ranked(results)] == ["C", "F", "A", "B"]


def test_hits_count_the_first_k_findings_not_the_first_k_causes():
    judged = bench.Judgement([("generic", None), ("also-generic", None), ("x", "divergence"), ("y", "bank-conflicts")])
    assert not judged.hit("divergence", 1)
    assert judged.hit("divergence", 3)
    assert not judged.hit("bank-conflicts", 3)
    assert not judged.hit(None, 3)


def test_bad_labels_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "labels.toml").write_text('[[pair]]\nid = "x"\nreport = "r.ncu-rep"\nslow = "a"\nfast = "b"\ncause = "slowness"\n')
    assert bench.main(["--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'slowness' is not an id" in err
    assert bench.main(["--dir", str(tmp_path / "missing")]) == 2


def test_every_pair_is_judged_and_the_slow_kernel_is_slower(result):
    rows, _ = result
    assert len(rows) == 136
    for row in rows:
        # A planting that came out the other way round (not scored) leaves A faster: nothing to explain.
        reversed_planting = not row["scored"] and row["gap"] < 1
        assert row["ncu"]["top"] and (row["kernelscope"]["top"] or row.get("same") or reversed_planting), row["id"]
        if row["scored"]:
            # measured under ncu; the smallest gaps: the WGMMA chain's 1.12x, the unrolled code's 1.14x
            assert row["gap"] > 1.1, row


def test_totals_hold_what_was_measured(result):
    rows, total = result
    assert total["pairs"] == 100
    # Two launches that take the same time: no main reason, no cause in the code claiming a quarter of the gap.
    assert (total["same_pairs"], total["kernelscope_quiet"]) == (20, 20)
    for k, floor in KERNELSCOPE_FLOOR.items():
        assert total[f"kernelscope_{k}"] >= floor
    assert {k: total[f"ncu_{k}"] for k in NCU_MEASURED} == NCU_MEASURED
    by_id = {r["id"]: r for r in rows}
    # A lower clock is the right reading of a gap between two launches of the same code.
    assert [t["cause"] for t in by_id["same_gemm"]["kernelscope"]["top"]][:1] == ["lower-clock"]
    for row in rows:
        if row["scored"]:
            # every pair's cause is named first by kernelscope, but the held-out misses still left (none
            # since set 14's were named: README, "The fourteenth set" and "The basic set's last misses")
            expected = HELD_OUT_MISSES.get(row["id"], (True, True))
            assert (row["kernelscope"]["hit1"], row["kernelscope"]["hit3"]) == expected, row["id"]
            assert (row["ncu"]["hit1"], row["ncu"]["hit3"]) == NCU_HITS.get(row["id"], (False, False)), row["id"]
    # what ncu's rules get right and wrong on this corpus, as recorded
    assert by_id["divergence"]["ncu"]["hit1"] and by_id["unfused_fp32"]["ncu"]["hit1"]
    assert not by_id["dram_traffic"]["ncu"]["hit3"]  # ncu has no reference to compare bytes with
    # Pairs kept as kernelscope profile documents (two files for one pair too): judged the same way.
    assert by_id["mma_sync_vs_wgmma"]["kernelscope"]["top"][0]["rule"] == "no-hgmma-on-sm90"
    clock = by_id["fused_norm_clock"]
    assert not clock["scored"] and clock["kernelscope"]["top"][0]["cause"] == "lower-clock"
    # A fixed stride of unequal tiles against a balanced grid: the clock first (two thirds of the
    # gap), then the split, whose share is the rest.
    stride = by_id["attention_causal_stride"]
    assert [t["cause"] for t in stride["kernelscope"]["top"][:2]] == ["lower-clock", "load-imbalance"]
    # One epilogue barrier for all math warpgroups: the clock of the other device call, then the skew.
    epilogue = by_id["attention_shared_epilogue"]
    assert [t["cause"] for t in epilogue["kernelscope"]["top"][:2]] == ["lower-clock", "barrier-skew"]
    # flash_attn waiting for each warpgroup's WGMMAs right after issuing them: not skew, though the
    # barrier stall grew at the same BAR count (its samples sit at the DEPBAR).
    overlap = by_id["attention_intra_wg_overlap"]
    assert overlap["kernelscope"]["top"][0]["cause"] == "serialized-wgmma"
    # gemm with two m64n128 atoms a warpgroup against one m64n256: the instruction shape, not the symptom.
    tile = by_id["gemm_transposed_tile"]
    assert [t["rule"] for t in tile["kernelscope"]["top"][:2]] == ["narrow-wgmma-vs-reference", "tensor-pipe-below-reference"]


def test_memoized_loading_changes_no_finding():
    plain = bench.Reports()
    try:
        report = plain.plain(bench.DEFAULT_DIR / "reports" / "planted.ncu-rep.xz")
        specs = (f"{report}:^bank_conflicts_slow$", f"{report}:^bank_conflicts_fast$")
        direct = bench.run_kernelscope_diff(*specs)
        with bench.parse_each_report_once():
            memoized = bench.run_kernelscope_diff(*specs)
    finally:
        plain.close()
    assert direct["findings"] == memoized["findings"] and direct["findings"]


def test_a_held_out_directory_is_judged_the_same_way(result, tmp_path):
    out = tmp_path / "diagnosis.json"
    labels = tomllib.loads((bench.DEFAULT_DIR / "labels.toml").read_text())
    one = [p for p in labels["pair"] if p["id"] in ("special_math", "attention_cudnn_vs_fa4")]
    held_out = tmp_path / "held-out"
    held_out.mkdir()
    lines = []
    for p in one:
        p = dict(p, report=str(bench.DEFAULT_DIR / p["report"]))
        if p["id"] == "special_math":  # the same kernels by report index: special_math_slow is @22
            p.update(slow="@22", fast="@23")
        lines.append("[[pair]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in p.items()))
    (held_out / "labels.toml").write_text("\n".join(lines))
    assert bench.main(["--dir", str(held_out), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["totals"]["pairs"] == 1 and [r["id"] for r in data["pairs"]] == ["special_math", "attention_cudnn_vs_fa4"]
    by_id = {r["id"]: r for r in result[0]}
    assert data["pairs"] == [by_id["special_math"], by_id["attention_cudnn_vs_fa4"]]
    # The committed table is xz-compressed: the same document.
    packed = tmp_path / "diagnosis.json.xz"
    assert bench.main(["--dir", str(held_out), "--json", str(packed)]) == 0
    with lzma.open(packed, "rt") as f:
        assert json.load(f) == data


def test_a_cause_named_for_the_same_kernel_measured_twice_is_a_false_alarm():
    quiet = {"verdict": {"main_reason": None}, "findings": [{"rule": "r", "cause": "barrier-skew", "explains": 0.2},
                                                             {"rule": "s", "cause": None, "explains": 0.9}]}
    assert not bench.false_alarm(quiet)
    loud = {"verdict": {"main_reason": None}, "findings": [{"rule": "r", "cause": "barrier-skew", "explains": 0.25}]}
    assert bench.false_alarm(loud)
    assert bench.false_alarm({"verdict": {"main_reason": {"rule": "r"}}, "findings": []})
    clock = {"verdict": {"main_reason": None}, "findings": [{"rule": "c", "cause": "lower-clock", "explains": 0.9}]}
    assert not bench.false_alarm(clock)


def test_reports_of_the_basic_section_set_read_each_units_busy_time():
    # Set 1's pairs profiled with ncu's basic set (benchmarks/diagnosis/basic_set): no warp stalls,
    # instruction mix or memory tables. The first recording named 2 of 16 first (the grid and the
    # register limit), 3 once the occupancy rules priced latency without warp states; the rules of
    # rules/builtin/busy.toml, written on these pairs, read the cause from which unit's work grew
    # (16 of 16). ncu's rules: 2 and 3. No false alarm on the two same-time pairs.
    rows, total = bench.run(bench.DEFAULT_DIR / "basic_set")
    assert total["pairs"] == 16 and total["kernelscope_hit1"] >= 16
    assert (total["ncu_hit1"], total["ncu_hit3"]) == (2, 3)
    assert (total["same_pairs"], total["kernelscope_quiet"]) == (2, 2)


def test_the_busy_time_rules_on_pairs_they_were_not_written_on():
    # benchmarks/diagnosis/basic_set_held_out: the 55 scored pairs of sets 2-12 and both CuTe DSL sets,
    # profiled under --set basic in the same device call. First diff with the busy-time rules: 29 first,
    # 34 in the first three (10 and 10 without them); ncu 3 and 7; quiet on 5 of 6 same-time pairs.
    # 35 and 35 after changes made on its misses (no longer held out for those). Set 13, planted after
    # the rules, added after its first diff: 4 of 5 first, quiet on its same-time pair. Re-profiled with
    # the kernels' SASS facts: busy.toml alone 39 as before; with code.toml (written knowing the misses)
    # 49. Floors for kernelscope, exact values for ncu.
    rows, total = bench.run(bench.DEFAULT_DIR / "basic_set_held_out")
    # Set 14 and the third CuTe DSL set, held out (H200): 6 of 10 first, 7 in three, quiet 2/2. 64 and 65
    # before the SASS's access widths, global atomics and cp.async waits were read, and before the rules
    # written on the six misses (stride2_loads, tile_prefetch, rod_cluster4, scatter_sorted,
    # fused_ops_unroll, cute3_barrier_per_step): all 70 since. Set 15, held out (H200): 7 of 7 first, its
    # same-time pair quiet (ncu 0 first, 1 in three).
    assert total["pairs"] == 77
    assert total["kernelscope_hit1"] >= 77 and total["kernelscope_hit3"] >= 77
    assert (total["ncu_hit1"], total["ncu_hit3"]) == (5, 13)
    assert total["same_pairs"] == 10 and total["kernelscope_quiet"] >= 9


def test_reports_of_the_detailed_section_set_read_the_source_counters():
    # The same pairs profiled with ncu's detailed set (benchmarks/diagnosis/detailed_set): source
    # counters, but no warp-state ratios and no memory tables. Before the catalog's fallbacks (warp
    # states from PC samples, sectors and wavefronts from the source counters) kernelscope named 7 of
    # 16 first; with them 16, the fallbacks written on these reports (not held out). ncu's rules:
    # 0 and 5. The precise-expf pair stays a false alarm (index math claims ~39 % of a 0.7 % gap within
    # noise: expf's exponent shifts count as index math).
    rows, total = bench.run(bench.DEFAULT_DIR / "detailed_set")
    assert total["pairs"] == 16 and total["kernelscope_hit1"] >= 16
    assert (total["ncu_hit1"], total["ncu_hit3"]) == (0, 5)
    assert total["same_pairs"] == 2 and total["kernelscope_quiet"] >= 1


def test_the_detailed_set_fallbacks_on_pairs_they_were_not_written_on():
    # benchmarks/diagnosis/detailed_set_held_out: 41 scored pairs of sets 2-10 under --set detailed,
    # profiled after the fallbacks were committed. Measured: 35 first, 39 in the first three; ncu 2
    # and 10; quiet on 4 of 5 same-time pairs (gather_chain a false alarm, quiet since equal
    # headrooms share out no noise gap). Since, the three
    # uncoalesced pairs that named DRAM traffic first name the fetched sectors, and shared atomics'
    # replays are told from bank conflicts, and load waits behind a hot atomic slice are contention
    # and re-loads are read from the ideal sectors (41 first, 41 in three; no longer held out for
    # those rules). Floors for kernelscope, exact values for ncu, as in the full-set benchmark.
    rows, total = bench.run(bench.DEFAULT_DIR / "detailed_set_held_out")
    assert total["pairs"] == 41
    assert total["kernelscope_hit1"] >= 41 and total["kernelscope_hit3"] >= 41
    assert (total["ncu_hit1"], total["ncu_hit3"]) == (2, 10)
    assert total["same_pairs"] == 5 and total["kernelscope_quiet"] >= 5


def test_a_directory_may_take_its_pairs_from_another_labels_file(tmp_path):
    # [[reprofiled]]: the pairs of ../labels.toml profiled again into other reports keep their kernels,
    # causes and scoring; only the report changes (the basic- and detailed-set directories use it).
    causes = bench.load_causes()
    held_out = {p.id: p for p in bench.load_pairs(bench.DEFAULT_DIR / "basic_set_held_out", causes)}
    original = {p.id: p for p in bench.load_pairs(bench.DEFAULT_DIR, causes)}
    assert held_out["fp64"].report.name == "planted-basic-sass.json.xz"
    assert held_out["cute_bf16_scalar"].report.name == "cute1-basic-sass.json.xz"
    assert held_out["raking_scan"].report.name == "planted-basic-sass.json.xz"
    for pid in ("fp64", "cute_bf16_scalar", "same_smem_64k", "cute2_same_layout_rows"):
        a, b = held_out[pid], original[pid]
        assert (a.slow, a.fast, a.cause, a.scored, a.same) == (b.slow, b.fast, b.cause, b.scored, b.same), pid
    # A pair id the source does not hold is one clear input error.
    (tmp_path / "labels.toml").write_text('[[reprofiled]]\nfrom = "%s"\nreport = "r.json.xz"\npairs = ["no_such_pair"]\n'
                                          % (bench.DEFAULT_DIR / "labels.toml"))
    with pytest.raises(bench.InputError, match="no pair 'no_such_pair'"):
        bench.load_pairs(tmp_path, causes)
