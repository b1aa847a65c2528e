"""Typed results of the Python API.

Each result converts to the document the CLI writes (`to_dict()`, `to_json()`: the same
versioned JSON, described in docs/json-format.md and docs/schemas/), to a pandas
DataFrame where it is a table (`to_dataframe()`, pandas is the optional extra
`kernelscope[pandas]`), to a short text digest (`brief()`) and, in a notebook, to the
HTML report's script-free fragments (`_repr_html_`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from kernelscope.errors import UserError

if TYPE_CHECKING:  # the records themselves; imported lazily at run time
    from kernelscope.profiler.compare import Comparison
    from kernelscope.profiler.record import KernelProfile
    from kernelscope.rules.findings import Finding


class MissingExtra(UserError, ImportError):
    """An optional dependency of one feature is not installed (exit code 3: environment)."""

    def __init__(self, package: str, extra: str, what: str):
        super().__init__(f"{what} needs {package}, which is not installed: pip install 'kernelscope[{extra}]'",
                         exit_code=3)


def require_pandas():
    try:
        import pandas
    except ImportError:
        raise MissingExtra("pandas", "pandas", "to_dataframe()") from None
    return pandas


class Result:
    """Common conversions; subclasses define `to_dict`, and `_rows`/`_page` where they fit."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self, indent: int | None = 2) -> str:
        """The document as JSON text, exactly as the CLI writes it for show and diff."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=_json_default) + "\n"

    def to_dataframe(self):
        """One row per table entry (see each result's docstring); needs `kernelscope[pandas]`."""
        pandas = require_pandas()
        return pandas.DataFrame(self._rows())

    def brief(self, tokens: int = 400) -> str:
        """A compact digest within about `tokens` tokens (docs/api.md, "brief")."""
        from kernelscope.api.digest import digest

        return digest(self.to_dict(), tokens=tokens)

    def _rows(self) -> list[dict[str, Any]]:
        raise TypeError(f"{type(self).__name__} is not a table")

    def _page(self):
        return None

    def _repr_html_(self) -> str | None:
        page = self._page()
        if page is None:
            return None
        from kernelscope.reports import html

        return html.fragment(page)


def _json_default(o: Any) -> Any:
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# ----------------------------------------------------------------------------- profiles

class Profiles(Result, Sequence["KernelProfile"]):
    """Kernel profiles read from one report (or kernelscope JSON, or a compile-only inspection).

    A sequence of `KernelProfile`. `to_dict()` is the `kernelscope.show` document;
    `to_dataframe()` has one row per kernel and catalog metric (kernel_index, kernel, view,
    metric_id, label, value, unit); a metric that was not collected is None, never 0.
    """

    def __init__(self, profiles: list[KernelProfile], source: str, *, catalog_files: Sequence[str] = (),
                 views: Sequence[str] | None = None, extra: dict[str, Any] | None = None):
        self.profiles = list(profiles)
        self.source = source
        self.catalog_files = tuple(catalog_files)
        self.views = list(views) if views else None
        self._extra = extra

    def __len__(self) -> int:
        return len(self.profiles)

    def __getitem__(self, i):
        return self.profiles[i]

    def __iter__(self) -> Iterator[KernelProfile]:
        return iter(self.profiles)

    def __repr__(self) -> str:
        names = ", ".join(f"@{p.index} {p.name[:40]}" for p in self.profiles[:4])
        more = ", ..." if len(self.profiles) > 4 else ""
        return f"Profiles({len(self.profiles)} from {self.source}: {names}{more})"

    def select(self, kernel: str) -> Profiles:
        """The kernels whose name (function, demangled or NVTX range) matches a regex, or `@INDEX`."""
        from kernelscope.api.selection import pick

        return Profiles(pick(self.profiles, kernel, self.source), self.source,
                        catalog_files=self.catalog_files, views=self.views)

    def one(self) -> KernelProfile:
        """The only profile; a UserError naming the candidates when there are more or none."""
        from kernelscope.api.selection import only

        return only(self.profiles, self.source)

    def _catalog(self):
        from kernelscope.profiler.catalog import load_catalog

        return load_catalog(self.catalog_files)

    def entries(self):
        """(profile, {view: [MetricReading]}) per kernel, for the selected views."""
        from kernelscope.profiler.compare import readings

        catalog = self._catalog()
        names = self.views or catalog.view_names()
        return [(p, readings(p, catalog, names)) for p in self.profiles], {v: catalog.views[v].title for v in names}

    def to_dict(self) -> dict[str, Any]:
        from kernelscope.reports import structured

        entries, titles = self.entries()
        return structured.show_document(self.source, entries, titles, extra=self._extra)

    def _rows(self) -> list[dict[str, Any]]:
        entries, _ = self.entries()
        return [{"kernel_index": p.index, "kernel": p.name, "view": view, "metric_id": r.definition.id,
                 "label": r.definition.label, "value": r.value, "unit": r.definition.unit}
                for p, views in entries for view, rs in views.items() for r in rs]

    def _page(self):
        from kernelscope.reports import html_pages

        return html_pages.profiles_page(self.profiles, self.source, catalog=self._catalog())


# ----------------------------------------------------------------------------- findings

class Findings(Result, Sequence["Finding"]):
    """What the rules concluded: a sequence of `Finding`, causes first, then by the share of
    the measured gap each explains (against a reference), then headroom.

    `diagnosis` is the whole record: `verdict` (who is faster, by how much), `shared` (true of
    both kernels, not a difference), `not_evaluated` (rule id -> metrics not collected).
    `to_dict()` holds the keys the diff document carries (verdict, findings, shared,
    ncu_rules, rules_not_evaluated); `to_dataframe()` has one row per finding.
    """

    def __init__(self, diagnosis):
        self.diagnosis = diagnosis

    @property
    def items(self) -> list[Finding]:
        return list(self.diagnosis.findings)

    @property
    def not_evaluated(self) -> dict[str, list[str]]:
        return dict(self.diagnosis.not_evaluated)

    @property
    def passed(self) -> list[str]:
        return list(self.diagnosis.passed)

    @property
    def shared(self) -> list[Finding]:
        return list(self.diagnosis.shared)

    def __len__(self) -> int:
        return len(self.diagnosis.findings)

    def __getitem__(self, i):
        return self.diagnosis.findings[i]

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.diagnosis.findings)

    def __repr__(self) -> str:
        return f"Findings({', '.join(f.rule_id for f in self) or 'none fired'})"

    def to_dict(self) -> dict[str, Any]:
        from kernelscope.reports.findings import diagnosis_json

        return diagnosis_json(self.diagnosis)

    def _rows(self) -> list[dict[str, Any]]:
        return [{"rule": f.rule_id, "cause": f.cause, "severity": f.severity, "title": f.title,
                 "compares": f.compares, "explains": f.explains, "gap_ns": f.gap_ns, "impact": f.impact,
                 "message": f.message, "hint": f.hint, "section": f.section}
                for f in self]

    def _page(self):
        from kernelscope.reports.html import Page

        return Page(title=f"Findings ({len(self)})",
                    subtitle="Causes first, the largest share of the gap explained first.",
                    findings=self.to_dict()["findings"], rules_not_evaluated=self.not_evaluated)


