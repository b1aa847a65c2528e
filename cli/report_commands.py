"""`kernelscope show` and `kernelscope diff`: reports into tables."""

from __future__ import annotations

import functools
import sys

import click

from kernelscope.cli.output_files import check_output_file, force_option
from kernelscope.errors import UserError
from kernelscope.profiler.catalog import evaluate, load_catalog
from kernelscope.profiler.compare import MetricReading, compare, readings
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.selection import lines_for, resolve_one, sass_facts_for, select_profiles, split_spec
from kernelscope.profiler.sources import load_profiles
from kernelscope.reports import findings, markdown, structured, terminal
from kernelscope.profiler.units import FULL_NAMES, kernel_label
from kernelscope.rules.diagnosis import diagnose

FORMATS = ("table", "json", "csv", "markdown", "brief")
DETAIL_LIMIT = 8  # beyond this many kernels, the table format summarises


def full_names_option(f):
    """--full-names: the kernels' full (mangled) names in headers and tables instead of short ones."""
    @functools.wraps(f)
    def run(*args, full_names: bool, **kwargs):
        token = FULL_NAMES.set(full_names)
        try:
            return f(*args, **kwargs)
        finally:
            FULL_NAMES.reset(token)
    return click.option("--full-names", is_flag=True,
                        help="Full kernel names in headers and tables (JSON always has them).")(run)


def _catalog_option(f):
    return click.option("--catalog", "catalog_files", multiple=True, type=click.Path(dir_okay=False),
                        help="Extra catalog TOML file(s) adding or overriding metric entries.")(f)


def _tokens_option(f):
    return click.option("--tokens", default=400, show_default=True, type=click.IntRange(min=40), metavar="N",
                        help="Token budget of --format brief (about 4 characters per token; at least 40).")(f)


def _emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@click.command()
@click.argument("report")
@click.option("-k", "--kernel", "regex", help="Regex over kernel names (function, demangled, NVTX range) or @INDEX.")
@click.option("--view", "views", multiple=True, help="View(s) to show (default: all). See `kernelscope views`.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--group-nvtx", metavar="PREFIX", help="Merge launches inside NVTX ranges whose name starts with PREFIX.")
@click.option("--full", is_flag=True, help=f"Full views for every kernel even when more than {DETAIL_LIMIT} match.")
@click.option("--lines", "lines", is_flag=True,
              help="Where the time goes in the source: the hottest lines with stall samples by reason, executed "
                   "instructions and their SASS (needs SourceCounters; line information for Python lines).")
@click.option("--top", "top", default=15, show_default=True, help="Lines to list with --lines.")
@click.option("--timeline", "timeline", is_flag=True,
              help="The launch over time: ncu's PM samples (tensor pipe, issue, DRAM, L2 every ~1.5 us) with its "
                   "ramp, plateau and tail (needs the PmSampling section).")
@click.option("--sass-facts", "sass_facts", is_flag=True,
              help="Also read each selected kernel's SASS from the report (any section set holds it): local "
                   "memory, fences, shared atomics and code size, in the static view (~0.1 s per kernel, more "
                   "for long code). diff reads them for its two kernels always.")
@_catalog_option
@_tokens_option
@full_names_option
def show(report, regex, views, fmt, group_nvtx, full, lines, top, timeline, sass_facts, catalog_files, tokens):
    """Show the metric views of each kernel in REPORT (.ncu-rep or kernelscope JSON).

    REPORT may carry a selector: FILE.ncu-rep:REGEX or FILE.ncu-rep:@INDEX. When more
    than a few kernels match, the table format prints one summary line per kernel;
    narrow with -k, or pass --full.
    """
    path, selector = split_spec(report)
    if timeline and lines:
        raise UserError("--timeline and --lines are two views: give one of them")
    if timeline:
        return _show_timeline(path, regex or selector, fmt, group_nvtx)
    if lines:
        return _show_lines(path, regex or selector, fmt, group_nvtx, top)
    catalog = load_catalog(catalog_files)
    view_names = list(views) or catalog.view_names()
    catalog.metrics_of(view_names)
    if regex and selector:
        raise UserError(f"{report}: give the kernel either after the file name (FILE:{selector}) or with -k, not both")
    static_sass = lines_for(regex or selector, group_nvtx) if sass_facts else False
    profiles = select_profiles(load_profiles(path, group_nvtx_prefix=group_nvtx, static_sass=static_sass),
                               regex or selector, path)
    if fmt == "table" and len(profiles) > DETAIL_LIMIT and not full and not views:
        summary = [catalog.metrics[m] for m in terminal.SUMMARY_METRICS]
        rows = [(p, [MetricReading(d, evaluate(d, p, catalog)) for d in summary]) for p in profiles]
        console = terminal.make_console()
        terminal.print_summary(console, rows)
        console.print(f"[dim]{len(profiles)} kernels matched: -k REGEX or FILE:@INDEX for one kernel's views, --full for all.[/dim]")
        return
    entries = [(p, readings(p, catalog, view_names)) for p in profiles]
    if views:
        for view in view_names:
            if not any(r.collected for _, vs in entries for r in vs[view]):
                raise UserError(f"view {view!r}: none of its metrics were collected in {path} (profile with the sections it needs)")
    titles = {v: catalog.views[v].title for v in view_names}
    if fmt == "json":
        _emit(structured.dumps(structured.show_document(path, entries, titles)))
    elif fmt == "brief":
        from kernelscope.api.digest import digest

        _emit(digest(structured.show_document(path, entries, titles), tokens=tokens))
    elif fmt == "csv":
        _emit(structured.show_csv(entries))
    elif fmt == "markdown":
        _emit(markdown.show_markdown(entries, titles))
    else:
        terminal.print_show(terminal.make_console(), entries, titles)


