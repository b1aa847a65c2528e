"""The promise to a user who gets something wrong, over a corpus of bad inputs.

Every case runs one command on one bad input and asserts: the documented exit code (2 usage
or input, 3 environment, 130 Ctrl-C), exactly one line on stderr, no traceback anywhere,
and every file that existed before the command byte-for-byte the same after it.

Cases run in-process through click's CliRunner; only those that need a real process (a
signal, another user's permissions, two commands at once) start one.
"""

from __future__ import annotations

import copy
import hashlib
import json
import lzma
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from kernelscope.cli.main import _register, cli

_register()

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
PAIR = "h200-gemm-vs-cublas-2048.quick.ncu-rep"      # a real two-kernel report with its sidecar
XZ = str(FIX / f"{PAIR}.xz")
PYROOT = str(ROOT / ".pyroot") if (ROOT / ".pyroot").is_dir() else None


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# ------------------------------------------------------------------------------ inputs

@pytest.fixture(scope="session")
def good(tmp_path_factory) -> dict[str, Any]:
    """Good inputs the cases break: a profile JSON (two kernels), a plain report, a baseline."""
    folder = tmp_path_factory.mktemp("good")
    plain = folder / PAIR
    with lzma.open(XZ) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    result = CliRunner().invoke(cli, ["show", str(plain), "--format", "json"])
    assert result.exit_code == 0, result.output
    return {"profile": json.loads(result.stdout), "report": plain.read_bytes(),
            "baseline": json.loads((ROOT / "baselines" / "static-sm90a.json").read_text())}


def _mutated(good: str, mutate: Callable[[dict], Any]) -> Callable[[dict], str]:
    """A file builder: the JSON of the good `good` document ("profile" or "baseline") after `mutate`."""
    def build(g):
        doc = copy.deepcopy(g[good])
        mutate(doc)
        return json.dumps(doc)
    return build


def _profile(mutate: Callable[[dict], Any]) -> Callable[[dict], str]:
    return _mutated("profile", mutate)


def _baseline(mutate: Callable[[dict], Any]) -> Callable[[dict], str]:
    return _mutated("baseline", mutate)


def _parent(doc, path: str):
    """(the node holding the field at `path`, e.g. 'kernels/0/profile/metrics', and the field's key)."""
    *parents, last = path.split("/")
    node = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node, int(last) if isinstance(node, list) else last


def _set(path: str, value) -> Callable[[dict], None]:
    """doc -> doc with the field at `path` replaced."""
    def mutate(doc):
        node, key = _parent(doc, path)
        node[key] = value
    return mutate


def _drop(path: str) -> Callable[[dict], None]:
    def mutate(doc):
        node, key = _parent(doc, path)
        del node[key]
    return mutate


def _report(g) -> bytes:
    return g["report"]


