"""The rule engine: user rule files, thresholds, validation of malformed files, missing data, ranking."""

from __future__ import annotations

import textwrap

import pytest

from kernelscope.errors import UserError
from kernelscope.profiler.sources import load_profiles
from kernelscope.rules.engine import evaluate_all, load_rules, rewrite_names
from kernelscope.rules.findings import Finding, rank
from rule_files import rule_text, write_rule_file  # noqa: E402  (tests/ is on sys.path)

PAIR = "h200-cute-add-and-cublas-gemm.full.ncu-rep"
MANY = "h200-torch-242-launches.metrics6.ncu-rep"


@pytest.fixture(scope="module")
def pair(fixture_file):
    return load_profiles(fixture_file(PAIR))


def _write(tmp_path, text, name="user-rules.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


USER_RULE = """
[[rule]]
id = "fp32-adds-vs-reference"
title = "More FADD than the reference"
compares = "reference"
severity = "error"
section = "Instruction Statistics"
condition = "target.fadd > reference.fadd + margin"
message = "{target.fadd} FADD vs {reference.fadd}; DRAM read {target.dram_read_bytes}, {delta.instructions_executed} instructions"
hint = "Fuse the adds."
impact = "0.5"
[rule.thresholds]
margin = 1000
"""


def test_user_rule_file_adds_a_rule(pair, tmp_path):
    path = _write(tmp_path, USER_RULE)
    findings = evaluate_all(pair[0], pair[1], extra_rule_files=[path]).findings
    first = next(f for f in findings if f.rule_id == "fp32-adds-vs-reference")
    # A user rule naming no cause is a symptom: it ranks after the findings that name one.
    assert first.severity == "error" and first.cause is None
    assert findings.index(first) > max(i for i, f in enumerate(findings) if f.cause is not None)
    assert first.message == "524,288 FADD vs 0; DRAM read 134.228 MB, -50.3% instructions"
    assert first.rule_file == str(path)
    assert "fp32-adds-vs-reference" not in {f.rule_id for f in evaluate_all(pair[0], pair[1]).findings}


def test_user_file_overrides_a_threshold_and_replaces_a_rule(pair, tmp_path):
    # The add's branch share is 6.25 % vs 5.83 %: quiet at the default (1.25x), fires at 1.05x.
    assert "branch-ratio-vs-reference" not in {f.rule_id for f in evaluate_all(pair[0], pair[1]).findings}
    loose = _write(tmp_path, """
        [thresholds.branch-ratio-vs-reference]
        more = 1.05
        min_points = 0.1
    """)
    fired = {f.rule_id: f for f in evaluate_all(pair[0], pair[1], extra_rule_files=[loose]).findings}
    assert "6.25 % of executed instructions vs 5.83 %" in fired["branch-ratio-vs-reference"].message
    replaced = write_rule_file(tmp_path, "replace.toml", id="tensor-pipe-below-reference", title="Replaced",
                               compares="reference", section="x",
                               condition="target.tensor_pipe_pct < reference.tensor_pipe_pct",
                               message="{target.tensor_pipe_pct} < {reference.tensor_pipe_pct}")
    fired = {f.rule_id: f for f in evaluate_all(pair[0], pair[1], extra_rule_files=[replaced]).findings}
    assert fired["tensor-pipe-below-reference"].title == "Replaced"
    assert fired["tensor-pipe-below-reference"].message == "0.00 % < 90.53 %"


def test_disable_skips_a_rule_and_rejects_unknown_ids(pair):
    ids = {f.rule_id for f in evaluate_all(pair[0], pair[1], disabled=["stall-long-scoreboard"]).findings}
    assert "stall-long-scoreboard" not in ids and "address-math-vs-reference" in ids
    with pytest.raises(UserError, match="--disable no-such-rule: no rule has that id"):
        evaluate_all(pair[0], pair[1], disabled=["no-such-rule"])


MALFORMED = [
    (dict(severity="fatal"), "field 'severity': must be one of error, warning, info"),
    (dict(compares="other"), "field 'compares': must be one of target, reference, baseline"),
    (dict(hint=None), "field 'hint': missing"),
    (dict(condition="target.no_such_metric > 1"), "field 'condition': unknown metric 'no_such_metric'"),
    (dict(condition="target.registers_per_thread >"), "field 'condition': cannot parse"),
    (dict(condition="__import__('os') > 0"), "field 'condition': unknown function '__import__'"),
    (dict(condition="__import__('os').system('true')"), "field 'condition': only plain function calls are allowed"),
    (dict(condition="[1, 2][0] > 0"), "field 'condition': Subscript is not allowed"),
    (dict(condition="target.registers_per_thread.__class__ > 0"), "field 'condition': Attribute is not allowed"),
    (dict(condition="reference.registers_per_thread > 1"), "field 'condition': uses the reference kernel, but the rule has compares = 'target'"),
    (dict(condition="delta.registers_per_thread > 1"), "compares with another kernel"),
    (dict(condition="limit > 1"), "field 'condition': unknown name 'limit'"),
    (dict(condition="device.warp_count > 1"), "unknown device fact 'device.warp_count'"),
    (dict(message="{target.registers_per_thread:furlongs}"), "field 'message': unknown format 'furlongs'"),
    (dict(impact="target.nope"), "field 'impact': unknown metric 'nope'"),
    (dict(colour="red"), "field 'colour': unknown field"),
    (dict(id="Bad Id"), "field 'id': use lower-case letters"),
]


@pytest.mark.parametrize("fields,expected", MALFORMED, ids=[m[1][:40] for m in MALFORMED])
def test_malformed_rule_file_names_file_rule_and_field(tmp_path, fields, expected):
    path = _write(tmp_path, rule_text(**fields))
    with pytest.raises(UserError) as info:
        load_rules([path])
    message = str(info.value)
    assert message.startswith(f"{path}: rule ")
    assert expected in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_malformed_thresholds_and_lets(tmp_path):
    bad_threshold = rule_text() + "[rule.thresholds]\nnear = \"high\"\n"
    with pytest.raises(UserError, match=r"rule 'x-rule': field 'thresholds.near': must be a number"):
        load_rules([_write(tmp_path, bad_threshold, "a.toml")])
    cyclic = rule_text() + "[rule.let]\na = \"b + 1\"\nb = \"a * 2\"\n"
    with pytest.raises(UserError, match=r"rule 'x-rule': field 'let.a': refers to itself through a -> b -> a"):
        load_rules([_write(tmp_path, cyclic, "b.toml")])
    unknown_override = "[thresholds.tail-effect]\nmax_idle = 0.5\n"
    with pytest.raises(UserError, match=r"rule 'tail-effect': field 'thresholds.max_idle': the rule has no such threshold \(it has: min_idle\)"):
        load_rules([_write(tmp_path, unknown_override, "c.toml")])
    with pytest.raises(UserError, match=r"not valid TOML"):
        load_rules([_write(tmp_path, "[[rule]\nid=", "d.toml")])
    with pytest.raises(UserError, match=r"no such rule file"):
        load_rules([tmp_path / "missing.toml"])


def test_missing_metrics_leave_a_rule_unevaluated_never_zero(fixture_file):
    # A report of six metrics: no stall counters, no instruction mix.
    profile = load_profiles(fixture_file(MANY))[0]
    ev = evaluate_all(profile)
    assert "stall-long-scoreboard" in ev.not_evaluated
    assert "target.stall_long_scoreboard" in ev.not_evaluated["stall-long-scoreboard"]
    assert "no-hgmma-on-sm90" in ev.not_evaluated  # the opcode mix was not collected
    assert not any(f.rule_id.startswith("stall-") for f in ev.findings)
    assert set(ev.not_applicable) >= {"tensor-pipe-below-reference", "slower-than-baseline"}


def test_ranking_by_gap_explained_then_headroom_severity_only_breaking_ties():
    def finding(rule_id, severity, impact, explains=None, cause="divergence"):
        return Finding(rule_id, rule_id, severity, "target", "m", "h", "s", impact, "f", cause=cause, explains=explains)

    ranked = rank([finding("a", "info", 0.9), finding("b", "warning", None), finding("c", "warning", 0.2),
                   finding("d", "error", 0.01), finding("e", "warning", 0.6), finding("f", "info", 0.1, 0.8),
                   finding("g", "error", 0.1, 0.3), finding("h", "error", 0.9, 0.9, cause=None),
                   finding("i", "info", 0.6)])
    # Causes first, by share of the gap explained, then headroom; a symptom (no cause) last however large;
    # between equal headrooms the more severe first.
    assert [f.rule_id for f in ranked] == ["f", "g", "a", "e", "i", "c", "d", "b", "h"]


def test_dotted_names_are_rewritten_outside_strings_and_braces():
    assert rewrite_names("target.fadd > 2 * reference.fadd") == "{target.fadd} > 2 * {reference.fadd}"
    assert rewrite_names('mix("target.x") + {target:l1tex__t_sectors.sum}') == 'mix("target.x") + {target:l1tex__t_sectors.sum}'


def test_static_profile_uses_documented_device_limits(pair, tmp_path):
    """A compile-only profile has no device attributes: the sm_90 values are used and the finding says so."""
    pytest.importorskip("cutlass")
    from kernelscope.profiler.static import inspect_target

    spilling = inspect_target("tests/examples/smem_reverse.py:SPEC", config={"scratch": 256}).profiles[0]
    clean = inspect_target("tests/examples/smem_reverse.py:SPEC", config={"scratch": 0}).profiles[0]
    ev = evaluate_all(spilling)
    fired = {f.rule_id: f for f in ev.findings}
    assert "1.040 KB stack frame/thread" in fired["local-memory-in-binary"].message
    # 28 registers at 128 threads: far from the limit computed from the sm_90 register file.
    assert "register-pressure" in ev.passed
    assert "local-memory-in-binary" in evaluate_all(clean).passed
    quoting = write_rule_file(tmp_path, id="register-file", condition="device.registers_per_sm > 0",
                              message="{device.registers_per_sm} registers per SM, {device.max_warps_per_sm} warps")
    finding = next(f for f in evaluate_all(spilling, extra_rule_files=[quoting]).findings if f.rule_id == "register-file")
    assert finding.message == "65,536 registers per SM, 64 warps"
    assert finding.assumptions[0].startswith("device.registers_per_sm = 65536 (documented value for compute capability 9.0")
    measured = next(f for f in evaluate_all(pair[0], extra_rule_files=[quoting]).findings if f.rule_id == "register-file")
    assert measured.assumptions == []
    # Rules for compile-only profiles do not apply to measured ones.
    assert "local-memory-in-binary" in evaluate_all(pair[0]).not_applicable


def test_a_rule_like_an_earlier_one_takes_its_thresholds_and_lets(tmp_path):
    base = rule_text(condition="target.registers_per_thread > near + extra") + \
        "[rule.thresholds]\nnear = 1.0\nfar = 2.0\n[rule.let]\nextra = \"near * 2\"\n"
    like = rule_text(id="y-rule", like="x-rule", condition="target.registers_per_thread > far + extra") + \
        "[rule.thresholds]\nfar = 5.0\n"
    rules = load_rules([_write(tmp_path, base + like)]).rules
    assert rules["y-rule"].thresholds == {"near": 1.0, "far": 5.0}      # its own value wins
    assert rules["x-rule"].thresholds == {"near": 1.0, "far": 2.0}
    assert set(rules["y-rule"].lets) == {"extra"}
    # Only an earlier rule of the same file, and never itself.
    for target in ("z-rule", "y-rule"):
        text = base + rule_text(id="y-rule", like=target)
        with pytest.raises(UserError, match=rf"rule 'y-rule': field 'like': no earlier rule '{target}' in this file"):
            load_rules([_write(tmp_path, text, f"{target}.toml")])
