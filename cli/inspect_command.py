"""`kernelscope inspect`: compile a target without a GPU and report what the binary holds."""

from __future__ import annotations

import os
import shlex
import sys

import click

from kernelscope.cli.output_files import check_output_file, check_output_folder, force_option
from kernelscope.cli.report_commands import full_names_option
from kernelscope.errors import UserError


FORMATS = ("table", "json")
# Views that a compile can fill (in part); throughput, memory and stalls need a run.
STATIC_VIEWS = ["launch", "static", "instructions"]
EXIT_EXPECTED_SASS_MISSING = 1


def _command_line() -> str:
    return " ".join(shlex.quote(a) for a in ["kernelscope", *sys.argv[1:]])


def _print_inspection(console, inspection, catalog) -> None:
    from rich.table import Table
    from rich.text import Text

    from kernelscope.profiler.compare import readings
    from kernelscope.profiler.units import format_value, kernel_label
    from kernelscope.reports.terminal import describe

    settings = ", ".join(f"{k}={v}" for k, v in inspection.config.items())
    shape = ", ".join(f"{k}={v}" for k, v in inspection.shape.items())
    console.print(Text(f"{inspection.kernel}", style="bold") + Text(
        f"  {inspection.arch}  {inspection.dtype}  config {settings}  shape {shape}", style=""))
    console.print(Text("compile-only: counts are instructions in the binary, not executed; "
                       + ("compile taken from the cache" if inspection.from_cache else "compiled now"),
                       style="dim"))
    for k in inspection.kernels:
        p = k.profile
        console.print(Text(f"[{p.index}] {kernel_label(p)}", style="bold cyan"), overflow="fold")
        console.print(f"    {describe(p)}")
        for view, rs in readings(p, catalog, STATIC_VIEWS).items():
            table = Table(title=catalog.views[view].title, title_justify="left", show_edge=False, pad_edge=False)
            table.add_column("Metric")
            table.add_column("Value", justify="right")
            table.add_column("id", style="dim")
            # Occupancy, waves and executed counts need a run: leave them out rather than print n/a.
            shown = [r for r in rs if r.collected]
            for r in shown:
                table.add_row(r.definition.label, format_value(r.value, r.definition.unit), r.definition.id)
            if shown:
                console.print(table)
        if inspection.expected_sass:
            marks = [Text(f"{op} ", style="red" if op in k.missing_expected else "green")
                     for op in inspection.expected_sass]
            line = Text("Expected opcodes: ")
            for mark, op in zip(marks, inspection.expected_sass):
                line += mark
                line += Text("(missing) " if op in k.missing_expected else "", style="red")
            console.print(line)
        mix = sorted(p.instruction_mix.items(), key=lambda kv: (-kv[1], kv[0]))
        if mix:
            table = Table(title="SASS instruction histogram (static counts)", title_justify="left",
                          show_edge=False, pad_edge=False)
            columns = 4
            for _ in range(columns):
                table.add_column("Opcode")
                table.add_column("Count", justify="right")
            rows = (len(mix) + columns - 1) // columns
            for r in range(rows):
                cells = []
                for c in range(columns):
                    i = c * rows + r
                    cells += [mix[i][0], str(int(mix[i][1]))] if i < len(mix) else ["", ""]
                table.add_row(*cells)
            console.print(table)
        console.print()


def _inspect(target, config, shape, dtype, arch, no_cache, line_info=False):
    from kernelscope.profiler.static import inspect_target

    # Per-line listings read the cubin themselves: the resource analysis is skipped for them.
    return inspect_target(target, config=config, shape=shape, dtype=dtype, arch=arch,
                          use_cache=not no_cache, command_line=_command_line(), line_info=line_info,
                          analyse_binary=not line_info)


def _line_profiles(inspection, no_cache):
    """Per-line records of each kernel of a compile; one clear error when it carries no line information."""
    from kernelscope.profiler.static_lines import static_line_profiles

    profiles = static_line_profiles(inspection.cubin, None, use_cache=not no_cache)
    if not any(p.has_line_info for p in profiles.values()):
        raise UserError(f"{inspection.kernel}: the compile carries no line information "
                        "(the DSL reads CUTE_DSL_LINEINFO once per process: run inspect --lines in a fresh one)")
    return list(profiles.values())