def _show_lines(path: str, selector: str | None, fmt: str, group_nvtx: str | None, top: int) -> None:
    from kernelscope.reports import lines as line_view

    profiles = select_profiles(load_profiles(path, group_nvtx_prefix=group_nvtx, lines=lines_for(selector, group_nvtx)),
                               selector, path)
    require_lines(profiles, path)
    if fmt == "json":
        entries = [(p, {}) for p in profiles]
        doc = structured.show_document(path, entries, {})
        for entry, p in zip(doc["kernels"], profiles):
            entry["lines"] = p.source_lines.to_dict()
        _emit(structured.dumps(doc))
        return
    if fmt != "table":
        raise UserError(f"--lines prints a table or JSON, not {fmt}")
    console = terminal.make_console()
    for p in profiles:
        line_view.print_line_profile(console, f"[{p.index}] {p.name}", p.source_lines, limit=top)
        console.print()


def _show_timeline(path: str, selector: str | None, fmt: str, group_nvtx: str | None) -> None:
    from kernelscope.reports import timeline as timeline_view

    if fmt not in ("table", "json"):
        raise UserError(f"--timeline prints a table or JSON, not {fmt}")
    profiles = select_profiles(load_profiles(path, group_nvtx_prefix=group_nvtx, timeline=True), selector, path)
    require_timeline(profiles, path)
    if fmt == "json":
        doc = structured.show_document(path, [(p, {}) for p in profiles], {})
        for entry, p in zip(doc["kernels"], profiles):
            entry["timeline"] = p.timeline.to_dict()
        _emit(structured.dumps(doc))
        return
    console = terminal.make_console()
    for p in profiles:
        timeline_view.print_timeline(console, p)
        console.print()


def require_timeline(profiles: list[KernelProfile], path: str) -> None:
    """Every selected launch must carry PM samples: one clear line otherwise."""
    for p in profiles:
        if p.timeline is not None:
            continue
        if p.launches > 1:
            raise UserError(f"{path}: {kernel_label(p)} groups {p.launches} launches and a timeline is one launch's: "
                            "show it without --group-nvtx")
        raise UserError(f"{path}: no PM samples for [{p.index}] {kernel_label(p)}: collect ncu's PmSampling section "
                        "(`kernelscope profile ... --section PmSampling` or `--set full`)")


def require_lines(profiles: list[KernelProfile], path: str) -> None:
    """Per-line records must exist and hold per-instruction counters: one clear line otherwise."""
    from kernelscope.profiler.report_lines import NO_SOURCE_COUNTERS

    missing = [p for p in profiles if p.source_lines is None]
    if missing:
        raise UserError(f"{path}: no per-line records for {missing[0].name} (a kernelscope JSON file holds them only "
                        "when written by `show --lines --format json`)")
    if not any(p.source_lines.has_source_counters or p.source_lines.origin == "static" for p in profiles):
        raise UserError(f"{path}: {NO_SOURCE_COUNTERS}")


