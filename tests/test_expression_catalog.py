"""The safe expression language and the metric catalog loaded from data files."""

import pytest

from kernelscope.errors import UserError
from kernelscope.profiler.catalog import evaluate, load_catalog
from kernelscope.profiler.expression import ExpressionError, parse
from kernelscope.profiler.record import KernelProfile, Metric


def test_arithmetic_with_braced_metric_names():
    e = parse("{a.sum} / {b.sum} * 100")
    values = {"a.sum": 3.0, "b.sum": 4.0}
    assert e.evaluate(lambda n: None, resolve_braced=values.get) == 75.0
    assert e.braced == {"a.sum", "b.sum"}


def test_missing_data_stays_unknown():
    e = parse("{a} + 1")
    assert e.evaluate(lambda n: None) is None
    assert parse("x > 1 and y > 1").evaluate({"x": 0, "y": None}.get) is False   # a known False decides
    assert parse("x > 1 and y > 1").evaluate({"x": 5, "y": None}.get) is None
    assert parse("x > 1 or y > 1").evaluate({"x": 5, "y": None}.get) is True
    assert parse("a / b").evaluate({"a": 1, "b": 0}.get) is None


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",
    "().__class__",
    "[x for x in y]",
    "lambda: 1",
    "open('f')",
    "a.b",
    "x[0]",
])
def test_unsafe_or_unknown_constructs_are_refused(text):
    with pytest.raises(ExpressionError):
        parse(text, allowed_functions={"mix"})


def test_catalog_has_the_views_and_every_entry_is_complete():
    catalog = load_catalog()
    for view in ("launch", "throughput", "memory", "instructions", "stalls"):
        assert catalog.views[view].metrics, view
    for m in catalog.metrics.values():
        assert m.label and m.unit and m.description and m.better in ("lower", "higher", "none")
        assert m.sources or m.formula is not None or m.computed is not None
    ids = set(catalog.metrics)
    for wanted in ("registers_per_thread", "duration", "sm_throughput_pct", "tensor_pipe_pct", "dram_read_bytes",
                   "l2_hit_rate", "l1_hit_rate", "l2_to_l1_bytes", "l1_to_l2_bytes", "tma_load_bytes",
                   "tma_store_bytes", "tma_load_instructions", "ldgsts_instructions", "local_spill_bytes",
                   "shared_bank_conflicts_ld", "branch_ratio", "uniform_share", "hgmma", "hmma", "r2ur", "s2ur",
                   "umov", "fadd", "fmul", "ffma", "imad", "lea", "stall_long_scoreboard", "stall_gmma"):
        assert wanted in ids, wanted


def _profile(metrics=None, mix=None):
    return KernelProfile(source="t", index=0, kind="kernel", name="k", demangled_name="k",
                         metrics={k: Metric(v) for k, v in (metrics or {}).items()}, instruction_mix=mix or {})


def test_mix_formulas_distinguish_not_collected_from_zero():
    catalog = load_catalog()
    hgmma = catalog.metrics["hgmma"]
    assert evaluate(hgmma, _profile()) is None                      # no mix collected
    assert evaluate(hgmma, _profile(mix={"FFMA": 10.0})) == 0.0     # collected, none executed
    share = catalog.metrics["address_math_share"]
    # Integer index math only: FADD is floating-point work, not address arithmetic.
    assert evaluate(share, _profile(mix={"FADD": 1.0, "IMAD": 1.0, "HGMMA": 2.0})) == pytest.approx(25.0)


def test_metric_alternatives_take_the_first_present():
    clock = load_catalog().metrics["sm_clock"]
    assert evaluate(clock, _profile({"sm__cycles_elapsed.avg.per_second": 1.5e9})) == 1.5e9
    assert evaluate(clock, _profile({"gpc__cycles_elapsed.avg.per_second": 1.9e9, "sm__cycles_elapsed.avg.per_second": 1.5e9})) == 1.9e9


def test_user_catalog_adds_and_overrides(tmp_path):
    extra = tmp_path / "mine.toml"
    extra.write_text(
        '[[metric]]\nid = "duration"\nlabel = "Kernel time"\nview = "throughput"\nmetric = "gpu__time_duration.sum"\n'
        'unit = "ns"\nbetter = "lower"\n\n'
        '[[view]]\nname = "mine"\ntitle = "Mine"\n\n'
        '[[metric]]\nid = "fma_share"\nlabel = "FFMA share"\nview = "mine"\nformula = "mix(\\"FFMA\\") / mix_total() * 100"\n'
        'unit = "%"\nbetter = "none"\n'
    )
    catalog = load_catalog([extra])
    assert catalog.metrics["duration"].label == "Kernel time"
    assert catalog.views["throughput"].metrics.count("duration") == 1
    assert catalog.views["mine"].metrics == ("fma_share",)


MINIMAL_METRIC = dict(id="x", label="X", view="launch", unit="ns", better="lower", metric="m")


@pytest.mark.parametrize("fields, message", [
    (dict(metric=None), "metric 'x': give exactly one of 'metric' or 'formula'"),
    (dict(better="up"), "metric 'x': field 'better'"),
    (dict(metric=None, formula="a.b + 1"), "metric 'x': field 'formula'"),
    (dict(label=None), "metric 'x': missing field 'label'"),
    (dict(view="elsewhere"), "field 'view': unknown view"),
    (None, "not valid TOML"),
])
def test_malformed_catalog_names_file_entry_and_field(tmp_path, fields, message):
    # One [[metric]] entry: MINIMAL_METRIC with `fields` over it (None drops a field); None: not TOML.
    bad = tmp_path / "bad.toml"
    if fields is None:
        bad.write_text("not toml = = =")
    else:
        entry = {k: v for k, v in {**MINIMAL_METRIC, **fields}.items() if v is not None}
        bad.write_text("[[metric]]\n" + "".join(f'{k} = "{v}"\n' for k, v in entry.items()))
    with pytest.raises(UserError) as e:
        load_catalog([bad])
    assert str(bad) in str(e.value) and message in str(e.value)


def test_when_leaves_a_value_unknown_where_it_means_nothing():
    from kernelscope.profiler.expression import FUNCTIONS
    e = parse("when(x > 0, y)", set(FUNCTIONS))
    assert e.evaluate({"x": 3, "y": 16}.get, functions=FUNCTIONS) == 16
    assert e.evaluate({"x": 0, "y": 0}.get, functions=FUNCTIONS) is None
    assert e.evaluate({"x": None, "y": 16}.get, functions=FUNCTIONS) is None
    # ncu reports 0 bytes used per sector for loads a kernel never executed (a TMA-fed GEMM):
    # that is n/a, not the worst coalescing there is.
    per_sector = load_catalog().metrics["global_ld_bytes_per_sector"]
    ratio = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"
    count = "smsp__sass_inst_executed_op_global_ld.sum"
    assert evaluate(per_sector, _profile({ratio: 0.0, count: 0.0})) is None
    assert evaluate(per_sector, _profile({ratio: 8.0, count: 100.0})) == 8.0
    assert evaluate(per_sector, _profile({ratio: 8.0})) == 8.0            # count not collected: as reported
