"""Each built-in rule on real reports: one case where it fires, one where it does not.

Reports (tests/fixtures/README.md):
  pair  h200-cute-add-and-cublas-gemm.full: [0] a CuTe DSL elementwise add, [1] a cuBLAS WGMMA GEMM
  rk    h200-rule-kernels: the deliberately flawed CuTe DSL kernels of tests/rule_kernels/bad_kernels.py,
        the project's GEMM in three configs and cuBLAS on the same problem, one launch each in NVTX
        range rk:<name>
  gmma  h200-rule-gmma: the WGMMA-only CuTe DSL kernels of tests/rule_kernels/gmma_bound.py, one
        launch each in NVTX range rk:<name>
"""

from __future__ import annotations

import pytest

from kernelscope.profiler.sources import load_profiles
from kernelscope.rules.engine import evaluate_all, load_rules

PAIR = "h200-cute-add-and-cublas-gemm.full.ncu-rep"
RULE_KERNELS = "h200-rule-kernels.ncu-rep"
RULE_GMMA = "h200-rule-gmma.ncu-rep"


@pytest.fixture(scope="module")
def kernels(fixture_file):
    pair = load_profiles(fixture_file(PAIR))
    found = {"add": pair[0], "cublas_gemm": pair[1]}
    for p in [*load_profiles(fixture_file(RULE_KERNELS)), *load_profiles(fixture_file(RULE_GMMA))]:
        for r in p.nvtx_ranges:
            if r.startswith("rk:"):
                found[r[3:]] = p
    return found


def _outcome(kernels, rule_id, target, reference=None, baseline=None):
    t = kernels[target]
    ev = evaluate_all(t, kernels[reference] if reference else None, kernels[baseline] if baseline else None)
    fired = {f.rule_id: f for f in ev.findings}
    if rule_id in fired:
        return True, fired[rule_id]
    assert rule_id in ev.passed, f"{rule_id} was not evaluated: {ev.not_evaluated.get(rule_id)}"
    return False, None


