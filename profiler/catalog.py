"""The metric catalog: curated views over raw metrics, defined in data files.

`catalog.toml` beside this module holds the built-in entries; any `catalog_*.toml`
beside it (for example the compile-only metrics) is merged in, and users may pass
more files. See catalog.toml for the entry format.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from kernelscope.errors import UserError
from kernelscope.profiler.derived import COMPUTED
from kernelscope.profiler.expression import FUNCTIONS, Expression, ExpressionError, parse
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.documents import read_toml

BUILTIN_DIR = Path(__file__).parent
DIRECTIONS = ("lower", "higher", "none")
MIX_FUNCTIONS = ("mix", "mix_prefix", "mix_total")
FORMULA_FUNCTIONS = frozenset({*MIX_FUNCTIONS, *FUNCTIONS})


@dataclass(frozen=True)
class MetricDef:
    id: str
    label: str
    view: str
    unit: str
    better: str
    description: str
    sources: tuple[str, ...] = ()          # ncu metric alternatives
    formula: Expression | None = None
    computed: str | None = None            # a name in profiler/derived.COMPUTED

    @property
    def definition(self) -> str:
        """What the value is computed from, as a user would write it."""
        if self.computed is not None:
            return f"computed: {self.description}"
        return self.formula.text if self.formula is not None else " | ".join(self.sources)

    def raw_metrics(self) -> tuple[str, ...]:
        if self.computed is not None:
            return ()
        return tuple(sorted(self.formula.braced)) if self.formula is not None else self.sources


@dataclass(frozen=True)
class View:
    name: str
    title: str
    metrics: tuple[str, ...]


@dataclass
class Catalog:
    metrics: dict[str, MetricDef] = field(default_factory=dict)
    views: dict[str, View] = field(default_factory=dict)

    def view_names(self) -> list[str]:
        return list(self.views)

    def metrics_of(self, views: Iterable[str] | None = None) -> list[MetricDef]:
        names = list(views) if views else self.view_names()
        unknown = [v for v in names if v not in self.views]
        if unknown:
            raise UserError(f"unknown view {unknown[0]!r}; views: {', '.join(self.views)}")
        return [self.metrics[m] for v in names for m in self.views[v].metrics]

    def evaluate(self, profile: KernelProfile, metric_id: str) -> float | int | str | None:
        return evaluate(self.metrics[metric_id], profile, self)


def evaluate(definition: MetricDef, profile: KernelProfile, catalog: "Catalog | None" = None) -> float | int | str | None:
    """The entry's value for this profile; None when the profile lacks what it needs.

    A computed entry reads other entries of `catalog` (the built-in catalog when not given).
    """
    if definition.computed is not None:
        catalog = catalog or load_catalog()

        def value(metric_id: str) -> Any:
            other = catalog.metrics.get(metric_id)
            if other is None or other.computed is not None:
                return None
            result = evaluate(other, profile, catalog)
            return None if isinstance(result, float) and math.isnan(result) else result

        return COMPUTED[definition.computed](value, list(catalog.metrics), lambda m: catalog.metrics[m].label)
    if definition.formula is None:
        for name in definition.sources:
            value = profile.value(name)
            if value is not None:
                return value
        return None
    value = definition.formula.evaluate(
        resolve=lambda name: None,
        resolve_braced=lambda name: _number(profile.value(name)),
        functions=_mix_functions(profile),
    )
    if isinstance(value, bool) or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _mix_functions(profile: KernelProfile) -> dict[str, Any]:
    mix = profile.instruction_mix
    collected = bool(mix)  # an empty mix means "not collected", never "nothing executed"

    def op(name: str) -> float | None:
        return float(mix.get(name, 0.0)) if collected else None

    def prefix(p: str) -> float | None:
        return float(sum(v for k, v in mix.items() if k.startswith(p))) if collected else None

    def total() -> float | None:
        return float(sum(mix.values())) if collected else None

    return {**FUNCTIONS, "mix": op, "mix_prefix": prefix, "mix_total": total}


# ---------------------------------------------------------------------------------
# Loading


def builtin_files() -> list[Path]:
    main = BUILTIN_DIR / "catalog.toml"
    extra = sorted(p for p in BUILTIN_DIR.glob("catalog_*.toml"))
    return [main, *extra]


@lru_cache(maxsize=None)
def _load_cached(paths: tuple[str, ...]) -> Catalog:
    catalog = Catalog()
    for path in paths:
        _merge_file(catalog, Path(path))
    return catalog


def load_catalog(extra_files: Iterable[str | Path] = ()) -> Catalog:
    paths = tuple(str(p) for p in [*builtin_files(), *extra_files])
    return _load_cached(paths)


def _merge_file(catalog: Catalog, path: Path) -> None:
    data = read_toml(path, "catalog file")
    unknown = sorted(set(data) - {"view", "metric"})
    if unknown:
        raise UserError(f"{path}: unknown top-level key {unknown[0]!r} (a catalog file holds [[view]] and [[metric]] entries)")
    for kind in ("view", "metric"):
        entries = data.get(kind, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise UserError(f"{path}: {kind!r} must be an array of tables: write [[{kind}]]")
    for entry in data.get("view", []):
        name = _required(entry, "name", path, "view")
        if not isinstance(name, str) or not isinstance(entry.get("title", name), str):
            raise UserError(f"{path}: view {name!r}: 'name' and 'title' must be strings")
        if name not in catalog.views:
            catalog.views[name] = View(name, entry.get("title", name), ())
    for entry in data.get("metric", []):
        definition = _metric_from(entry, path)
        if definition.view not in catalog.views:
            raise UserError(f"{path}: metric {definition.id!r}: field 'view': unknown view {definition.view!r}")
        previous = catalog.metrics.get(definition.id)
        catalog.metrics[definition.id] = definition
        view = catalog.views[definition.view]
        if previous is None or previous.view != definition.view:
            if previous is not None:
                old = catalog.views[previous.view]
                catalog.views[previous.view] = View(old.name, old.title, tuple(m for m in old.metrics if m != definition.id))
            catalog.views[definition.view] = View(view.name, view.title, (*view.metrics, definition.id))


def _required(entry: dict, key: str, path: Path, what: str) -> Any:
    if key not in entry:
        ident = entry.get("id") or entry.get("name") or "?"
        raise UserError(f"{path}: {what} {ident!r}: missing field {key!r}")
    return entry[key]


def _metric_from(entry: dict, path: Path) -> MetricDef:
    ident = _required(entry, "id", path, "metric")
    for key in ("id", "label", "view", "unit", "better"):
        if not isinstance(_required(entry, key, path, "metric"), str):
            raise UserError(f"{path}: metric {ident!r}: field {key!r} must be a string")
    if entry["better"] not in DIRECTIONS:
        raise UserError(f"{path}: metric {ident!r}: field 'better' must be one of {', '.join(DIRECTIONS)}")
    kinds = [k for k in ("metric", "formula", "computed") if k in entry]
    if len(kinds) != 1:
        raise UserError(f"{path}: metric {ident!r}: give exactly one of 'metric' or 'formula'")
    sources: tuple[str, ...] = ()
    formula = None
    computed = entry.get("computed")
    if computed is not None:
        if computed not in COMPUTED:
            raise UserError(f"{path}: metric {ident!r}: field 'computed': unknown ({', '.join(sorted(COMPUTED))})")
    elif "metric" in entry:
        raw = entry["metric"]
        sources = (raw,) if isinstance(raw, str) else tuple(raw)
        if not sources or not all(isinstance(s, str) and s for s in sources):
            raise UserError(f"{path}: metric {ident!r}: field 'metric' must be a name or a list of names")
    else:
        try:
            formula = parse(str(entry["formula"]), FORMULA_FUNCTIONS)
        except ExpressionError as e:
            raise UserError(f"{path}: metric {ident!r}: field 'formula': {e}") from None
        if formula.names:
            raise UserError(
                f"{path}: metric {ident!r}: field 'formula': write ncu metric names in braces, "
                f"e.g. {{{sorted(formula.names)[0]}}}"
            )
    return MetricDef(
        id=ident,
        label=entry["label"],
        view=entry["view"],
        unit=entry["unit"],
        better=entry["better"],
        description=entry.get("description", ""),
        sources=sources,
        formula=formula,
        computed=computed,
    )