def _truncated(g) -> bytes:
    return g["report"][: len(g["report"]) // 2]


def _corrupt(g) -> bytes:
    raw = bytearray(g["report"])
    raw[200:4000] = b"\xff" * 3800
    return bytes(raw)


def _xz(data: Callable[[dict], bytes]) -> Callable[[dict], bytes]:
    return lambda g: lzma.compress(data(g))


P0 = "kernels/0/profile"
GRID_METRIC = "launch__grid_size"
TIME_METRIC = "gpu__time_duration.sum"
RULE = '''[[rule]]
id = "my-rule"
title = "Mine"
severity = "info"
compares = "reference"
condition = "{target:gpu__time_duration.sum} > 0"
message = "m"
hint = "h"
section = "s"
'''
SUITE_HEAD = '[suite]\nname = "s"\nstatic_only = true\n'


# A user kernel file that is busy for a long time once it has said so: Ctrl-C lands inside it.
SLOW_KERNEL_FILE = """
import pathlib, time
pathlib.Path("ready").write_text("importing")
time.sleep(600)
"""

# ------------------------------------------------------------------------------ the corpus

@dataclass
class Case:
    id: str
    argv: list[str]
    rc: int
    files: dict[str, Any] = field(default_factory=dict)   # name -> str | bytes | builder(good)
    env: dict[str, str] = field(default_factory=dict)
    says: str = ""                 # a word the one line must hold (what was wrong)
    needs_no_gpu: bool = False     # the expected outcome is "no GPU here" (skipped on a GPU machine)
    chmod: dict[str, int] = field(default_factory=dict)
    absent: tuple[str, ...] = ()   # files that must not exist afterwards
    # "cli": in-process; "locked": a process for which file permissions bite (as root, without
    # the capability to override them); "sigint": Ctrl-C once the command is busy; "race": two
    # copies of the command at once.
    mode: str = "cli"


def R(id, name: str, content, says: str) -> Case:
    """`report` of one document that is not what it should be: refused, and no page written."""
    return C(id, f"report {name} -o page.html", files={name: content}, says=says, absent=("page.html",))


def C(id, command: str, rc=2, **kw) -> Case:
    """A case: `command` is the kernelscope command line, split as a shell would (quotes group)."""
    return Case(id, shlex.split(command), rc, **kw)


CORPUS: list[Case] = [
    # --- usage errors, every command: one line, exit 2
    C("no-such-command", "nosuch", says="nosuch"),
    C("show-no-argument", "show", says="REPORT"),
    C("show-unknown-option", f"show {XZ} --bogus", says="--bogus"),
    C("show-bad-format", f"show {XZ} --format xml", says="xml"),
    C("diff-no-argument", "diff", says="A"),
    C("diff-three-arguments", f"diff {XZ} {XZ} {XZ}", says="unexpected"),
    C("diff-top-opcodes-negative", f"diff {XZ} --top-opcodes -5", says="-5"),
    C("diff-top-opcodes-text", f"diff {XZ} --top-opcodes many", says="many"),
    C("views-unknown-option", "views --bogus", says="--bogus"),
    C("rules-list-extra-argument", "rules list extra", says="extra"),
    C("rules-explain-no-id", "rules explain", says="RULE_ID"),
    C("rules-unknown-subcommand", "rules nosuch", says="nosuch"),
    C("inspect-no-target", "inspect", says="TARGET"),
    C("inspect-bad-arch", "inspect gemm --arch sm_80", says="sm_80"),
    C("inspect-bad-format", "inspect gemm --format xml", says="xml"),
    C("run-no-target", "run", says="TARGET"),
    C("run-seed-text", "run gemm --seed abc", says="abc"),
    C("profile-bad-clock", "profile gemm --clock-control turbo", says="turbo"),
    C("profile-launch-count-zero", "profile gemm -c 0", says="0"),
    C("sweep-rep-ms-text", "sweep rmsnorm --rep-ms fast", says="fast"),
    C("gate-no-baseline", "gate", says="--baseline"),
    C("gate-min-effect-text", "gate --baseline b.json --min-effect lots", says="lots"),
    C("baseline-save-no-output", "baseline save", says="--output"),
    C("report-no-input", "report", says="INPUT"),
    C("demo-unknown-option", "demo --bogus", says="--bogus"),

    # --- reports: missing, plain, xz, truncated, corrupt, empty, not a report
    C("show-missing-file", "show nosuch.ncu-rep", says="no such file"),
    C("show-missing-xz", "show nosuch.ncu-rep.xz", says="no such file"),
    C("show-folder", "show .", says="not"),
    C("show-empty-report", "show empty.ncu-rep", files={"empty.ncu-rep": b""}, says="empty.ncu-rep"),
    C("show-truncated-report", "show half.ncu-rep", files={"half.ncu-rep": _truncated}, says="truncated"),
    C("show-corrupt-report", "show bad.ncu-rep", files={"bad.ncu-rep": _corrupt}, says="bad.ncu-rep"),
    C("show-text-as-report", "show notes.ncu-rep", files={"notes.ncu-rep": "hello\n"}, says="not an Nsight"),
    C("show-xz-of-truncated", "show half.ncu-rep.xz", files={"half.ncu-rep.xz": _xz(_truncated)}, says="truncated"),
    C("show-xz-not-xz", "show fake.ncu-rep.xz", files={"fake.ncu-rep.xz": _report}, says="xz"),
    C("show-xz-truncated", "show cut.ncu-rep.xz", files={"cut.ncu-rep.xz": lambda g: lzma.compress(g["report"])[:5000]},
      says="xz"),
    C("show-xz-empty", "show none.ncu-rep.xz", files={"none.ncu-rep.xz": b""}, says="xz"),
    C("show-binary-garbage", "show junk.bin", files={"junk.bin": bytes(range(256)) * 4}, says="junk.bin"),
    C("diff-missing-b", f"diff {XZ}:@0 nosuch.ncu-rep", says="no such file"),
    C("diff-truncated-a", f"diff half.ncu-rep {XZ}:@1", files={"half.ncu-rep": _truncated}, says="truncated"),
    R("report-truncated", "half.ncu-rep", _truncated, says="truncated"),
    C("report-empty-input", "report empty.json -o page.html", files={"empty.json": ""}, absent=("page.html",)),

    # --- kernel selectors
    C("show-no-matching-kernel", f"show {XZ} -k nomatch", says="nomatch"),
    C("show-bad-regex", f"show {XZ} -k (", says="regex"),
    C("show-index-out-of-range", f"show {XZ}:@7", says="@7"),
    C("show-selector-and-k", f"show {XZ}:@0 -k @1", says="not both"),
    C("show-ncu-regex-prefix-no-match", f"show {XZ} -k regex:nomatch", says="nomatch"),
    C("diff-one-report-one-kernel", f"diff {XZ}:nvjet", says="two kernels"),
    C("diff-ambiguous-a", f"diff {XZ} {XZ}:@1", says="matches 2"),
    C("show-view-unknown", f"show {XZ} --view nosuchview", says="nosuchview"),

    # --- kernelscope JSON profiles: wrong types, strings, nulls, zero kernels
    C("json-not-json", "show p.json", files={"p.json": "{not json"}, says="JSON"),
    C("json-empty", "show p.json", files={"p.json": ""}, says="JSON"),
    C("json-list", "show p.json", files={"p.json": "[1, 2]"}, says="kernelscope"),
    C("json-other-schema", "show p.json", files={"p.json": _profile(_set("schema", "kernelscope.gate"))}, says="schema"),
    C("json-schema-version-string", "show p.json", files={"p.json": _profile(_set("schema_version", "1"))},
      says="'1'"),
    C("json-schema-version-2", "show p.json", files={"p.json": _profile(_set("schema_version", 2))}, says="2"),
    C("json-zero-kernels", "show p.json", files={"p.json": _profile(_set("kernels", []))}, says="no kernels"),
    C("json-kernels-not-list", "show p.json", files={"p.json": _profile(_set("kernels", {}))}, says="kernels"),
    C("json-kernel-without-profile", "show p.json", files={"p.json": _profile(_drop("kernels/0/profile"))},
      says="profile"),
    C("json-metric-string", "show p.json",
      files={"p.json": _profile(_set(f"{P0}/metrics/{TIME_METRIC}/value", "fast"))}, says="not a number"),
    C("json-metric-numeric-string", "show p.json",
      files={"p.json": _profile(_set(f"{P0}/metrics/{GRID_METRIC}/value", "16384"))}, says="not a number"),
    C("json-metric-null", "show p.json", files={"p.json": _profile(_set(f"{P0}/metrics/{TIME_METRIC}/value", None))},
      says="null"),
    C("json-metric-without-value", "show p.json", files={"p.json": _profile(_drop(f"{P0}/metrics/{TIME_METRIC}/value"))},
      says="value"),
    C("json-metric-list", "show p.json", files={"p.json": _profile(_set(f"{P0}/metrics/{TIME_METRIC}/value", [1, 2]))},
      says="not a number"),
    C("json-metric-bool", "show p.json", files={"p.json": _profile(_set(f"{P0}/metrics/{TIME_METRIC}/value", True))},
      says="not a number"),
    C("json-metrics-missing", "show p.json", files={"p.json": _profile(_drop(f"{P0}/metrics"))}, says="metrics"),
    C("json-metrics-list", "show p.json", files={"p.json": _profile(_set(f"{P0}/metrics", []))}, says="metrics"),
    C("json-grid-string", "show p.json", files={"p.json": _profile(_set(f"{P0}/grid", "16384"))}, says="grid"),
    C("json-grid-two", "show p.json", files={"p.json": _profile(_set(f"{P0}/grid", [1, 2]))}, says="grid"),
    C("json-block-negative", "show p.json", files={"p.json": _profile(_set(f"{P0}/block", [-1, 1, 1]))}, says="block"),
    C("json-instruction-mix-list", "show p.json", files={"p.json": _profile(_set(f"{P0}/instruction_mix", ["BRA"]))},
      says="instruction_mix"),
    C("json-instruction-mix-string", "show p.json",
      files={"p.json": _profile(_set(f"{P0}/instruction_mix", {"BRA": "many"}))}, says="instruction_mix"),
    C("json-stalls-string", "show p.json", files={"p.json": _profile(_set(f"{P0}/stalls", "none"))}, says="stalls"),
    C("json-name-null", "show p.json", files={"p.json": _profile(_set(f"{P0}/name", None))}, says="name"),
    C("json-index-string", "show p.json", files={"p.json": _profile(_set(f"{P0}/index", "0"))}, says="index"),
    C("json-launches-zero", "show p.json", files={"p.json": _profile(_set(f"{P0}/launches", 0))}, says="launches"),
    C("json-device-list", "show p.json", files={"p.json": _profile(_set(f"{P0}/device", [1]))}, says="device"),
    C("json-device-unknown-field", "show p.json", files={"p.json": _profile(_set(f"{P0}/device/colour", "red"))},
      says="colour"),
    C("json-session-passes-string", "show p.json",
      files={"p.json": _profile(_set(f"{P0}/session/replay_passes", "many"))}, says="replay_passes"),
    C("json-unknown-profile-field", "show p.json", files={"p.json": _profile(_set(f"{P0}/extra", 1))}, says="extra"),
    C("json-xz-corrupt", "show p.json.xz", files={"p.json.xz": b"\xfd7zXZ\x00garbage"}, says="xz"),
    C("diff-json-string-metric", "diff p.json:@0 p.json:@1",
      files={"p.json": _profile(_set(f"{P0}/metrics/{TIME_METRIC}/value", "1e3x"))}, says="not a number"),
    R("report-json-null-metric", "p.json", _profile(_set(f"{P0}/metrics/{TIME_METRIC}/value", None)), says="null"),
    R("report-json-unknown-schema", "p.json", '{"schema": "x"}', says="kernelscope"),

    # --- result documents `report` reads back: diff, gate and sweep JSON
    R("report-diff-views-list", "d.json", '{"schema": "kernelscope.diff", "views": []}', says="views"),
    R("report-diff-metric-id-number", "d.json",
      '{"schema": "kernelscope.diff", "views": {"x": {"metrics": [{"id": 1}]}}}', says="id"),
    R("report-diff-a-number", "d.json", '{"schema": "kernelscope.diff", "a": 3}', says="a must"),
    R("report-diff-count-string", "d.json",
      '{"schema": "kernelscope.diff", "instruction_mix": [{"opcode": "A", "count_a": "x"}]}', says="count_a"),
    R("report-gate-cases-string", "g.json", '{"schema": "kernelscope.gate", "cases": "x"}', says="cases"),
    R("report-gate-change-string", "g.json",
      '{"schema": "kernelscope.gate", "cases": [{"metrics": [{"change": "big"}]}]}', says="change"),
    R("report-sweep-rows-number", "s.json",
      '{"schema": "kernelscope.sweep", "rows": 3, "target": "x", "reference_timing": null}', says="rows"),
    R("report-sweep-config-number", "s.json",
      '{"schema": "kernelscope.sweep", "rows": [{"config": 3}], "target": "x", "reference_timing": null}', says="config"),

    # --- rule files (--rules), --disable
    C("rules-missing-file", f"diff {XZ} --rules nosuch.toml", says="no such rule file"),
    C("rules-not-toml", f"diff {XZ} --rules r.toml", files={"r.toml": "[[rule]\n"}, says="TOML"),
    C("rules-unknown-top-key", f"diff {XZ} --rules r.toml", files={"r.toml": "colour = 1\n"}, says="colour"),
    C("rules-rule-not-array", f"diff {XZ} --rules r.toml", files={"r.toml": "[rule]\nid = 'x'\n"}, says="[[rule]]"),
    C("rules-missing-field", f"diff {XZ} --rules r.toml", files={"r.toml": RULE.replace('hint = "h"\n', "")},
      says="hint"),
    C("rules-bad-severity", f"diff {XZ} --rules r.toml", files={"r.toml": RULE.replace('"info"', '"dire"')},
      says="severity"),
    C("rules-bad-condition", f"diff {XZ} --rules r.toml", files={"r.toml": RULE.replace("> 0", "> > 0")},
      says="condition"),
    C("rules-unsafe-condition", f"diff {XZ} --rules r.toml",
      files={"r.toml": RULE.replace("{target:gpu__time_duration.sum} > 0", "__import__('os').system('true')")},
      says="condition"),
    C("rules-unknown-name", f"diff {XZ} --rules r.toml", files={"r.toml": RULE.replace("gpu__time", "nosuch__time")
                                                                .replace("{target:", "{").replace("}", "}")},
      says="my-rule"),
    C("rules-threshold-unknown-rule", f"diff {XZ} --rules r.toml", files={"r.toml": "[thresholds.nosuch]\nx = 1\n"},
      says="nosuch"),
    C("rules-threshold-string", f"diff {XZ} --rules r.toml",
      files={"r.toml": "[thresholds.branch-ratio-vs-reference]\nmin_ratio = 'high'\n"}),
    C("rules-duplicate-id", f"diff {XZ} --rules r.toml", files={"r.toml": RULE + RULE}, says="twice"),
    C("rules-file-is-folder", f"diff {XZ} --rules sub", files={"sub/x": ""}, says="sub"),
    C("rules-binary-file", f"diff {XZ} --rules r.toml", files={"r.toml": b"\xff\xfe\x00\x01"}, says="r.toml"),
    C("disable-unknown-id", f"diff {XZ} --disable nosuch-rule", says="nosuch-rule"),
    C("rules-list-bad-file", "rules list --rules r.toml", files={"r.toml": "[[rule]]\nid = 3\n"}, says="r.toml"),
    C("rules-explain-unknown", "rules explain nosuch-rule", says="nosuch-rule"),
    C("report-rules-bad", f"report {XZ} -o page.html --rules r.toml", files={"r.toml": "x = [\n"}, says="TOML",
      absent=("page.html",)),

    # --- catalog files (--catalog)
    C("catalog-missing", f"show {XZ} --catalog nosuch.toml", says="no such catalog"),
    C("catalog-not-toml", f"show {XZ} --catalog c.toml", files={"c.toml": "[[metric]\n"}, says="TOML"),
    C("catalog-non-table-entry", f"show {XZ} --catalog c.toml", files={"c.toml": 'metric = ["x"]\n'}, says="[[metric]]"),
    C("catalog-view-not-table", "views --catalog c.toml", files={"c.toml": "view = 3\n"}, says="[[view]]"),
    C("catalog-unknown-view", f"show {XZ} --catalog c.toml",
      files={"c.toml": '[[metric]]\nid="x"\nlabel="X"\nview="nope"\nunit="ns"\nbetter="lower"\nmetric="a__b.sum"\n'},
      says="nope"),
    C("catalog-bad-better", "views --catalog c.toml",
      files={"c.toml": '[[metric]]\nid="x"\nlabel="X"\nview="launch"\nunit="ns"\nbetter="up"\nmetric="a__b.sum"\n'},
      says="better"),
    C("catalog-label-number", "views --catalog c.toml",
      files={"c.toml": '[[metric]]\nid="x"\nlabel=3\nview="launch"\nunit="ns"\nbetter="lower"\nmetric="a__b.sum"\n'},
      says="label"),
    C("catalog-unknown-top-key", "views --catalog c.toml", files={"c.toml": "colour = 1\n"}, says="colour"),
    C("catalog-binary", "views --catalog c.toml", files={"c.toml": b"\xff\xfe\xfd"}, says="c.toml"),

    # --- baselines and suites (gate, baseline save): refused before anything is compiled
    C("gate-missing-baseline", "gate --baseline nosuch.json", says="no such"),
    C("gate-baseline-not-json", "gate --baseline b.json", files={"b.json": "{"}, says="JSON"),
    C("gate-baseline-other-schema", "gate --baseline b.json", files={"b.json": '{"schema": "x"}'}, says="baseline"),
    C("gate-baseline-version", "gate --baseline b.json", files={"b.json": _baseline(_set("schema_version", 99))},
      says="99"),
    C("gate-baseline-cases-not-list", "gate --baseline b.json", files={"b.json": _baseline(_set("cases", {}))},
      says="cases"),
    C("gate-baseline-case-without-id", "gate --baseline b.json", files={"b.json": _baseline(_drop("cases/0/id"))},
      says="id"),
    C("gate-missing-suite", "gate --baseline b.json --suite nosuch.toml", files={"b.json": _baseline(lambda d: d)},
      says="nosuch.toml"),
    C("gate-suite-not-toml", "gate --baseline b.json --suite s.toml", files={"b.json": _baseline(lambda d: d),
                                                                            "s.toml": "[suite\n"}, says="TOML"),
    C("gate-suite-unknown-table", "gate --baseline b.json --suite s.toml",
      files={"b.json": _baseline(lambda d: d), "s.toml": SUITE_HEAD + "[colour]\n"}, says="colour"),
    C("gate-suite-unknown-key", "gate --baseline b.json --suite s.toml",
      files={"b.json": _baseline(lambda d: d), "s.toml": SUITE_HEAD + "speed = 3\n"}, says="speed"),
    C("gate-suite-no-cases", "gate --baseline b.json --suite s.toml",
      files={"b.json": _baseline(lambda d: d), "s.toml": SUITE_HEAD}, says="s.toml"),
    C("gate-suite-unknown-target", "gate --baseline b.json --suite s.toml",
      files={"b.json": _baseline(lambda d: d), "s.toml": SUITE_HEAD + '[[case]]\nname="x"\ntarget="nosuch"\n'},
      says="nosuch"),
    C("gate-suite-bad-rule", "gate --baseline b.json --suite s.toml",
      files={"b.json": _baseline(lambda d: d), "s.toml": SUITE_HEAD + '[[case]]\nname="x"\ntarget="rmsnorm"\n'
                                                                    '[[rule]]\nmatch="static:*"\nrel=-1\n'},
      says="rel"),
    C("gate-rule-without-value", "gate --baseline b.json --rule static:* rel",
      files={"b.json": _baseline(lambda d: d)}, says="KEY=VALUE"),
    C("gate-rule-not-number", "gate --baseline b.json --rule static:* rel=big",
      files={"b.json": _baseline(lambda d: d)}, says="big"),
    C("gate-rule-unknown-key", "gate --baseline b.json --rule static:* speed=1",
      files={"b.json": _baseline(lambda d: d)}, says="speed"),
    C("gate-rule-bad-better", "gate --baseline b.json --rule timing:* better=up",
      files={"b.json": _baseline(lambda d: d)}, says="better"),
    C("gate-min-effect-negative", "gate --baseline b.json --min-effect -1", files={"b.json": _baseline(lambda d: d)},
      says="min-effect"),
    C("gate-alpha-out-of-range", "gate --baseline b.json --alpha 2", files={"b.json": _baseline(lambda d: d)},
      says="alpha"),
    C("gate-suite-and-report", "gate --baseline b.json --suite s.toml --report r.ncu-rep", says="not both"),
    C("gate-report-truncated", "gate --baseline b.json --report half.ncu-rep",
      files={"b.json": _baseline(lambda d: d), "half.ncu-rep": _truncated}, says="truncated"),
    C("baseline-save-suite-and-report", "baseline save --suite s.toml --report r.ncu-rep -o new.json", says="not both",
      absent=("new.json",)),
    C("baseline-save-missing-suite", "baseline save --suite nosuch.toml -o new.json", says="nosuch.toml",
      absent=("new.json",)),
    C("baseline-save-report-truncated", "baseline save --report half.ncu-rep -o new.json",
      files={"half.ncu-rep": _truncated}, says="truncated", absent=("new.json",)),

    # --- existing output files and missing output folders: refused before any work
    C("gate-save-run-exists", "gate --baseline b.json --save-run old.json",
      files={"b.json": _baseline(lambda d: d), "old.json": "{}"}, says="--force"),
    C("gate-markdown-exists", "gate --baseline b.json --markdown gate.md",
      files={"b.json": _baseline(lambda d: d), "gate.md": "kept"}, says="--force"),
    C("gate-junit-exists", "gate --baseline b.json --junit gate.xml",
      files={"b.json": _baseline(lambda d: d), "gate.xml": "kept"}, says="--force"),
    C("gate-json-exists", "gate --baseline b.json --json v.json",
      files={"b.json": _baseline(lambda d: d), "v.json": "kept"}, says="--force"),
    C("gate-same-file-twice", "gate --baseline b.json --json v.json --markdown v.json",
      files={"b.json": _baseline(lambda d: d)}, says="different files"),
    C("gate-output-folder-missing", "gate --baseline b.json --junit nodir/gate.xml",
      files={"b.json": _baseline(lambda d: d)}, says="does not exist"),
    C("gate-output-is-folder", "gate --baseline b.json --json sub", files={"b.json": _baseline(lambda d: d),
                                                                           "sub/x": ""}, says="folder"),
    C("baseline-save-exists", "baseline save --static-only -o old.json", files={"old.json": "{}"}, says="--force"),
    C("baseline-save-folder-missing", "baseline save --static-only -o nodir/new.json", says="does not exist"),
    C("report-output-exists", f"report {XZ} -o page.html", files={"page.html": "kept"}, says="--force"),
    C("report-output-folder-missing", f"report {XZ} -o nodir/page.html", says="does not exist"),
    C("report-output-is-folder", f"report {XZ} -o sub", files={"sub/x": ""}, says="directory"),
    C("report-png-is-file", f"report {XZ} -o page.html --png plots", files={"plots": "a file"}, says="plots",
      absent=("page.html",)),
    C("report-png-parent-missing", f"report {XZ} -o page.html --png nodir/plots", says="does not exist",
      absent=("page.html",)),
    C("report-three-inputs", f"report {XZ} {XZ} {XZ}", says="one or two"),
    C("run-json-exists", "run rmsnorm --json out.json", files={"out.json": "[]"}, says="--force"),
    C("run-json-folder-missing", "run rmsnorm --json nodir/out.json", says="does not exist"),
    C("sweep-json-exists", "sweep rmsnorm --json out.json", files={"out.json": "{}"}, says="--force"),
    C("profile-report-exists", "profile rmsnorm -o old.ncu-rep", files={"old.ncu-rep": "kept"}, says="--force"),
    C("profile-sidecar-exists", "profile rmsnorm -o old.ncu-rep",
      files={"old.ncu-rep.kernelscope.json": "{}"}, says="--force"),
    C("profile-report-folder-missing", "profile rmsnorm -o nodir/r.ncu-rep", says="does not exist"),

    # --- sidecars beside `profile` reports
    R("report-sidecar-without-report", "r.ncu-rep.kernelscope.json",
      lambda g: (FIX / f"{PAIR}.kernelscope.json").read_text().replace("/root/out/", "/nonexistent/"),
      says="not there"),
    R("report-sidecar-not-json", "r.ncu-rep.kernelscope.json", "{", says="JSON"),
    R("report-sidecar-request-not-object", "r.ncu-rep.kernelscope.json",
      '{"request": 3, "command_line": "x"}', says="kernelscope"),

    # --- targets, shapes, configs (run, profile, sweep, inspect): refused before GPU or compile
    C("run-unknown-target", "run nosuch", says="nosuch"),
    C("run-py-without-name", "run x.py", says="x.py:NAME"),
    C("run-missing-file", "run nosuch.py:SPEC", says="nosuch.py"),
    C("run-file-without-spec", "run k.py:SPEC", files={"k.py": "X = 1\n"}, says="SPEC"),
    C("run-file-syntax-error", "run k.py:SPEC", files={"k.py": "def (\n"}, says="k.py"),
    C("run-file-exits", "run k.py:SPEC", files={"k.py": "import sys\nsys.exit(7)\n"}, says="sys.exit"),
    C("run-file-exits-zero", "inspect k.py:SPEC", files={"k.py": "raise SystemExit(0)\n"}, says="sys.exit"),
    C("run-spec-wrong-type", "run k.py:SPEC", files={"k.py": "SPEC = 3\n"}, says="KernelSpec"),
    C("run-shape-not-number", "run gemm --shape M=abc,N=1,K=1", says="abc"),
    C("run-shape-huge", "run gemm --shape M=99999999999999999999,N=64,K=64", says="M"),
    C("run-shape-negative", "run gemm --shape M=-1,N=64,K=64", says="negative"),
    C("run-shape-zero", "run gemm --shape M=0,N=64,K=64", says="positive"),
    C("run-shape-wrong-keys", "run gemm --shape X=1", says="shape keys"),
    C("run-shape-empty", "run gemm --shape ''", says="empty"),
    C("run-config-unknown-key", "run gemm --config colour=3", says="colour"),
    C("run-config-not-key-value", "run gemm --config tile_n", says="KEY=VALUE"),
    C("run-dtype-unknown", "run gemm --dtype int3", says="int3"),
    C("run-reference-unknown", "run gemm --vs nosuch", says="nosuch"),
    C("profile-config-type", "profile rmsnorm --config threads=abc", says="threads"),
    C("profile-set-unknown", "profile rmsnorm --set nosuchset", says="nosuchset"),
    C("profile-set-mixed", "profile rmsnorm --set full --set SpeedOfLight", says="combined"),
    C("profile-section-bad-name", "profile rmsnorm --section speed-of-light", says="speed-of-light"),
    C("profile-metrics-bad-name", "profile rmsnorm --metrics 'dram bytes'", says="metric"),
    C("sweep-config-type", "sweep rmsnorm --config threads=abc", says="threads"),
    C("sweep-config-no-values", "sweep rmsnorm --config threads=", says="threads"),
    C("inspect-unknown-target", "inspect nosuch", says="nosuch"),
    C("inspect-shape-not-integer", "inspect gemm --shape M=abc", says="M"),
    C("inspect-shape-huge", "inspect gemm --shape M=99999999999999999999", says="M"),
    C("inspect-config-not-key-value", "inspect gemm --config tile_n", says="KEY=VALUE"),
    C("inspect-save-sass-is-file", "inspect gemm --save-sass out.txt", files={"out.txt": "kept"}, says="out.txt"),
    C("inspect-file-exits", "inspect k.py:SPEC", files={"k.py": "import sys\nsys.exit(3)\n"}, says="sys.exit"),

    # --- the environment (exit 3)
    C("inspect-cache-dir-is-file", "inspect rmsnorm", rc=3, files={"cachefile": "x"},
      env={"KERNELSCOPE_CACHE_DIR": "{T}/cachefile"}, says="KERNELSCOPE_CACHE_DIR"),
    C("inspect-cache-dir-under-file", "inspect rmsnorm", rc=3, files={"cachefile": "x"},
      env={"KERNELSCOPE_CACHE_DIR": "{T}/cachefile/sub"}, says="is a file"),
    C("run-no-gpu", "run rmsnorm", rc=3, says="GPU", needs_no_gpu=True),
    C("profile-no-gpu", "profile rmsnorm", rc=3, says="GPU", needs_no_gpu=True),
    C("sweep-no-gpu", "sweep rmsnorm", rc=3, says="GPU", needs_no_gpu=True),
    C("run-no-gpu-json-not-written", "run rmsnorm --json out.json", rc=3, says="GPU", needs_no_gpu=True,
      absent=("out.json",)),

    # --- permissions: files this user may not read, folders it may not write
    C("locked-report", "show r.ncu-rep", files={"r.ncu-rep": _report}, chmod={"r.ncu-rep": 0}, mode="locked",
      says="r.ncu-rep"),
    C("locked-xz-report", "show r.ncu-rep.xz", files={"r.ncu-rep.xz": _xz(_report)}, chmod={"r.ncu-rep.xz": 0},
      mode="locked", says="r.ncu-rep.xz"),
    C("locked-json-profile", "show p.json", files={"p.json": _profile(lambda d: d)}, chmod={"p.json": 0},
      mode="locked", says="p.json"),
    C("locked-rule-file", f"diff {XZ} --rules r.toml", files={"r.toml": RULE}, chmod={"r.toml": 0}, mode="locked",
      says="r.toml"),
    C("locked-catalog-file", "views --catalog c.toml", files={"c.toml": ""}, chmod={"c.toml": 0}, mode="locked",
      says="c.toml"),
    C("locked-baseline", "gate --baseline b.json", files={"b.json": _baseline(lambda d: d)}, chmod={"b.json": 0},
      mode="locked", says="b.json"),
    C("locked-suite", "gate --baseline b.json --suite s.toml", files={"b.json": _baseline(lambda d: d),
                                                                    "s.toml": SUITE_HEAD},
      chmod={"s.toml": 0}, mode="locked", says="s.toml"),
    C("locked-sidecar", "report r.ncu-rep.kernelscope.json -o page.html", files={"r.ncu-rep.kernelscope.json": "{}"},
      chmod={"r.ncu-rep.kernelscope.json": 0}, mode="locked", says="kernelscope.json", absent=("page.html",)),
    C("locked-output-folder-report", f"report {XZ} -o ro/page.html", files={"ro/keep": "x"}, chmod={"ro": 0o555},
      mode="locked", says="not writable", absent=("ro/page.html",)),
    C("locked-output-folder-gate", "gate --baseline b.json --json ro/v.json",
      files={"b.json": _baseline(lambda d: d), "ro/keep": "x"}, chmod={"ro": 0o555}, mode="locked",
      says="not writable"),
    C("locked-user-kernel-file", "inspect k.py:SPEC", files={"k.py": "X = 1\n"}, chmod={"k.py": 0}, mode="locked",
      says="k.py"),

    # --- Ctrl-C once the command is busy: exit 130, one line, nothing half-written
    C("sigint-run-json", "run k.py:SPEC --json out.json", rc=130, files={"k.py": SLOW_KERNEL_FILE}, mode="sigint",
      says="interrupted", absent=("out.json",)),
    C("sigint-inspect", "inspect k.py:SPEC", rc=130, files={"k.py": SLOW_KERNEL_FILE}, mode="sigint",
      says="interrupted"),
    C("sigint-gate-save-run", "gate --baseline b.json --suite s.toml --save-run run.json --json v.json --quiet", rc=130,
      files={"k.py": SLOW_KERNEL_FILE, "b.json": _baseline(lambda d: d),
             "s.toml": SUITE_HEAD + '[[case]]\nname="slow"\ntarget="k.py:SPEC"\n'},
      mode="sigint", says="interrupted", absent=("run.json", "v.json")),
    C("sigint-baseline-save", "baseline save --suite s.toml -o new.json --quiet", rc=130,
      files={"k.py": SLOW_KERNEL_FILE, "s.toml": SUITE_HEAD + '[[case]]\nname="slow"\ntarget="k.py:SPEC"\n'},
      mode="sigint", says="interrupted", absent=("new.json",)),

    # --- two commands at once writing one file: one writes it, the other is refused
    C("race-report-same-output", f"report {XZ} -o page.html", mode="race", says="--force"),
    C("race-baseline-save-same-output", f"baseline save --report {XZ} -o b.json", mode="race", says="b.json"),
]


def _materialise(case: Case, folder: Path, good: dict) -> None:
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        value = content(good) if callable(content) else content
        if isinstance(value, str):
            path.write_text(value)
        else:
            path.write_bytes(value)


def _snapshot(paths: list[Path]) -> dict[str, str]:
    out = {}
    for root in paths:
        if root.is_file():
            out[str(root)] = hashlib.sha256(root.read_bytes()).hexdigest()
        elif root.is_dir():
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def check_promise(rc: int, expected_rc: int, stdout: str, stderr: str, says: str = "") -> None:
    assert "Traceback" not in stdout + stderr, stdout + stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"stderr must be one line, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("kernelscope: "), lines[0]
    assert rc == expected_rc, f"exit {rc}, expected {expected_rc}: {lines[0]}"
    if says:
        assert says.lower() in lines[0].lower(), f"{says!r} not in: {lines[0]}"


# Root reads and writes past file permissions through two capabilities; without them (and
# for any other user as is) permissions bite.
PERMISSIONS_BITE = os.geteuid() != 0 or shutil.which("setpriv") is not None
NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def _process_env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "120", "KERNELSCOPE_CACHE_DIR": str(tmp_path / ".." / f"{tmp_path.name}-cache"),
           **extra}
    if PYROOT:
        env["PYTHONPATH"] = PYROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _command(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "kernelscope", *argv]