# (rule, target, reference, baseline, fires)
CASES = [
    # cuBLAS re-sizes its registers with setmaxnreg: its launch registers cap nothing
    ("register-pressure", "cublas_gemm", None, None, False),
    ("register-pressure", "register_heavy", None, None, True),
    ("register-pressure", "add", None, None, False),
    ("local-memory-spills", "local_array", None, None, True),
    ("local-memory-spills", "scale_good", None, None, False),
    ("occupancy-limiter", "cublas_gemm", None, None, True),
    ("occupancy-limiter", "register_heavy", None, None, True),
    ("occupancy-limiter", "add", None, None, False),
    ("shared-memory-near-limit", "cublas_gemm", None, None, True),
    ("shared-memory-near-limit", "bank_conflict", None, None, False),
    ("tail-effect", "tail_wave", None, None, True),
    ("tail-effect", "add", None, None, False),
    ("tail-effect", "fma_chain", None, None, False),
    ("l1-returns-vs-reference", "add", "cublas_gemm", None, True),
    ("l1-returns-vs-reference", "local_array", "scale_good", None, True),
    ("l1-returns-vs-reference", "cublas_gemm", "add", None, False),
    ("l1-returns-vs-reference", "branchy", "scale_good", None, False),
    ("tma-share-below-reference", "add", "cublas_gemm", None, True),
    ("tma-share-below-reference", "branchy", "scale_good", None, False),
    ("tma-share-below-reference", "cublas_gemm", "add", None, False),
    ("tma-share-above-reference", "cublas_gemm", "add", None, True),
    ("tma-share-above-reference", "add", "cublas_gemm", None, False),
    ("shared-bank-conflicts", "bank_conflict", None, None, True),
    ("shared-bank-conflicts", "cublas_gemm", None, None, False),
    ("memory-throughput-below-reference", "branchy", "scale_good", None, True),
    ("memory-throughput-below-reference", "add", "cublas_gemm", None, False),
    ("branch-ratio-vs-reference", "branchy", "scale_good", None, True),
    ("branch-ratio-vs-reference", "add", "cublas_gemm", None, False),
    ("address-math-vs-reference", "add", "cublas_gemm", None, True),
    ("address-math-vs-reference", "cublas_gemm", "add", None, False),
    ("register-moves-vs-reference", "register_shuffle", "scale_good", None, True),
    ("register-moves-vs-reference", "add", "cublas_gemm", None, False),
    ("register-moves-vs-reference", "gemm_default", "cublas", None, False),
    ("instruction-inflation-vs-reference", "cublas_gemm", "add", None, True),
    ("instruction-inflation-vs-reference", "branchy", "scale_good", None, True),
    ("instruction-inflation-vs-reference", "add", "cublas_gemm", None, False),
    ("no-hgmma-on-sm90", "warp_mma", None, None, True),
    ("no-hgmma-on-sm90", "cublas_gemm", None, None, False),
    ("no-hgmma-on-sm90", "add", None, None, False),
    ("tensor-pipe-below-reference", "warp_mma", "cublas_gemm", None, True),
    # mma.sync against wgmma: instruction counts of two families say nothing about shapes
    ("mma-shape-vs-reference", "warp_mma", "cublas_gemm", None, False),
    # cuBLAS's m64n128 wgmma, twice the HGMMA of our m64n256 for the same GEMM, in no longer pipe time
    ("mma-shape-vs-reference", "cublas", "gemm_default", None, False),
    # ... whose tensor pipe is the busier: its narrower wgmmas are fed (the firing case is the
    # diagnosis benchmark's gemm_transposed_tile)
    ("narrow-wgmma-vs-reference", "cublas", "gemm_default", None, False),
    ("narrow-wgmma-vs-reference", "warp_mma", "cublas_gemm", None, False),
    # More shared-memory wavefronts that are bank conflicts (260 M of 269 M), or that are the operand
    # reads of twice the HGMMA (cuBLAS's m64n128 against our m64n256), or fewer: not this cause (the
    # firing case is the diagnosis benchmark's rmsnorm_squares_from_shared)
    ("shared-traffic-vs-reference", "bank_conflict", "scale_good", None, False),
    ("shared-traffic-vs-reference", "cublas", "gemm_default", None, False),
    ("shared-traffic-vs-reference", "gemm_default", "cublas", None, False),
    # no atomics on either side (the firing case is the diagnosis benchmark's scatter_sorted)
    ("atomic-traffic-vs-reference", "bank_conflict", "scale_good", None, False),
    # an elementwise kernel has no tensor work to under-use
    ("tensor-pipe-below-reference", "add", "cublas_gemm", None, False),
    ("tensor-pipe-below-reference", "cublas_gemm", "add", None, False),
    ("tensor-pipe-below-reference", "gemm_wg1_n128", "cublas", None, True),   # CuTe DSL GEMM vs cuBLAS, same problem
    ("tensor-pipe-below-reference", "gemm_default", "cublas", None, False),
    ("sm-throughput-below-reference", "add", "cublas_gemm", None, True),
    ("sm-throughput-below-reference", "cublas_gemm", "add", None, False),
    ("stall-long-scoreboard", "add", None, None, True),
    ("stall-long-scoreboard", "cublas_gemm", None, None, False),
    ("stall-barrier", "cublas_gemm", None, None, True),
    ("stall-barrier", "add", None, None, False),
    ("stall-mio-throttle", "bank_conflict", None, None, True),
    ("stall-mio-throttle", "add", None, None, False),
    ("stall-wait", "fma_chain", None, None, True),
    ("uncoalesced-global-access", "warp_mma", None, None, True),       # 16 of 32 bytes per sector used
    ("uncoalesced-global-access", "add", None, None, False),
    ("narrow-global-access", "add", None, None, True),                 # 4 bytes per lane, coalesced
    ("narrow-global-access", "warp_mma", None, None, False),           # uncoalesced instead
    ("narrow-global-access", "gmma_chain", None, None, False),         # a handful of global accesses
    ("branch-divergence", "branchy", None, None, True),
    ("branch-divergence", "add", None, None, False),
    ("small-grid", "fma_chain", None, None, True),
    ("small-grid", "tail_wave", None, None, False),
    ("small-grid", "gemm_wg1", None, None, False),          # a persistent grid whose SMs stay busy
    ("load-imbalance-sms", "tail_wave", None, None, False),  # a partial last wave: the block count's spread, no more
    ("load-imbalance-sms", "fma_chain", None, None, False),
    # 1024 tiles over 132 persistent CTAs (7.76 each on average, 8 for some): busiest SM 5.3 %
    # above the average, SMs busy 92.7 %; over the 5 % the rule asks since a causal attention
    # kernel lost 5 % to the same spread.
    ("load-imbalance-sms", "gemm_wg1", None, None, True),
    ("load-imbalance-warps", "tail_wave", None, None, False),  # achieved occupancy low over 1.1 waves: the tail's
    ("load-imbalance-warps", "scale_good", None, None, False),
    ("shared-atomic-contention", "bank_conflict", None, None, False),  # shared loads and stores, no atomics
    ("shared-atomic-contention", "gemm_wg1", None, None, False),
    ("global-reloads-vs-reference", "add", "cublas_gemm", None, False),
    ("global-reloads-vs-reference", "branchy", "scale_good", None, False),
    ("unfused-fp32", "register_heavy", None, None, True),
    ("unfused-fp32", "tail_wave", None, None, False),
    ("exposed-latency", "scale_good", None, None, True),
    ("exposed-latency", "cublas_gemm", None, None, False),
    # Long scoreboard 1.9x cuBLAS's, but the memory system 83 % busy against 68 % (2.1x the DRAM
    # bytes of smaller tiles): traffic, not latency. Its firing case: the corpus's gemm_mma_ring_depth.
    ("long-scoreboard-vs-reference", "gemm_wg1_n128", "cublas", None, False),
    # wait_group(0) after every group against one group in flight: 100 % of the chain's barrier
    # samples at WARPGROUP.DEPBAR, the tensor pipe less busy.
    ("wgmma-waits-vs-reference", "gmma_chain", "gmma_in_flight", None, True),
    ("wgmma-waits-vs-reference", "gmma_in_flight", "gmma_chain", None, False),
    ("wgmma-waits-vs-reference", "gemm_default", "cublas", None, False),
    ("barrier-waits-vs-reference", "gmma_chain", "gmma_in_flight", None, False),   # its waits are at the DEPBAR
    ("long-scoreboard-vs-reference", "cublas", "gemm_wg1_n128", None, False),
    ("dram-traffic-vs-reference", "gemm_wg1_n128", "cublas", None, True),
    ("dram-traffic-vs-reference", "gemm_default", "cublas", None, False),
    # TMA brings every operand: no plain loads whose sectors could go unused.
    ("fetched-sectors-vs-reference", "gemm_wg1_n128", "cublas", None, False),
    # Other work: the add asks for other bytes than the GEMM.
    ("fetched-sectors-vs-reference", "add", "cublas_gemm", None, False),
    # TMA loads, no plain global requests to split over lines; and other work.
    ("lines-per-request-vs-reference", "gemm_wg1_n128", "cublas", None, False),
    ("lines-per-request-vs-reference", "add", "cublas_gemm", None, False),
    ("atomic-contention", "cublas_gemm", None, None, False),           # 190 ATOMG, no hot L2 slice
    ("special-math", "gemm_default", None, None, False),              # its MUFU is integer division
    ("shared-memory-occupancy", "bank_conflict", None, None, False),  # shared memory caps it, but warps issue
    ("stall-wait", "add", None, None, False),
    ("stall-wait", "register_heavy", None, None, False),   # largest, but 0.32 cycles per instruction
    ("stall-barrier", "gmma_chain", None, None, True),       # wait_group(0) is WARPGROUP.DEPBAR: a barrier stall
    ("stall-gmma", "gmma_in_flight", None, None, True),
    ("stall-gmma", "gmma_lagging_warp", None, None, True),
    ("stall-gmma", "cublas_gemm", None, None, False),
    # wait_group(0) after every round, tensor pipe 80%: serialized; in flight, behind a late warp,
    # or hidden by a second warpgroup (tensor pipe 96%): not
    ("serialized-wgmma", "gmma_chain", None, None, True),
    ("serialized-wgmma", "gmma_in_flight", None, None, False),
    ("serialized-wgmma", "gmma_lagging_warp", None, None, False),
    ("serialized-wgmma", "gmma_chain_wg2", None, None, False),
    ("serialized-wgmma", "cublas_gemm", None, None, False),
    ("stall-gmma", "gmma_chain", None, None, False),
    ("slower-than-baseline", "local_array", None, "scale_good", True),
    ("slower-than-baseline", "scale_good", None, "add", False),
    ("registers-grew-vs-baseline", "register_heavy", None, "scale_good", True),
    ("registers-grew-vs-baseline", "scale_good", None, "add", False),
    # causes planted in no kernel of these reports: their firing cases are synthetic
    # (test_rules_planted_causes), but for the 1-warp blocks of warp_mma
    ("fp64-arithmetic", "add", None, None, False),
    ("fp64-arithmetic", "cublas_gemm", None, None, False),
    ("excess-synchronization", "add", "cublas_gemm", None, False),
    ("excess-synchronization", "gemm_default", "cublas", None, False),
    ("barrier-waits-vs-reference", "gemm_default", "cublas", None, False),
    ("barrier-waits-vs-reference", "add", "cublas_gemm", None, False),
    # wait_group(0) after every round: 16 barrier-stall cycles per instruction at 528 BAR, the waits
    # are the WGMMAs' (serialized-wgmma names them), not skew at the barriers
    ("barrier-waits-vs-reference", "gmma_chain", "gmma_in_flight", None, False),
    ("memory-fences", "gmma_chain", None, None, False),             # 528 proxy MEMBAR, no membar stall
    ("memory-fences", "add", None, None, False),
    ("instruction-cache-misses", "add", None, None, False),
    ("instruction-cache-misses", "cublas_gemm", None, None, False),
    ("constant-cache-serialization", "add", None, None, False),
    ("constant-cache-serialization", "cublas_gemm", None, None, False),
    ("block-size-occupancy", "warp_mma", None, None, True),         # 32-thread blocks: 32 of 64 warp slots
    ("block-size-occupancy", "fma_chain", None, None, False),       # 1-warp blocks too, but its warps issue
    ("block-size-occupancy", "add", None, None, False),
    ("cluster-residency-limit", "gemm_default", None, None, False),  # 66 clusters of 2: all 132 SMs
    ("cluster-residency-limit", "cublas", None, None, False),
    ("cluster-residency-limit", "add", None, None, False),           # no cluster
    ("dram-rate-below-reference", "gemm_default", "cublas", None, False),  # compute-bound, DRAM far below 50%
    ("dram-rate-below-reference", "add", "cublas_gemm", None, False),
    ("no-tensor-cores-vs-reference", "gemm_default", "cublas", None, False),  # both on the tensor cores
    ("no-tensor-cores-vs-reference", "fma_chain", "cublas", None, False),     # FFMA, but not the GEMM's FLOPs
    ("dependent-arithmetic", "fma_chain", None, None, True),        # one FFMA chain per warp, one warp per SM
    ("dependent-arithmetic", "scale_good", None, None, False),
    ("dependent-arithmetic", "tail_wave", None, None, False),       # two chains per thread, full blocks
    ("dependent-arithmetic", "gemm_default", None, None, False),
    ("sm-clock-below-reference", "gemm_default", "cublas", None, True),    # 1.576 vs 1.605 GHz, cycles +0.5 %
    ("sm-clock-below-reference", "gemm_wg1_n128", "gemm_default", None, False),  # the faster clock of the two
    ("sm-clock-below-reference", "add", "cublas_gemm", None, False),       # memory-bound: cycles follow the clock
    # The busy-time rules read reports without instruction counts (ncu's basic set); these full-set
    # reports count instructions, so the rules that count them decide and these stay quiet.
    ("l1-wavefronts-per-instruction-vs-reference", "bank_conflict", "scale_good", None, False),
    ("l2-requests-per-instruction-vs-reference", "branchy", "scale_good", None, False),
    ("l2-requests-per-instruction-staged-vs-reference", "branchy", "scale_good", None, False),
    ("lsu-work-without-reuse-vs-reference", "bank_conflict", "scale_good", None, False),
    ("more-branches-same-work-vs-reference", "branchy", "scale_good", None, False),
    ("loop-branches-lower-issue-rate-with-barriers-vs-reference", "branchy", "scale_good", None, False),
    ("memory-instructions-per-byte-vs-reference", "scale_good", "add", None, False),
    ("same-memory-work-lower-rate-vs-reference", "add", "scale_good", None, False),
    ("same-instructions-lower-issue-rate-vs-reference", "fma_chain", "tail_wave", None, False),
    ("same-instructions-lower-issue-rate-with-barriers-vs-reference", "fma_chain", "tail_wave", None, False),
    ("xu-bound-vs-reference", "gemm_default", "cublas", None, False),
    ("fp64-pipe-vs-reference", "gemm_default", "cublas", None, False),
    ("fma-work-without-alu-vs-reference", "fma_chain", "scale_good", None, False),
    ("tensor-pipe-idle-vs-reference", "fma_chain", "cublas", None, False),
    ("integer-work-vs-reference", "gemm_default", "cublas", None, False),
    ("same-mix-more-instructions-vs-reference", "gemm_default", "cublas", None, False),
    ("l2-traffic-beyond-dram-vs-reference", "add", "cublas_gemm", None, False),
    ("local-traffic-vs-reference", "local_array", "scale_good", None, False),
    ("dram-work-vs-reference", "gemm_default", "cublas", None, False),
    ("constant-cache-per-instruction-vs-reference", "gemm_default", "cublas", None, False),
    # The code rules likewise (their negative controls on basic-set pairs without the cause, and on
    # profiles without the code's facts: test_diagnosis_recorded_pairs).
    ("local-memory-in-code-vs-reference", "local_array", "scale_good", None, False),
    ("fences-in-code-vs-reference", "gemm_default", "cublas", None, False),
    ("code-size-vs-reference", "gemm_default", "cublas", None, False),
    ("shared-atomic-replays-vs-reference", "bank_conflict", "scale_good", None, False),
    ("barriers-in-code-vs-reference", "bank_conflict", "scale_good", None, False),
    ("special-functions-in-code-vs-reference", "gemm_default", "cublas", None, False),
    ("integer-division-in-code-vs-reference", "gemm_default", "cublas", None, False),
    ("mma-shape-in-code-vs-reference", "gemm_default", "cublas", None, False),
    ("async-copy-waits-in-code-vs-reference", "gemm_default", "cublas", None, False),
    ("atomic-unit-work-vs-reference", "bank_conflict", "scale_good", None, False),
]