def _inspect_lines(first, second, fmt, top, no_cache):
    from kernelscope.profiler.line_compare import compare_lines
    from kernelscope.reports import lines as line_view
    from kernelscope.reports import structured
    from kernelscope.reports.terminal import make_console

    a = _line_profiles(first, no_cache)
    b = _line_profiles(second, no_cache) if second else None
    if fmt == "json":
        doc = {"schema": "kernelscope.inspect-lines", "schema_version": 1, "a": _summary(first, False),
               "a_lines": [p.to_dict() for p in a]}
        if b is not None:
            doc["b"] = _summary(second, False)
            doc["b_lines"] = [p.to_dict() for p in b]
            doc["comparisons"] = [compare_lines(x, y).to_dict(top) for x, y in zip(a, b)]
        sys.stdout.write(structured.dumps(doc))
        return
    console = make_console()
    note = "compile-only: shares are of the instructions in the binary, not of executed time"
    if b is None:
        for index, lp in enumerate(a):
            console.print(f"[dim]{note}; {'compile taken from the cache' if first.from_cache else 'compiled now'}[/dim]")
            line_view.print_line_profile(console, f"[{index}] {lp.kernel}", lp, limit=top)
            console.print()
        return
    if len(a) != len(b):
        click.echo(f"note: A compiled to {len(a)} kernels, B to {len(b)}; comparing the first "
                   f"{min(len(a), len(b))} by position", err=True)
    settings = lambda i: ", ".join(f"{k}={v}" for k, v in i.config.items())  # noqa: E731
    for x, y in zip(a, b):
        console.print(f"[dim]{note}[/dim]")
        line_view.print_line_comparison(console, compare_lines(x, y), f"{x.kernel} ({settings(first)})",
                                        f"{y.kernel} ({settings(second)})", limit=top)
        console.print()


@click.command()
@click.argument("target")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Config override(s), e.g. --config threads=512 or --config stages=4,cluster=2x1 "
                   "(syntax: README, Configs and shapes).")
@click.option("--vs-config", "vs_configs", multiple=True, metavar="KEY=VALUE",
              help="Compare with this config (overrides on the defaults, like --config).")
@click.option("--shape", "shape", default=None, metavar="NAME=SIZE,...",
              help="Shape override, e.g. --shape M=4096,N=8192 (default: the target's first shape).")
@click.option("--dtype", default=None, help="Element type (default: the target's first).")
@click.option("--arch", default="sm_90a", show_default=True, type=click.Choice(["sm_90a", "sm_120a"]),
              help="Architecture to compile for (the target must claim it).")
@click.option("--save-sass", "sass_dir", type=click.Path(file_okay=False), default=None,
              help="Write the cubin and each kernel's SASS listing into this folder.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--no-cache", is_flag=True, help="Compile even when the compile cache holds this request.")
@full_names_option
@click.option("--lines", "lines", is_flag=True,
              help="Compile with line information and group each kernel's SASS by Python file:line, heaviest first "
                   "(with --vs-config: the two configs line by line).")
@click.option("--top", "top", default=20, show_default=True, help="Lines to list with --lines.")
@click.option("--loops", "loops", is_flag=True,
              help="Also list each kernel's loops found in its SASS (backward branches): instructions "
                   "per iteration, tensor-core MMAs, barriers, uniform-datapath share, commonest opcodes.")
@click.option("--executed", "executed", default=None, metavar="REPORT[:REGEX|:@INDEX]",
              help="A profile of this kernel: its executed-instruction counts laid over the SASS histogram.")