def _run_process(case: Case, tmp_path: Path, env: dict[str, str]) -> tuple[int, str, str]:
    env = _process_env(tmp_path, env)
    if case.mode == "locked":
        for name, mode in case.chmod.items():
            os.chmod(tmp_path / name, mode)
        try:
            p = subprocess.run(NO_OVERRIDE + _command(case.argv), cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=300)
        finally:
            for name in case.chmod:
                os.chmod(tmp_path / name, 0o755 if (tmp_path / name).is_dir() else 0o644)
        return p.returncode, p.stdout, p.stderr
    if case.mode == "sigint":
        p = subprocess.Popen(_command(case.argv), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 240
        while not (tmp_path / "ready").exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.poll() is None, f"the command ended before it was busy: {p.communicate()}"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        (tmp_path / "ready").unlink()
        return p.returncode, out, err
    if case.mode == "race":
        procs = [subprocess.Popen(_command(case.argv), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [(p, *p.communicate(timeout=300)) for p in procs]
        winners = [r for r in results if r[0].returncode == 0]
        losers = [r for r in results if r[0].returncode != 0]
        assert len(winners) == 1, [(p.returncode, err) for p, _, err in results]
        p, out, err = losers[0]
        return p.returncode, out, err
    raise AssertionError(f"unknown mode {case.mode}")


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_bad_input(case: Case, tmp_path, good, monkeypatch):
    if case.needs_no_gpu and _cuda():
        pytest.skip("the case is about a machine without a GPU")
    if case.mode == "locked" and not PERMISSIONS_BITE:
        pytest.skip("running as root without setpriv: file permissions cannot bite")
    _materialise(case, tmp_path, good)
    monkeypatch.chdir(tmp_path)
    env = {k: v.replace("{T}", str(tmp_path)) for k, v in case.env.items()}
    inputs = [Path(a) for a in case.argv if os.path.isabs(a) and os.path.exists(a)]
    before = _snapshot([tmp_path, *inputs])
    if case.mode == "cli":
        result = CliRunner().invoke(cli, case.argv, env={"COLUMNS": "120", **env})
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"uncaught {type(result.exception).__name__}: {result.exception}") \
                from result.exception
        rc, stdout, stderr = result.exit_code, result.stdout, result.stderr
    else:
        rc, stdout, stderr = _run_process(case, tmp_path, env)
    check_promise(rc, case.rc, stdout, stderr, case.says)
    after = _snapshot([tmp_path, *inputs])
    changed = [p for p in before if after.get(p) != before[p]]
    assert not changed, f"files changed or removed: {changed}"
    for name in case.absent:
        assert not (tmp_path / name).exists(), f"{name} was written"
    leftovers = [p for p in after if p not in before and Path(p).name.startswith(".")]
    assert not leftovers, f"temporary files left behind: {leftovers}"


def test_corpus_is_large_and_covers_every_command():
    assert len(CORPUS) >= 120
    ids = [c.id for c in CORPUS]
    assert len(ids) == len(set(ids))
    commands = {c.argv[0] for c in CORPUS}
    assert {"show", "diff", "views", "rules", "inspect", "run", "profile", "sweep", "gate", "baseline", "report",
            "demo"} <= commands
    assert {"cli", "locked", "sigint", "race"} == {c.mode for c in CORPUS}