@pytest.mark.parametrize("rule_id,target,reference,baseline,fires", CASES,
                         ids=[f"{c[0]}:{c[1]}{'-vs-' + (c[2] or c[3]) if (c[2] or c[3]) else ''}" for c in CASES])
def test_builtin_rule_on_real_reports(kernels, rule_id, target, reference, baseline, fires):
    fired, finding = _outcome(kernels, rule_id, target, reference, baseline)
    assert fired == fires
    if fired:
        # The message quotes numbers, and none of the quoted values is missing.
        assert any(ch.isdigit() for ch in finding.message)
        assert all(q.value is not None for q in finding.quoted), [q.name for q in finding.quoted if q.value is None]


def test_every_builtin_rule_has_a_case_that_fires_and_one_that_does_not():
    covered_fire = {c[0] for c in CASES if c[4]}
    covered_quiet = {c[0] for c in CASES if not c[4]}
    # tested on compile-only profiles in test_rules_engine and test_rule_kernels_gmma
    static_only = {"local-memory-in-binary", "serialized-wgmma-in-binary"}
    # No kernel of these reports has the defect; their firing cases are the planted pairs of the
    # diagnosis corpus (benchmarks/diagnosis), measured by bench_diagnosis.
    corpus_fires = {"atomic-contention", "special-math", "shared-memory-occupancy", "cluster-residency-limit",
                    "dram-rate-below-reference", "long-scoreboard-vs-reference", "mma-shape-vs-reference",
                    "narrow-wgmma-vs-reference", "shared-traffic-vs-reference",
                    "atomic-traffic-vs-reference"}
    # Planted in no report yet: fired on synthetic profiles in test_rules_planted_causes.
    synthetic_fires = {"fp64-arithmetic", "excess-synchronization", "memory-fences", "instruction-cache-misses",
                       "constant-cache-serialization", "load-imbalance-sms", "load-imbalance-warps", "shared-atomic-contention",
                       "global-reloads-vs-reference"}
    # Fired on a pair across two reports (a SIMT matrix product against cuBLAS at the same FLOPs):
    # test_diagnosis_recorded_pairs.
    cross_report_fires = {"no-tensor-cores-vs-reference", "barrier-waits-vs-reference", "fetched-sectors-vs-reference",
                          "lines-per-request-vs-reference"}
    # Fired on ncu basic-set reports of the planted pairs (benchmarks/diagnosis/basic_set):
    # test_diagnosis_recorded_pairs.test_basic_set_reports_name_the_cause_from_each_units_busy_time.
    basic_set_fires = {"l1-wavefronts-per-instruction-vs-reference", "l2-requests-per-instruction-vs-reference",
                       "l2-requests-per-instruction-staged-vs-reference", "lsu-work-without-reuse-vs-reference",
                       "more-branches-same-work-vs-reference", "loop-branches-lower-issue-rate-with-barriers-vs-reference",
                       "memory-instructions-per-byte-vs-reference", "same-memory-work-lower-rate-vs-reference",
                       "same-instructions-lower-issue-rate-vs-reference",
                       "same-instructions-lower-issue-rate-with-barriers-vs-reference", "xu-bound-vs-reference", "fp64-pipe-vs-reference",
                       "fma-work-without-alu-vs-reference", "tensor-pipe-idle-vs-reference", "integer-work-vs-reference",
                       "same-mix-more-instructions-vs-reference", "l2-traffic-beyond-dram-vs-reference",
                       "local-traffic-vs-reference", "dram-work-vs-reference", "constant-cache-per-instruction-vs-reference"}
    # Fired on basic-set reports from the kernels' SASS facts: test_diagnosis_recorded_pairs.
    # test_basic_set_reads_the_code_for_what_no_unit_counts.
    code_fires = {"local-memory-in-code-vs-reference", "fences-in-code-vs-reference", "code-size-vs-reference",
                  "shared-atomic-replays-vs-reference", "barriers-in-code-vs-reference",
                  "special-functions-in-code-vs-reference", "integer-division-in-code-vs-reference",
                  "mma-shape-in-code-vs-reference", "async-copy-waits-in-code-vs-reference",
                  "atomic-unit-work-vs-reference"}
    for rule_id in load_rules().rules:
        if rule_id in static_only:
            continue
        assert rule_id in covered_quiet, f"{rule_id}: no quiet case"
        assert rule_id in covered_fire | corpus_fires | synthetic_fires | cross_report_fires | basic_set_fires | code_fires, \
            f"{rule_id}: no firing case"