# ----------------------------------------------------------------------------- diff

class Diff(Result):
    """Kernel A (yours) against kernel B (the reference), metric by metric, with the findings.

    `to_dict()` is the `kernelscope.diff` document (`diff --format json`); `to_dataframe()`
    has one row per view and metric (view, metric_id, label, unit, a, b, change, relative,
    better_side). `comparison` and `findings` are the records behind them.
    """

    def __init__(self, comparison: Comparison, findings: Findings, rule_files: Sequence[str] = (),
                 rules_disabled: Sequence[str] = ()):
        self.comparison = comparison
        self.findings = findings
        # Which rule files and disabled ids shaped the findings, as the diff document records them.
        self.rule_files = [str(f) for f in rule_files]
        self.rules_disabled = list(rules_disabled)

    @property
    def a(self) -> KernelProfile:
        return self.comparison.a

    @property
    def b(self) -> KernelProfile:
        return self.comparison.b

    @property
    def comparability(self) -> list[str]:
        """What makes A against B less direct (different GPUs, sources, clock control, SM clocks
        more than 5 % apart); empty when nothing does."""
        from kernelscope.profiler.compare import comparability_warnings

        return comparability_warnings(self.a, self.b)

    def __repr__(self) -> str:
        return f"Diff(A={self.a.name[:40]!r}, B={self.b.name[:40]!r}, {len(self.findings)} finding(s))"

    def to_dict(self) -> dict[str, Any]:
        from kernelscope.reports import structured

        return structured.diff_document(self.comparison, {**self.findings.to_dict(), "rule_files": self.rule_files,
                                                          "rules_disabled": self.rules_disabled})

    def _rows(self) -> list[dict[str, Any]]:
        return [{"view": view, "metric_id": d.definition.id, "label": d.definition.label, "unit": d.definition.unit,
                 "a": d.a, "b": d.b, "change": d.change, "relative": d.relative, "better_side": d.better}
                for view, deltas in self.comparison.views.items() for d in deltas]

    def _page(self):
        from kernelscope.reports import html_pages

        return html_pages.comparison_page(self.to_dict(), (self.a, self.b))


# ----------------------------------------------------------------------------- inspect

class Inspection(Result):
    """A compile-only inspection: registers, spills, shared memory, SASS histogram per kernel.

    `to_dict()` is `inspect --format json` (a `kernelscope.show` document with an `inspect`
    summary, readable by `ks.load`); `profiles` holds the static profiles; `missing_expected`
    the opcodes the target declares that its SASS lacks.
    """

    STATIC_VIEWS = ("launch", "static", "instructions")

    def __init__(self, inspection, target: str):
        self.inspection = inspection
        self.target = target

    @property
    def profiles(self) -> Profiles:
        source = self.inspection.profiles[0].source if self.inspection.profiles else self.target
        return Profiles(self.inspection.profiles, source, views=self.STATIC_VIEWS,
                        extra={"inspect": self.summary()})

    @property
    def missing_expected(self) -> list[str]:
        return list(self.inspection.missing_expected)

    def loops(self) -> list[list]:
        """Each kernel's SASS loops (`inspect --loops`), one list per kernel in address order:
        toolchain.sass_loops.SassLoop (start, end, depth, opcodes, instructions, wait_loop, to_dict())."""
        from kernelscope.toolchain.sass_loops import find_loops

        return [find_loops(k.sass) for k in self.inspection.kernels]

    def summary(self) -> dict[str, Any]:
        i = self.inspection
        return {"target": i.target, "kernel": i.kernel, "arch": i.arch, "dtype": i.dtype, "config": i.config,
                "shape": i.shape, "expected_sass": i.expected_sass, "expected_sass_missing": i.missing_expected,
                "from_cache": i.from_cache}

    def __repr__(self) -> str:
        i = self.inspection
        return f"Inspection({i.kernel} {i.arch} {i.dtype}, {len(i.profiles)} kernel(s))"

    def to_dict(self) -> dict[str, Any]:
        return self.profiles.to_dict()

    def _rows(self) -> list[dict[str, Any]]:
        return self.profiles._rows()

    def _page(self):
        return self.profiles._page()