@force_option
def inspect(target, configs, vs_configs, shape, dtype, arch, sass_dir, fmt, no_cache, lines, top, loops, executed,
            force):
    """Compile TARGET for ARCH without a GPU and report its registers, spills, shared memory,
    barriers, SASS instruction histogram and whether the opcodes it declares are present.

    TARGET is a registered kernel name or path/to/file.py:NAME. Exit status 1 when an
    opcode the kernel declares (KernelSpec.expected_sass) is missing from its SASS.
    The JSON output (--format json) is a profile file that `show` and `diff` read.
    Compiles are cached under $KERNELSCOPE_CACHE_DIR (default: $XDG_CACHE_HOME/kernelscope
    or ~/.cache/kernelscope).
    """
    from kernelscope.profiler.assignments import parse_config, parse_shape
    from kernelscope.profiler.catalog import load_catalog
    from kernelscope.profiler.compare import compare, readings
    from kernelscope.reports import structured, terminal
    from kernelscope.reports.terminal import make_console

    config = parse_config(configs)
    shape = parse_shape(shape) if shape else {}
    check_output_folder(sass_dir, "SASS listings")
    first = _inspect(target, config, shape, dtype, arch, no_cache, lines)
    second = None
    if vs_configs:
        second = _inspect(target, parse_config(vs_configs, "--vs-config"), shape, dtype, arch, no_cache, lines)

    if sass_dir:
        # The names depend on the compile; nothing is written until every one is known free.
        for inspection, label in ((first, "_A" if second else ""), (second, "_B")):
            if inspection is not None and os.path.isdir(sass_dir):
                stem = os.path.join(sass_dir, f"{inspection.kernel}_{inspection.arch}{label}")
                for path in [f"{stem}.cubin"] + [f"{stem}_{k.profile.index}.sass" for k in inspection.kernels]:
                    check_output_file(path, force, "SASS listing")
        written = _save(first, sass_dir, "_A" if second else "")
        if second:
            written += _save(second, sass_dir, "_B")
        click.echo(f"wrote {len(written)} files to {sass_dir}", err=True)

    catalog = load_catalog()
    titles = {v: catalog.views[v].title for v in STATIC_VIEWS}
    if lines:
        if loops:
            raise UserError("--loops and --lines are separate listings: ask for one at a time")
        # The per-line listing replaces the resource tables (and their expected-opcode check).
        return _inspect_lines(first, second, fmt, top, no_cache)
    if second is None:
        if fmt == "json":
            entries = [(p, readings(p, catalog, STATIC_VIEWS)) for p in first.profiles]
            extra = {"inspect": _summary(first)}
            if loops:
                extra["loops"] = _loops_json(first)
            if executed:
                extra["executed"] = [r.to_dict() for r in _heat(first, executed)[0].rows]
            doc = structured.show_document(first.profiles[0].source if first.profiles else target,
                                           entries, titles, extra=extra)
            sys.stdout.write(structured.dumps(doc))
        else:
            _print_inspection(make_console(), first, catalog)
            if loops:
                _print_loops(make_console(), first, "")
            if executed:
                from kernelscope.reports.terminal import print_heat

                heat, static_name, profile_name = _heat(first, executed)
                print_heat(make_console(), heat, static_name, profile_name)
    else:
        pairs = list(zip(first.profiles, second.profiles))
        if len(first.profiles) != len(second.profiles):
            click.echo(f"note: A compiled to {len(first.profiles)} kernels, B to {len(second.profiles)}; "
                       f"comparing the first {len(pairs)} by position", err=True)
        comparisons = [compare(a, b, catalog, STATIC_VIEWS) for a, b in pairs]
        if fmt == "json":
            docs = [structured.diff_document(c) for c in comparisons]
            doc = {"schema": "kernelscope.inspect-diff", "schema_version": 1,
                   "a": _summary(first), "b": _summary(second), "comparisons": docs}
            if loops:
                doc["a_loops"], doc["b_loops"] = _loops_json(first), _loops_json(second)
            sys.stdout.write(structured.dumps(doc))
        else:
            console = make_console()
            for c in comparisons:
                terminal.print_comparison(c, console)
                console.print()
            if loops:
                _print_loops(console, first, "A ")
                _print_loops(console, second, "B ")

    missing = [(first, first.missing_expected)] + ([(second, second.missing_expected)] if second else [])
    problems = [f"{i.kernel} ({', '.join(f'{k}={v}' for k, v in i.config.items())}): {' '.join(m)}"
                for i, m in missing if m]
    if problems:
        click.echo("kernelscope: expected opcodes missing from the SASS: " + "; ".join(problems), err=True)
        sys.exit(EXIT_EXPECTED_SASS_MISSING)


def _loops_json(inspection) -> list[dict]:
    from kernelscope.toolchain.sass_loops import find_loops

    return [{"kernel": k.profile.name, "index": k.profile.index,
             "loops": [loop.to_dict() for loop in find_loops(k.sass)]} for k in inspection.kernels]


def _print_loops(console, inspection, label: str) -> None:
    from kernelscope.reports.loops import print_loops
    from kernelscope.toolchain.sass_loops import find_loops

    settings = ", ".join(f"{k}={v}" for k, v in inspection.config.items())
    for k in inspection.kernels:
        print_loops(console, f"{label}[{k.profile.index}] {inspection.kernel} ({settings})", find_loops(k.sass))
        console.print()


def _heat(inspection, spec: str):
    """(HeatMap, static kernel name, profile name): the profile's executed counts over the SASS."""
    from kernelscope.profiler.hot_instructions import join
    from kernelscope.profiler.selection import resolve_one

    profile = resolve_one(spec, "--executed")
    if not profile.instruction_mix:
        raise UserError(f"--executed {spec}: the profile holds no per-opcode instruction counts "
                        "(collect sass__inst_executed_per_opcode: --set quick or full)")
    kernels = [k for k in inspection.kernels if k.profile.name == profile.name] or inspection.kernels[:1]
    static = kernels[0].profile
    return join(static.instruction_mix, profile.instruction_mix), static.name, profile.name


def _save(inspection, folder, label):
    from kernelscope.profiler.static import save_sass

    return save_sass(inspection, folder, label)


def _summary(inspection, expected: bool = True) -> dict:
    d = {
        "target": inspection.target,
        "kernel": inspection.kernel,
        "arch": inspection.arch,
        "dtype": inspection.dtype,
        "config": inspection.config,
        "shape": inspection.shape,
        "expected_sass": inspection.expected_sass,
        "expected_sass_missing": inspection.missing_expected,
        "from_cache": inspection.from_cache,
    }
    if not expected:
        # Not checked: a per-line listing skips the binary's resource analysis.
        del d["expected_sass_missing"]
    return d


def register(group: click.Group) -> None:
    group.add_command(inspect)