def test_fixture_pair_findings_are_specific(kernels):
    """The CuTe DSL add against the cuBLAS GEMM: what fires, in what order, with which numbers."""
    ev = evaluate_all(kernels["add"], kernels["cublas_gemm"])
    by_id = {f.rule_id: f for f in ev.findings}
    assert set(by_id) == {"narrow-global-access", "stall-long-scoreboard", "tma-share-below-reference",
                          "sm-throughput-below-reference", "address-math-vs-reference", "l1-returns-vs-reference",
                          "dram-traffic-vs-reference"}
    assert "128 B" in by_id["narrow-global-access"].message and "(4 B per lane" in by_id["narrow-global-access"].message
    assert "66.941 cycles per issued instruction" in by_id["stall-long-scoreboard"].message
    tma = by_id["tma-share-below-reference"].message
    assert "0.0% of the 134.218 MB" in tma and "1,048,576 plain global loads" in tma and "163,840 TMA loads" in tma
    assert "35.23 % of peak vs 90.53 %" in by_id["sm-throughput-below-reference"].message
    addr = by_id["address-math-vs-reference"].message
    assert "IMAD 1,572,864 vs 45,316" in addr
    assert "1,572,864 cycles" in by_id["l1-returns-vs-reference"].message
    # Ranked: findings naming a cause before symptoms; among symptoms with a headroom, the larger first.
    causes = [f.cause is not None for f in ev.findings]
    assert causes == sorted(causes, reverse=True)
    symptoms = [f.impact for f in ev.findings if f.cause is None and f.impact is not None]
    assert symptoms == sorted(symptoms, reverse=True)


