"""`kernelscope show` and `kernelscope diff`: reports into tables."""

from __future__ import annotations

import sys

import click

from kernelscope.errors import UserError
from kernelscope.profiler.catalog import evaluate, load_catalog
from kernelscope.profiler.compare import MetricReading, compare, readings
from kernelscope.profiler.selection import resolve_one, select_profiles, split_spec
from kernelscope.profiler.sources import load_profiles
from kernelscope.reports import findings, markdown, structured, terminal
from kernelscope.rules.diagnosis import diagnose

FORMATS = ("table", "json", "csv", "markdown")
DETAIL_LIMIT = 8  # beyond this many kernels, the table format summarises


def _catalog_option(f):
    return click.option("--catalog", "catalog_files", multiple=True, type=click.Path(dir_okay=False),
                        help="Extra catalog TOML file(s) adding or overriding metric entries.")(f)


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
@_catalog_option
def show(report, regex, views, fmt, group_nvtx, full, catalog_files):
    """Show the metric views of each kernel in REPORT (.ncu-rep or kernelscope JSON).

    REPORT may carry a selector: FILE.ncu-rep:REGEX or FILE.ncu-rep:@INDEX. When more
    than a few kernels match, the table format prints one summary line per kernel;
    narrow with -k, or pass --full.
    """
    path, selector = split_spec(report)
    catalog = load_catalog(catalog_files)
    view_names = list(views) or catalog.view_names()
    catalog.metrics_of(view_names)
    profiles = select_profiles(load_profiles(path, group_nvtx_prefix=group_nvtx), regex or selector, path)
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
    elif fmt == "csv":
        _emit(structured.show_csv(entries))
    elif fmt == "markdown":
        _emit(markdown.show_markdown(entries, titles))
    else:
        terminal.print_show(terminal.make_console(), entries, titles)


@click.command()
@click.argument("a")
@click.argument("b", required=False)
@click.option("--view", "views", multiple=True, help="View(s) to compare (default: all).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--top-opcodes", default=15, show_default=True, help="Opcodes to list in the instruction-mix table.")
@_catalog_option
@click.option("--rules", "rule_files", multiple=True, type=click.Path(dir_okay=False),
              help="Extra rule file(s) adding or overriding rules (docs/rules.md). Repeatable.")
@click.option("--disable", "disabled", multiple=True, metavar="ID", help="Rule id to skip (repeatable).")
def diff(a, b, views, fmt, top_opcodes, catalog_files, rule_files, disabled):
    """Put kernel A (yours) beside kernel B (the reference), metric by metric.

    A and B are FILE[:REGEX] or FILE:@INDEX (.ncu-rep or kernelscope JSON); both may
    name the same report. With one argument, the report must hold exactly two kernels.
    """
    if b is None:
        path, selector = split_spec(a)
        profiles = select_profiles(load_profiles(path), selector, path)
        if len(profiles) != 2:
            raise UserError(f"diff with one report needs exactly two kernels there; {path} has {len(profiles)} matching (give A and B)")
        first, second = profiles
    else:
        first, second = resolve_one(a, "A"), resolve_one(b, "B")
    catalog = load_catalog(catalog_files)
    comparison = compare(first, second, catalog, list(views) or None, top_opcodes)
    # B is A's reference: the rules compare A alone and A against B.
    result = diagnose(first, second, extra_rule_files=rule_files, disabled=disabled, catalog=catalog)
    if fmt == "json":
        _emit(structured.dumps(structured.diff_document(comparison, findings.diagnosis_json(result))))
    elif fmt == "csv":
        _emit(structured.diff_csv(comparison))
    elif fmt == "markdown":
        _emit(findings.headline_markdown(comparison, result) + "\n" + markdown.diff_markdown(comparison) + "\n"
              + findings.findings_markdown(result.findings, result.not_evaluated, result))
    else:
        console = terminal.make_console()
        findings.print_headline(comparison, result, console)
        terminal.print_comparison(comparison, console)
        findings.print_findings(result.findings, console, result.not_evaluated, result)


@click.command()
@_catalog_option
def views(catalog_files):
    """List the metric views and their entries (the catalog)."""
    catalog = load_catalog(catalog_files)
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
