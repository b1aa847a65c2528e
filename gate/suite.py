"""Suites: what the gate measures. A suite (TOML) lists cases: a target, an optional
reference, shapes, configs, dtypes and archs; each combination is one Case."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from kernelscope.errors import UserError
from kernelscope.gate.policy import MetricRule
from kernelscope.profiler.documents import read_toml

_SUITE_KEYS = {"name", "description", "static_only", "registry", "samples", "warmup_ms", "flush_l2",
               "fresh_inputs", "ncu", "ncu_sections", "cache_control", "seed"}
_CASE_KEYS = {"name", "target", "reference", "shape", "shapes", "config", "configs", "dtype", "dtypes",
              "arch", "archs", "samples", "ncu", "seed"}


@dataclass
class Case:
    """One measured unit: a target at one shape, config, dtype and arch."""

    id: str
    target: str
    reference: str | None
    shape: dict[str, int]             # empty: the target's first default shape
    config: dict[str, Any]            # overrides on the target's default config
    dtype: str | None                 # None: the target's first dtype
    arch: str
    samples: int
    ncu: bool
    seed: int


@dataclass
class Suite:
    path: str
    name: str
    description: str = ""
    static_only: bool = False
    registry: bool = False            # also every registered target x its archs, default config
    samples: int = 100
    warmup_ms: float = 25.0
    flush_l2: bool = True
    fresh_inputs: bool = False        # new input values before every timed launch
    ncu: bool = False
    ncu_sections: str | list[str] = "quick"
    cache_control: str = "all"
    seed: int = 0
    cases: list[Case] = field(default_factory=list)
    rules: list[MetricRule] = field(default_factory=list)


def _as_list(entry: Mapping[str, Any], single: str, plural: str, where: str) -> list | None:
    if single in entry and plural in entry:
        raise UserError(f"{where}: give either {single} or {plural}, not both")
    if plural in entry:
        value = entry[plural]
        if not isinstance(value, list) or not value:
            raise UserError(f"{where}: {plural} must be a non-empty list")
        return list(value)
    if single in entry:
        return [entry[single]]
    return None


def _check_positive_int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UserError(f"{what} must be a positive integer, not {value!r}")
    return value


def _shape_text(shape: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def _config_text(config: Mapping[str, Any]) -> str:
    def fmt(v):
        return "x".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v).lower() if isinstance(v, bool) else str(v)
    return ",".join(f"{k}={fmt(v)}" for k, v in config.items()) or "default"


def _tuples(config: Mapping[str, Any]) -> dict[str, Any]:
    # TOML has arrays, kernels take tuples (cluster = [2, 1] -> (2, 1)).
    return {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}


def expand_case(entry: Mapping[str, Any], suite: Suite, where: str) -> list[Case]:
    unknown = sorted(set(entry) - _CASE_KEYS)
    if unknown:
        raise UserError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(_CASE_KEYS))})")
    target = entry.get("target")
    if not isinstance(target, str) or not target:
        raise UserError(f"{where}: `target` must name a registered kernel or path/to/file.py:NAME")
    name = entry.get("name", target)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.:+\-]+", name):
        raise UserError(f"{where}: name {name!r} may hold letters, digits and . _ - + : only")
    reference = entry.get("reference") or None
    shapes = _as_list(entry, "shape", "shapes", where) or [{}]
    configs = _as_list(entry, "config", "configs", where) or [{}]
    dtypes = _as_list(entry, "dtype", "dtypes", where) or [None]
    archs = _as_list(entry, "arch", "archs", where) or ["sm_90a"]
    for s in shapes:
        if not isinstance(s, dict) or any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in s.values()):
            raise UserError(f"{where}: each shape is a table of positive integers, e.g. {{M = 4096, N = 4096}}")
    for c in configs:
        if not isinstance(c, dict):
            raise UserError(f"{where}: each config is a table, e.g. {{threads = 256}}")
    samples = _check_positive_int(entry.get("samples", suite.samples), f"{where}: samples")
    seed = entry.get("seed", suite.seed)
    ncu = bool(entry.get("ncu", suite.ncu))
    cases = []
    for shape in shapes:
        for config in configs:
            for dtype in dtypes:
                for arch in archs:
                    parts = [name]
                    if len(shapes) > 1:
                        parts.append(_shape_text(shape))
                    if len(configs) > 1:
                        parts.append(_config_text(config))
                    if len(dtypes) > 1:
                        parts.append(str(dtype))
                    if len(archs) > 1:
                        parts.append(arch)
                    cases.append(Case(id="/".join(parts), target=target, reference=reference, shape=dict(shape),
                                      config=_tuples(config), dtype=dtype, arch=arch, samples=samples,
                                      ncu=ncu, seed=seed))
    return cases


def load_suite(path: str | os.PathLike) -> Suite:
    """Read and check a suite file; UserError (one line) for anything wrong in it."""
    path = str(path)
    data = read_toml(path, "suite file")
    unknown = sorted(set(data) - {"suite", "case", "rule"})
    if unknown:
        raise UserError(f"{path}: unknown table {', '.join(unknown)} (known: suite, case, rule)")
    head = data.get("suite") or {}
    bad = sorted(set(head) - _SUITE_KEYS)
    if bad:
        raise UserError(f"{path}: [suite] has unknown key {', '.join(bad)} (known: {', '.join(sorted(_SUITE_KEYS))})")
    suite = Suite(path=path, name=str(head.get("name", Path(path).stem)),
                  description=str(head.get("description", "")),
                  static_only=bool(head.get("static_only", False)),
                  registry=bool(head.get("registry", False)),
                  samples=_check_positive_int(head.get("samples", 100), f"{path}: [suite] samples"),
                  warmup_ms=float(head.get("warmup_ms", 25.0)),
                  flush_l2=bool(head.get("flush_l2", True)),
                  fresh_inputs=bool(head.get("fresh_inputs", False)),
                  ncu=bool(head.get("ncu", False)),
                  ncu_sections=head.get("ncu_sections", "quick"),
                  cache_control=str(head.get("cache_control", "all")),
                  seed=int(head.get("seed", 0)))
    for i, entry in enumerate(data.get("case") or []):
        suite.cases += expand_case(entry, suite, f"{path}: case {i + 1}")
    for i, entry in enumerate(data.get("rule") or []):
        suite.rules.append(MetricRule.from_dict(entry, f"{path}: rule {i + 1}"))
    if suite.registry:
        suite.cases += registry_cases(suite, {c.target for c in suite.cases})
    ids = [c.id for c in suite.cases]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise UserError(f"{path}: case ids repeat ({', '.join(dupes)}): give the cases distinct names")
    if not suite.cases:
        raise UserError(f"{path}: the suite lists no cases")
    return suite


def registry_cases(suite: Suite, already: set[str]) -> list[Case]:
    """Every registered target not listed explicitly, once per arch it claims."""
    from kernelscope.kernels import registry

    cases = []
    for target in registry.names():
        if target in already:
            continue
        spec = registry.resolve(target)
        for arch in spec.archs:
            cases.append(Case(id=f"{target}/{arch}", target=target, reference=None, shape={}, config={},
                              dtype=None, arch=arch, samples=suite.samples, ncu=suite.ncu, seed=suite.seed))
    return cases