def test_fixture_pair_reversed_names_the_gemm_limits(kernels):
    ev = evaluate_all(kernels["cublas_gemm"], kernels["add"])
    by_id = {f.rule_id: f for f in ev.findings}
    # cuBLAS sets its registers with setmaxnreg: not register-limited, whatever its launch count says.
    assert "register-pressure" not in by_id
    assert "limited by registers and shared memory" in by_id["occupancy-limiter"].message
    assert "213.188 KB of shared memory per block" in by_id["shared-memory-near-limit"].message
    assert "16,870,196 warp instructions executed vs 8,388,608" in by_id["instruction-inflation-vs-reference"].message
    # Causes before symptoms; severity only breaks ties.
    causes = [f.cause is not None for f in ev.findings]
    assert causes == sorted(causes, reverse=True)


def test_device_limits_come_from_the_report(kernels):
    ev = evaluate_all(kernels["register_heavy"])
    finding = next(f for f in ev.findings if f.rule_id == "register-pressure")
    assert finding.assumptions == []
    limit = next(q for q in finding.quoted if q.name == "reg_limit")
    assert limit.value == 255  # min(device__attribute_max_registers_per_thread, 65536 / (8 warps * 32))
    assert "237 registers/thread" in finding.message


def test_cute_gemm_against_cublas_on_the_same_problem(kernels):
    """The project's GEMM with one consumer warpgroup and 64x128 tiles against cuBLAS, 2048x2048x8192 bf16."""
    ev = evaluate_all(kernels["gemm_wg1_n128"], kernels["cublas"])
    by_id = {f.rule_id: f for f in ev.findings}
    tensor = by_id["tensor-pipe-below-reference"].message
    assert "64.10 % of elapsed cycles vs 89.35 % in the reference" in tensor
    assert "HGMMA 1,048,576 vs 1,048,576" in tensor
    assert "15,424,048 warp instructions executed vs 8,192,796" in by_id["instruction-inflation-vs-reference"].message
    assert "IMAD 694,565 vs 14,464" in by_id["address-math-vs-reference"].message
    # Warp-specialized with setmaxnreg: no register-occupancy finding.
    assert "register-pressure" not in by_id
    assert "more DRAM" not in by_id["dram-traffic-vs-reference"].message and "145.932 MB" in by_id["dram-traffic-vs-reference"].message
    # The default config keeps the tensor pipe as busy as cuBLAS: no tensor-pipe finding there.
    default = {f.rule_id for f in evaluate_all(kernels["gemm_default"], kernels["cublas"]).findings}
    assert "tensor-pipe-below-reference" not in default and "instruction-inflation-vs-reference" not in default


