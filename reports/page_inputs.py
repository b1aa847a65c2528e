"""Which HTML page an input makes: a diff, show, gate or sweep JSON, a report (one kernel,
several, or a pair), a report made by `profile` (its target against its reference), or the
`.kernelscope.json` sidecar beside one. The CLI's `report` command only writes the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.profiler.catalog import load_catalog
from kernelscope.profiler.compare import compare
from kernelscope.profiler.ncu import SIDECAR_SUFFIX
from kernelscope.profiler.selection import resolve_one, select_profiles, split_spec
from kernelscope.profiler.documents import read_json
from kernelscope.profiler.sources import SHOW_SCHEMA, load_profile_run, load_profiles
from kernelscope.reports import html_pages, structured
from kernelscope.reports.document_checks import DIFF, GATE, SWEEP, check_document
from kernelscope.reports.findings import diagnosis_json
from kernelscope.reports.gate_output import GATE_SCHEMA
from kernelscope.reports.html import Page
from kernelscope.reports.structured import DIFF_SCHEMA
from kernelscope.reports.html_source import source_view
from kernelscope.rules.diagnosis import diagnose
from kernelscope.rules.line_locations import attach_locations

MAX_KERNELS = 8   # more kernels than this make an unreadable page: narrow with :REGEX


@dataclass
class PageOptions:
    title: str | None = None
    catalog_files: tuple[str, ...] = ()
    rule_files: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()


def _is_json(path: str) -> bool:
    if path.endswith(".json"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(64).lstrip().startswith((b"{", b"["))
    except OSError:
        return False


def _is_sweep(doc: object) -> bool:
    # Imported here: the measuring module brings torch, which no other page needs.
    from kernelscope.profiler.measure import SWEEP_SCHEMA

    # Sweep files written before the schema field carry rows, a target and a reference timing.
    return isinstance(doc, dict) and (doc.get("schema") == SWEEP_SCHEMA
                                      or ("rows" in doc and "target" in doc and "reference_timing" in doc))


def _findings(a, b, rule_files=(), disabled=(), catalog=None) -> dict:
    """The diagnosis of a pair, as the diff document holds it."""
    result = diagnose(a, b, extra_rule_files=rule_files, disabled=disabled, catalog=catalog)
    attach_locations(result.findings + result.shared, a.source_lines, b.source_lines)
    return diagnosis_json(result)


def _pair_page(a, b, options):
    catalog = load_catalog(options.catalog_files)
    comparison = compare(a, b, catalog)
    doc = structured.diff_document(comparison, _findings(a, b, options.rule_files, options.disabled, catalog))
    page = html_pages.comparison_page(doc, (a, b), title=options.title)
    _add_source_view(page, [("A: " + a.name, a), ("B: " + b.name, b)])
    return page


def _add_source_view(page, sides) -> None:
    """The source view block, for the kernels whose report holds per-line records."""
    shown = [(label, p.source_lines) for label, p in sides
             if p.source_lines is not None and (p.source_lines.has_source_counters or p.source_lines.origin == "static")]
    if any(lp.has_line_info for _, lp in shown):
        page.blocks.insert(1, ("Source lines", source_view([(label[:90], lp) for label, lp in shown])))
    elif shown:
        page.notes.append("No source view: no instruction maps to a source line (compile with line information: "
                          "`kernelscope profile` does by default).")


def _profiles_page(profiles, source, options):
    if len(profiles) == 2:
        return _pair_page(profiles[0], profiles[1], options)
    if len(profiles) == 1:
        page = html_pages.profiles_page(profiles, source, catalog=load_catalog(options.catalog_files), title=options.title)
        _add_source_view(page, [(profiles[0].name, profiles[0])])
        return page
    if len(profiles) > MAX_KERNELS:
        names = ", ".join(f"@{p.index} {p.name}" for p in profiles[:4])
        raise UserError(f"{source} holds {len(profiles)} kernels ({names}, ...); a page shows at most {MAX_KERNELS}: "
                        "select with FILE:REGEX or FILE:@INDEX")
    return html_pages.profiles_page(profiles, source, catalog=load_catalog(options.catalog_files), title=options.title)


def build_page(inputs: tuple[str, ...], options: PageOptions | None = None) -> Page:
    """The page for one input (a result JSON, a report, a `profile` sidecar) or for two
    kernels (A against its reference B)."""
    options = options or PageOptions()
    title = options.title
    if len(inputs) == 2:
        return _pair_page(resolve_one(inputs[0], "A", lines=True), resolve_one(inputs[1], "B", lines=True), options)
    spec = inputs[0]
    path, selector = split_spec(spec)
    if not Path(path).exists():
        raise UserError(f"{path}: no such file")
    if _is_json(path):
        doc = read_json(path)
        schema = doc.get("schema") if isinstance(doc, dict) else None
        if schema == DIFF_SCHEMA:
            check_document(doc, DIFF, path, "diff")
            return html_pages.comparison_page(doc, None, title=title)
        if schema == GATE_SCHEMA:
            check_document(doc, GATE, path, "gate")
            return html_pages.gate_page(doc, title=title)
        if schema != SHOW_SCHEMA and _is_profile_sidecar(doc):
            return _profile_run_page(_sidecar_report(path, doc), doc, options)
        if schema != SHOW_SCHEMA and _is_sweep(doc):
            check_document(doc, SWEEP, path, "sweep")
            return html_pages.sweep_page(doc, title=title)
        if schema != SHOW_SCHEMA:
            raise UserError(f"{path}: not a kernelscope result kernelscope report can show (expected a diff, show or "
                            "gate JSON, a `sweep --json` file or the .kernelscope.json beside a `profile` report)")
    elif selector is None:
        page = _profile_run_page(path, _sidecar_of(path), options)
        if page is not None:
            return page
    profiles = select_profiles(load_profiles(path, lines=True), selector, path)
    return _profiles_page(profiles, path, options)


# --- reports made by `kernelscope profile` ------------------------------------------------------


def _is_profile_sidecar(doc: object) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("request"), dict) and "command_line" in doc


def _sidecar_of(report: str) -> dict | None:
    path = Path(report + SIDECAR_SUFFIX)
    if not path.exists() and report.endswith(".xz"):
        path = Path(report[: -len(".xz")] + SIDECAR_SUFFIX)   # the report compressed after profiling
    if not path.exists():
        return None
    doc = read_json(str(path))
    return doc if _is_profile_sidecar(doc) else None


def _sidecar_report(sidecar_path: str, doc: dict) -> str:
    """The report a `profile` sidecar describes: beside it, else where the sidecar says."""
    candidates = []
    if sidecar_path.endswith(SIDECAR_SUFFIX):
        candidates.append(sidecar_path[: -len(SIDECAR_SUFFIX)])
    if doc["request"].get("report_path"):
        candidates.append(str(doc["request"]["report_path"]))
    candidates += [c + ".xz" for c in candidates]     # reports are often kept xz-compressed
    for candidate in candidates:
        if Path(candidate).exists():
            return candidate
    raise UserError(f"{sidecar_path}: the report it describes is not there ({' or '.join(candidates) or 'no path given'})")


def _profile_run_page(report: str, sidecar: dict | None, options: PageOptions):
    """Target against reference from a `profile` report: launches grouped by their NVTX ranges.

    None when the report was not made by `profile` (no target range in it)."""
    target, reference, _ = load_profile_run(report, lines=True)
    if target is None:
        if sidecar is not None:
            raise UserError(f"{report}: no launch of the target was captured")
        return None
    request = (sidecar or {}).get("request") or {}
    name = request.get("target") or target.demangled_name
    target.name = name
    if reference is not None:
        ref_name = request.get("reference") or reference.demangled_name
        reference.name = ref_name
        page = _pair_page(target, reference, PageOptions(options.title or f"{_short(name)} vs {_short(ref_name)}",
                                                                  *_rest(options)))
    else:
        page = html_pages.profiles_page([target], report, title=options.title or _short(name))
        _add_source_view(page, [(name, target)])
    facts = []
    if request.get("shape"):
        facts.append("shape " + ", ".join(f"{k}={v}" for k, v in request["shape"].items()))
    for key in ("dtype", "section_set", "clock_control", "cache_control"):
        if request.get(key) is not None:
            facts.append(f"{key.replace('_', ' ')} {request[key]}")
    if request.get("config"):
        facts.append("config " + ", ".join(f"{k}={v}" for k, v in request["config"].items()))
    if facts:
        page.subtitle = f"{page.subtitle} Profiled by kernelscope: {'; '.join(facts)}."
    status = (sidecar or {}).get("worker_status") or {}
    if status.get("correct") is False:
        page.notes.insert(0, f"The target's output was wrong: {status.get('bad_count')} elements over tolerance "
                             f"(max abs error {_g(status.get('max_abs_error'))}); `kernelscope run` locates the errors.")
    elif status.get("correct") is True:
        page.notes.append(f"The target's output was checked against the fp32 reference: correct "
                          f"(max abs error {_g(status.get('max_abs_error'))}).")
    return page


def _g(v) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float)) else "n/a"


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _rest(options: PageOptions) -> tuple:
    return options.catalog_files, options.rule_files, options.disabled
