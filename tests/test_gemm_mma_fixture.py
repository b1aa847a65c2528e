"""The ldmatrix path of gemm_mma is free of shared-memory bank conflicts, read off a real H200
report (tests/fixtures/h200-gemm-mma-ldsm.ncu-rep.xz; README there says how it was made).

Launches: [0], [1] M=N=K=4096 (TMA writes stream into the ring while warps run ldmatrix);
[2], [3] M=16896, N=256, K=64 (one k-tile per block: every ldmatrix runs after its stage landed).
ncu's per-instruction counters give the LDSM wavefronts and their ideal count; the pipe-level
bank-conflict counter also counts arbitration with the concurrent TMA writes, which is why it
reads non-zero only where such writes exist."""

import pytest

from kernelscope.profiler.sources import load_profiles
from kernelscope.rules.engine import evaluate_all

REPORT = "h200-gemm-mma-ldsm.ncu-rep"


@pytest.fixture(scope="module")
def launches(fixture_file):
    profiles = load_profiles(fixture_file(REPORT))
    assert len(profiles) == 4
    assert all("MmaSyncGemm" in p.name for p in profiles)
    return profiles


def _value(profile, name):
    metric = profile.metrics.get(name)
    assert metric is not None, f"{name} not collected"
    return metric.value


def test_every_ldmatrix_takes_its_ideal_four_wavefronts(launches):
    for p in launches:
        ldsm = _value(p, "smsp__sass_inst_executed_op_ldsm.sum")
        assert ldsm > 0
        # ncu's own estimate of excess wavefronts over the ideal, from the source counters.
        assert _value(p, "derived__memory_l1_wavefronts_shared_excessive") == 0
        # ldmatrix.x4: 32 rows of 16 bytes = 4 wavefronts of 128 bytes; the only shared loads.
        wavefronts = _value(p, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
        conflicts = _value(p, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
        assert wavefronts == 4 * ldsm + conflicts
        assert _value(p, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum") == 0


def test_bank_conflict_counter_is_zero_without_concurrent_tma_writes(launches):
    for p in launches[2:]:
        assert _value(p, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") == 0
    for p in launches[:2]:
        share = (_value(p, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
                 / _value(p, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"))
        assert 0 <= share < 0.01


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_shared_bank_conflict_rule_does_not_fire(launches, index):
    ev = evaluate_all(launches[index], None, None)
    assert "shared-bank-conflicts" not in {f.rule_id for f in ev.findings}
    assert "shared-bank-conflicts" in ev.passed, ev.not_evaluated.get("shared-bank-conflicts")


def test_uncoalesced_epilogue_stores_claim_only_their_share_of_the_memory_traffic(launches, fixture_file):
    """The register epilogue's bf16x2 stores use 8 B of each sector, but they are under a tenth of
    the sectors the SMs request from L2 (the tile loads are the rest): the finding stays, with a
    headroom of that share, and against cuBLAS it is not the main reason for the gap (it once
    claimed 74% of the kernel and the whole gap)."""
    from kernelscope.rules.diagnosis import diagnose

    p = launches[0]
    fired = {f.rule_id: f for f in evaluate_all(p).findings}
    assert fired["uncoalesced-global-access"].impact == pytest.approx(0.065, abs=0.01)
    cublas = next(k for k in load_profiles(fixture_file("h200-gemm-vs-cublas-4096.quick.ncu-rep")) if "nvjet" in k.name)
    d = diagnose(p, cublas)
    uncoalesced = next(f for f in d.findings if f.rule_id == "uncoalesced-global-access")
    assert uncoalesced.explains < 0.25 and d.main_reason is None


def test_uncoalesced_accesses_that_are_a_sliver_of_the_traffic_are_not_reported(launches):
    """The same stores as a thousandth of the sectors requested from L2 (a flag polled by a few
    warps beside a GEMM's TMA traffic): most of their sectors wasted, none of the time."""
    import copy

    from kernelscope.profiler.record import Metric

    p = copy.deepcopy(launches[0])
    name = "lts__t_sectors_srcunit_tex.sum"
    lsu = sum(_value(p, f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum") for op in ("ld", "st"))
    p.metrics[name] = Metric(lsu * 1000.0, p.metrics[name].unit)
    assert "uncoalesced-global-access" not in {f.rule_id for f in evaluate_all(p).findings}