def test_gmma_stall_on_wgmma_only_kernels(kernels):
    """tests/rule_kernels/gmma_bound.py on an H200: the same 4 HGMMA 64x256x16 per round, 2048 rounds, one
    CTA per SM; only the way the warps wait differs."""
    in_flight = {f.rule_id: f for f in evaluate_all(kernels["gmma_in_flight"]).findings}
    msg = in_flight["stall-gmma"].message
    assert "10.317 cycles per issued instruction, 62.6% of all stall cycles (16.468)" in msg
    assert "tensor pipe active 90.60 %, 4,325,376 HGMMA executed" in msg
    lagging = {f.rule_id: f for f in evaluate_all(kernels["gmma_lagging_warp"]).findings}
    msg = lagging["stall-gmma"].message
    assert "8.536 cycles per issued instruction, 73.9% of all stall cycles (11.556)" in msg
    assert "tensor pipe active 47.99 %" in msg
    # Same stall, but a tensor pipe half idle costs more than one that is near its peak.
    assert lagging["stall-gmma"].impact > 5 * in_flight["stall-gmma"].impact
    # A dependent chain (wait_group(0) after every round) waits in WARPGROUP.DEPBAR: ncu counts a barrier stall.
    chain = {f.rule_id: f for f in evaluate_all(kernels["gmma_chain"]).findings}
    assert "stall-gmma" not in chain
    assert "barrier is the largest stall: 16.212 cycles per issued instruction, 86.4%" in chain["stall-barrier"].message