def rules_in_effect(rule_files, disabled, catalog) -> str | None:
    """What --rules and --disable changed, said once so the user sees they took effect."""
    from kernelscope.rules.engine import load_rules

    if not rule_files and not disabled:
        return None
    builtin = load_rules((), catalog).rules
    loaded = load_rules(rule_files, catalog).rules
    parts = []
    for path in rule_files:
        mine = [r for r in loaded.values() if r.file == str(path)]
        new = sum(1 for r in mine if r.id not in builtin)
        replaced = len(mine) - new
        tuned = sum(1 for i, r in loaded.items() if i in builtin and r.file != str(path)
                    and r.thresholds != builtin[i].thresholds and r.file == builtin[i].file)
        parts.append(f"{path}: {new} rule(s) added, {replaced} replaced"
                     + (f", thresholds of {tuned} changed" if tuned else ""))
    if disabled:
        parts.append(f"disabled: {', '.join(disabled)}")
    return f"rules: {len(loaded) - len(set(disabled))} in effect; " + "; ".join(parts)


@click.command()
@click.argument("a")
@click.argument("b", required=False)
@click.option("--view", "views", multiple=True, help="View(s) to compare (default: all).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--top-opcodes", default=15, show_default=True, type=click.IntRange(min=0),
              help="Opcodes to list in the instruction-mix table.")
@_catalog_option
@click.option("--rules", "rule_files", multiple=True, type=click.Path(dir_okay=False),
              help="Extra rule file(s) adding or overriding rules (docs/rules.md). Repeatable.")
@click.option("--disable", "disabled", multiple=True, metavar="ID", help="Rule id to skip (repeatable).")
@click.option("--lines", "lines", is_flag=True,
              help="Compare where the time goes in the source: per line when both kernels come from one source "
                   "file, per source file and opcode class otherwise.")
@click.option("--top", "top", default=20, show_default=True, help="Lines to list with --lines.")
@click.option("--timeline", "timeline", is_flag=True,
              help="Also compare the launches' phases from ncu's PM samples (plateau, ramp, tail, active span; "
                   "needs the PmSampling section in both reports).")
@click.option("--github", "github", is_flag=True,
              help="Also print GitHub Actions annotations (::warning file=...,line=...) for findings located at lines.")
@click.option("--sarif", "sarif_path", type=click.Path(dir_okay=False), default=None,
              help="Write the findings located at lines as a SARIF 2.1.0 file.")
@click.option("--group-nvtx", "group_nvtx", metavar="PREFIX", default=None,
              help="Merge launches inside NVTX ranges whose name starts with PREFIX (as show does).")
@click.option("--merge", "merge", is_flag=True,
              help="A and B may each match several launches: merge each side's into one (counts and times summed, "
                   "rates weighted by time). Both sides must merge the same number of launches.")