def test_small_grid_names_a_persistent_grid_with_more_blocks_than_tiles(kernels):
    """A persistent grid is one full wave by construction (waves = 1.0), so only the SMs' measured
    activity shows the blocks that had no tile (gemm_mma's 128x256 tiles gave 16 tiles to 132
    blocks at M=128). The project's persistent GEMM report, with its SM activity set to what 16
    working blocks of 132 leave (12%), must name the cause; the real report (93% busy) does not
    (the case above), nor does a full wave busy 80% of the time (a short kernel's ramp and drain)."""
    import copy

    from kernelscope.profiler.record import Metric

    def with_activity(share):
        profile = copy.deepcopy(kernels["gemm_wg1"])
        elapsed = profile.metrics["sm__cycles_elapsed.avg"].value
        profile.metrics["sm__cycles_active.avg"] = Metric(share * elapsed)
        return profile

    assert with_activity(0.12).metrics["launch__waves_per_multiprocessor"].value == pytest.approx(1.0)
    fired = {f.rule_id: f for f in evaluate_all(with_activity(0.12), None, None).findings}
    assert "small-grid" in fired
    assert fired["small-grid"].cause == "grid-too-small"
    assert fired["small-grid"].impact == pytest.approx(0.88, abs=0.01)
    assert "small-grid" not in {f.rule_id for f in evaluate_all(with_activity(0.80), None, None).findings}