@_tokens_option
@full_names_option
@force_option
def diff(a, b, views, fmt, top_opcodes, catalog_files, rule_files, disabled, lines, top, timeline, github, sarif_path,
         group_nvtx, merge, tokens, force):
    """Put kernel A (yours) beside kernel B (the reference), metric by metric.

    A and B are FILE[:REGEX] or FILE:@INDEX (.ncu-rep or kernelscope JSON); both may
    name the same report. With one argument, the report must hold exactly two kernels.
    Stall and memory findings name the source lines where their samples sit when A was
    compiled with line information and profiled with SourceCounters.
    """
    check_output_file(sarif_path, force, "SARIF file")
    from kernelscope.rules.line_locations import attach_locations

    if timeline and fmt not in ("table", "json"):
        raise UserError(f"--timeline prints a table or JSON, not {fmt}")
    if merge and (b is None or timeline):
        raise UserError("--merge needs A and B (each merged on its own), and compares no timelines (those are "
                        "per launch)" if b is not None else "--merge needs both A and B: each side's launches are merged on their own")
    if b is None:
        path, selector = split_spec(a)
        profiles = select_profiles(load_profiles(path, group_nvtx_prefix=group_nvtx, lines=lines_for(selector, group_nvtx),
                                                 timeline=timeline, static_sass=sass_facts_for(selector, group_nvtx)),
                                   selector, path)
        if len(profiles) != 2:
            raise UserError(f"diff with one report needs exactly two kernels there; {path} has {len(profiles)} matching (give A and B)")
        first, second = profiles
    else:
        first = resolve_one(a, "A", lines=True, timeline=timeline, group_nvtx=group_nvtx, merge=merge)
        second = resolve_one(b, "B", lines=True, timeline=timeline, group_nvtx=group_nvtx, merge=merge)
        if merge and first.launches != second.launches:
            raise UserError(f"--merge: A merges {first.launches} launch(es) and B {second.launches}; summed counts and "
                            f"times compare like with like only for as many launches on both sides: narrow A or B")
    if lines:
        require_lines([first], a)
        require_lines([second], b or a)
    if timeline:
        require_timeline([first], split_spec(a)[0])
        require_timeline([second], split_spec(b or a)[0])
    catalog = load_catalog(catalog_files)
    comparison = compare(first, second, catalog, list(views) or None, top_opcodes)
    # B is A's reference: the rules compare A alone and A against B.
    result = diagnose(first, second, extra_rule_files=rule_files, disabled=disabled, catalog=catalog)
    in_effect = rules_in_effect(rule_files, disabled, catalog)
    attach_locations(result.findings + result.shared, first.source_lines, second.source_lines)
    if sarif_path:
        from kernelscope.reports.annotations import write_sarif

        try:
            write_sarif(result.findings, sarif_path)
        except OSError as e:
            raise UserError(f"cannot write {sarif_path}: {e.strerror or e}") from None
    line_comparison = None
    if lines:
        from kernelscope.profiler.line_compare import compare_lines

        line_comparison = compare_lines(first.source_lines, second.source_lines)
    if fmt == "json":
        extra = {**findings.diagnosis_json(result),
                 "rule_files": [str(f) for f in rule_files], "rules_disabled": list(disabled)}
        if line_comparison is not None:
            extra["lines"] = {"comparison": line_comparison.to_dict(top),
                              "a": first.source_lines.to_dict(), "b": second.source_lines.to_dict()}
        if timeline:
            extra["timelines"] = {"a": first.timeline.to_dict(), "b": second.timeline.to_dict()}
        _emit(structured.dumps(structured.diff_document(comparison, extra)))
    elif fmt == "brief":
        from kernelscope.api.digest import digest

        _emit(digest(structured.diff_document(comparison, findings.diagnosis_json(result)), tokens=tokens))
    elif line_comparison is not None:
        from kernelscope.reports import lines as line_view

        console = terminal.make_console()
        findings.print_headline(comparison, result, console)
        line_view.print_line_comparison(console, line_comparison, f"[{first.index}] {first.name}",
                                        f"[{second.index}] {second.name}", limit=top)
        console.print()
        findings.print_findings(result.findings, console, result.not_evaluated, result)
    elif fmt == "csv":
        _emit(structured.diff_csv(comparison))
    elif fmt == "markdown":
        _emit(findings.headline_markdown(comparison, result) + "\n" + markdown.diff_markdown(comparison) + "\n"
              + findings.findings_markdown(result.findings, result.not_evaluated, result)
              + (f"\n_{in_effect}_\n" if in_effect else ""))
    else:
        console = terminal.make_console()
        findings.print_headline(comparison, result, console)
        terminal.print_comparison(comparison, console)
        if timeline:
            from kernelscope.reports import timeline as timeline_view

            timeline_view.print_phase_comparison(console, first, second)
        findings.print_findings(result.findings, console, result.not_evaluated, result)
        if in_effect:
            console.print(in_effect, style="dim", overflow="fold")
    if github:
        from kernelscope.reports.annotations import github_annotations

        for line in github_annotations(result.findings):
            sys.stdout.write(line + "\n")


# One convention for listings: a table for people, JSON for programs.
LIST_FORMATS = ("table", "json")


def list_format_option(f):
    return click.option("--format", "fmt", type=click.Choice(LIST_FORMATS), default="table", show_default=True)(f)


@click.command()
@_catalog_option
@list_format_option
def views(catalog_files, fmt):
    """List the metric views and their entries (the catalog)."""
    catalog = load_catalog(catalog_files)
    if fmt == "json":
        doc = {"schema": "kernelscope.catalog", "schema_version": 1, "files": [str(f) for f in catalog_files],
               "views": [{"name": v.name, "title": v.title, "metrics": [
                   {"id": d.id, "label": d.label, "unit": d.unit, "better": d.better, "definition": d.definition,
                    "description": d.description} for d in (catalog.metrics[m] for m in v.metrics)]}
                   for v in catalog.views.values()]}
        _emit(structured.dumps(doc))
        return
    console = terminal.make_console()
    for view in catalog.views.values():
        console.print(f"[bold]{view.name}[/bold] — {view.title}")
        for m in view.metrics:
            d = catalog.metrics[m]
            console.print(f"  {d.id:<28} {d.label:<34} [dim]{d.unit:<6} better={d.better:<6} {d.definition}[/dim]")


def register(group: click.Group) -> None:
    group.add_command(show)
    group.add_command(diff)
    group.add_command(views)
