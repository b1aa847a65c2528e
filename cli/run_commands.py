"""`kernelscope run`, `profile` and `sweep`: measure a target against its reference.

TARGET is a registered name (`kernelscope run rmsnorm`) or `path/to/file.py:NAME` for a
kernel defined in the user's own file. Exit codes: 0 success; 1 `run` found the output
wrong; 2 a usage or input error; 3 the GPU, ncu or the profiled process failed. `run` also exits 1
when the target's timing failed a check (SUSPECT: docs/timing-checks.md).
"""

from __future__ import annotations

import json
import os
import re

import click

from kernelscope.api.measuring import reference_name, require_gpu, resolve_target
from kernelscope.cli.output_files import atomic_path, check_output_file, check_output_folder, force_option
from kernelscope.errors import UserError
from kernelscope.reports.run_output import print_run as _print_run


def _spec_and_shapes(target: str, shapes: tuple[str, ...], dtype: str | None, configs: tuple[str, ...], *, several: bool):
    spec, parsed_shapes, dtype, config = resolve_target(target, shapes, dtype, configs, multi=several)
    _check_config_types(spec, config, several)
    return spec, parsed_shapes, dtype, config


def _check_config_types(spec, config: dict, several: bool) -> None:
    """A value whose type cannot be the default's (threads=abc where threads is 256) is a usage
    error now, not a failed compile per config later."""
    for key, given in config.items():
        default = spec.default_config.get(key)
        if not isinstance(default, (int, float)) or isinstance(default, bool):
            continue
        for value in (given if several else [given]):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    (isinstance(default, int) and not isinstance(value, int)):
                kind = "an integer" if isinstance(default, int) else "a number"
                raise UserError(f"--config {key}={value}: {key} takes {kind} (default {default})")


def _write_json(path: str, data, force: bool) -> None:
    check_output_file(path, force, "JSON results")
    with atomic_path(path, "JSON results", force=force) as tmp:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, default=str)


def _target_arguments(shape_option):
    """TARGET, --vs, the command's --shape (several for run and sweep, one for profile; the syntax is
    the one of every command) and --dtype: the first arguments of run, profile and sweep."""
    vs_option = click.option("--vs", "vs", default=None,
                             help="Reference name (default: the target's first); 'none' for none.")
    dtype_option = click.option("--dtype", default=None, help="Input dtype (default: the target's first).")

    def apply(command):
        for decorator in (dtype_option, shape_option, vs_option, click.argument("target")):
            command = decorator(command)
        return command
    return apply


def _do_bench_target(spec, shape, dtype, config, seed, arch, rep_ms) -> float:
    try:
        from triton.testing import do_bench
    except ImportError:
        raise UserError("--do-bench needs triton, which is not installed") from None
    from kernelscope.profiler.measure import compile_checked

    inputs = spec.make_inputs(shape, dtype, seed, "cuda")
    fn = compile_checked(spec, config, shape, dtype, arch).bound(inputs)
    fn()
    return float(do_bench(fn, warmup=25, rep=rep_ms, return_mode="median"))


@click.command("run")
@_target_arguments(click.option(
    "--shape", "shapes", multiple=True,
    help="NAME=SIZE,... e.g. M=4096,N=4096, repeatable: each is one shape (default: the target's first; "
         "syntax: README, Configs and shapes)."))
@click.option("--config", "configs", multiple=True,
              help="KEY=VALUE,... over the default config, e.g. stages=4,cluster=2x1 (repeatable).")
@click.option("--seed", default=0, show_default=True)
@click.option("--arch", default="sm_90a", show_default=True)
@click.option("--rep-ms", default=200.0, show_default=True, help="Time budget for the timed launches of each side.")
@click.option("--no-flush", is_flag=True, help="Do not flush L2 between launches.")
@click.option("--no-peaks", is_flag=True, help="Do not measure the device's copy/matmul peaks.")
@click.option("--do-bench", is_flag=True, help="Also time the target with triton.testing.do_bench and print both.")
@click.option("--fresh-inputs", is_flag=True, help="New input values before every launch (outside the timed events).")
@click.option("--ncu-check", is_flag=True, help="Also profile the target once under ncu: its clock must agree with the events.")
@click.option("--json", "json_path", default=None, type=click.Path(dir_okay=False), help="Write the results as JSON.")
@force_option
def run_cmd(target, vs, shapes, dtype, configs, seed, arch, rep_ms, no_flush, no_peaks, do_bench, fresh_inputs,
            ncu_check, json_path, force):
    """Check TARGET against an fp32 reference, then time it and its reference."""
    from kernelscope.profiler import measure
    from kernelscope.reports.terminal import make_console

    spec, shape_list, dtype, overrides = _spec_and_shapes(target, shapes, dtype, configs, several=False)
    ref = reference_name(spec, vs)
    check_output_file(json_path, force, "JSON results")
    require_gpu("run")
    console = make_console()
    results = []
    failed = False
    for shape in shape_list:
        config = spec.config_for(shape, dtype, overrides)
        result = measure.run_target(spec, ref, shape, dtype, config, seed=seed, arch=arch, rep_ms=rep_ms,
                                    flush_l2=not no_flush, peaks=not no_peaks, fresh_inputs=fresh_inputs)
        if ncu_check:
            from kernelscope.cli.cross_check import cross_check

            cross_check(spec, target, shape, dtype, config, seed, arch, result.target_side.timing, result.peaks)
        db = _do_bench_target(spec, shape, dtype, config, seed, arch, rep_ms) if do_bench else None
        _print_run(console, result, db)
        d = result.to_dict()
        if db is not None:
            d["do_bench_median_ms"] = db
        results.append(d)
        c = result.target_side.correctness
        suspect = result.target_side.timing is not None and result.target_side.timing.checks.suspect
        failed = failed or (c is not None and not c.ok) or suspect
    if json_path:
        _write_json(json_path, results, force)
    if failed:
        raise SystemExit(1)


# --- profile ----------------------------------------------------------------------------------

from kernelscope.profiler.ncu import NAMED_SETS  # noqa: E402  (the set names the CLI accepts)


def _section_set(sets: tuple[str, ...]):
    if not sets:
        return "quick"
    if len(sets) == 1 and sets[0] in NAMED_SETS:
        return sets[0]
    if any(s in NAMED_SETS for s in sets):
        raise UserError(f"--set {'/'.join(NAMED_SETS)} cannot be combined with other sections")
    # ncu's section identifiers are CamelCase (SpeedOfLight, MemoryWorkloadAnalysis_Tables):
    # a lower-case word is a mistyped set name, refused here rather than by ncu on the GPU.
    bad = [s for s in sets if not re.fullmatch(r"[A-Z][A-Za-z0-9_]*", s)]
    if bad:
        raise UserError(f"--set {bad[0]}: not a set ({', '.join(NAMED_SETS)}) nor an ncu section identifier "
                        "(such as SpeedOfLight; `ncu --list-sections` lists them)")
    return list(sets)


def _metric_names(text: str | None) -> list[str]:
    names = [m.strip() for m in (text or "").split(",") if m.strip()]
    bad = [m for m in names if not re.fullmatch(r"[a-z][\w.:]*", m)]
    if bad:
        raise UserError(f"--metrics {bad[0]!r}: not an ncu metric name (such as dram__bytes_read.sum)")
    return names


def _checked_report_path(path: str, force: bool) -> str:
    """The report and the sidecar beside it are refused now if they exist (ncu would replace them)."""
    from kernelscope.profiler.ncu import SIDECAR_SUFFIX, normalise_report_path

    path = normalise_report_path(path)
    check_output_file(path, force, "report")
    check_output_file(path + SIDECAR_SUFFIX, force, "report's sidecar")
    return path


def _default_report_path(spec_name: str, ref: str | None) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{spec_name}-vs-{ref or 'none'}")
    return f"kernelscope-{safe}.ncu-rep"


def profile_once(spec, target, ref, shape, dtype, config, report_path, section_set, clock, cache, seed, arch,
                 line_info=True, source_counters=True, extra_metrics=(), launch_count=None):
    from kernelscope.profiler.ncu import ProfileRequest, find_ncu, run_profile
    from kernelscope.rules.collection import metrics_for_set

    ncu = find_ncu()
    req = ProfileRequest(target=target, reference=ref or "", shape=shape, dtype=dtype, config=config,
                         report_path=report_path, section_set=section_set, clock_control=clock,
                         cache_control=cache, seed=seed, arch=arch,
                         metrics=list(dict.fromkeys([*metrics_for_set(section_set), *extra_metrics])),
                         line_info=line_info, source_counters=source_counters, launch_count=launch_count)
    return run_profile(req, ncu=ncu)


@click.command("profile")
@_target_arguments(click.option(
    "--shape", default=None,
    help="NAME=SIZE,... e.g. M=4096,N=4096 (default: the target's first; syntax: README, Configs and shapes)."))
@click.option("--config", "configs", multiple=True,
              help="KEY=VALUE,... over the default config, e.g. stages=4,cluster=2x1 (repeatable).")
@click.option("--set", "sets", multiple=True, help="quick (default: the catalog's metrics by name, fewest passes), sections (curated ncu sections), full, "
                   "or ncu section names (repeatable).")
@click.option("--section", "sections", multiple=True, metavar="NAME",
              help="An ncu section to collect (repeatable; as ncu's --section): the same as --set NAME.")
@click.option("--metrics", "metrics", default=None, metavar="A,B,...",
              help="Extra ncu metrics to collect by name (as ncu's --metrics), added to the set.")
@click.option("-c", "--launch-count", "launch_count", type=click.IntRange(min=1), default=None,
              help="Profile at most this many kernel launches (as ncu's -c).")
@click.option("-o", "--output", "output", default=None, help="Report path (.ncu-rep); default in the current folder.")
@click.option("--clock-control", "clock", type=click.Choice(["none", "base"]), default="none", show_default=True,
              help="ncu clock control: none leaves the GPU's clocks as they are; base locks them to base.")
@click.option("--cache-control", "cache", type=click.Choice(["all", "none"]), default="all", show_default=True,
              help="ncu cache control: all flushes caches before each replay pass.")
@click.option("--seed", default=0, show_default=True)
@click.option("--arch", default="sm_90a", show_default=True)
@click.option("--line-info/--no-line-info", default=True, show_default=True,
              help="Compile CuTe DSL code with line information and import the source into the report "
                   "(`show --lines`); the SASS is the same either way.")
@click.option("--source-counters/--no-source-counters", default=True, show_default=True,
              help="Collect ncu's SourceCounters section: stall samples and executed instructions per instruction.")
@force_option
def profile_cmd(target, vs, shape, dtype, configs, sets, sections, metrics, launch_count, output, clock, cache,
                seed, arch, line_info, source_counters, force):
    """Profile one launch of TARGET and one of its reference under ncu and show the diff."""
    from kernelscope.profiler.assignments import format_config, format_shape
    from kernelscope.reports import profile_view
    from kernelscope.reports.terminal import make_console

    spec, shape_list, dtype, overrides = _spec_and_shapes(target, (shape,) if shape else (), dtype, configs, several=False)
    ref = reference_name(spec, vs)
    section_set = _section_set(sets + sections)
    extra_metrics = _metric_names(metrics)
    report_path = _checked_report_path(output or _default_report_path(spec.name, ref), force)
    require_gpu("profile")
    config = spec.config_for(shape_list[0], dtype, overrides)
    console = make_console()
    run = profile_once(spec, target, ref, shape_list[0], dtype, config, report_path, section_set, clock, cache, seed,
                       arch, line_info, source_counters, extra_metrics=extra_metrics, launch_count=launch_count)
    console.print(f"report: {run.report_path}  (sidecar {os.path.basename(run.sidecar_path)})")
    passes = ", ".join(f"{p}" for _, p in run.passes) or "n/a"
    console.print(f"ncu: {len(run.passes)} kernel(s) profiled, replay passes per kernel: {passes}; "
                  f"wall {run.wall_s:.1f} s; clock control {clock}, cache control {cache}; "
                  f"sections {section_set if isinstance(section_set, str) else ','.join(section_set)}")
    st = run.worker_status
    if st and not st.get("correct", True):
        console.print(f"[red]warning:[/red] the target's output is wrong ({st.get('bad_count')} elements over "
                      f"tolerance, max abs {st.get('max_abs_error'):.3g}); `kernelscope run` locates the errors")
    console.print(f"{spec.name} shape {format_shape(shape_list[0])} {dtype} config {format_config(config)}")
    console.file.flush()
    profile_view.show_in_fresh_process(run.report_path, ref is not None)


# --- sweep ------------------------------------------------------------------------------------

def profile_point(plan, point) -> dict:
    """ncu of one sweep point (the quick set) and its key metrics; runs where the point runs."""
    from kernelscope.kernels import registry
    from kernelscope.reports import profile_view

    spec = registry.resolve(plan.target)
    path = os.path.join(plan.report_dir, f"{spec.name}-point{point.index}.ncu-rep")
    try:
        # A sweep reads summary metrics only: no line information, no per-instruction section.
        run = profile_once(spec, plan.target, None, point.shape, plan.dtype, point.config, path, "quick",
                           "none", "all", plan.seed, plan.arch, line_info=False, source_counters=False)
        return dict(profile_view.key_metrics_in_fresh_process(run.report_path), report=run.report_path)
    except UserError as e:
        return {"error": str(e)}


def _sweep_journal_path(json_path: str | None, name: str) -> str:
    """Beside --json (a rerun then asks for --resume); else a new file named by the time."""
    if json_path:
        return os.path.splitext(json_path)[0] + ".jsonl"
    import time

    return f"kernelscope-sweep-{name}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def _absolute_target(target: str) -> str:
    """A `file.py:NAME` target as an absolute path, so workers elsewhere resolve the same file."""
    path, sep, name = target.rpartition(":")
    return f"{os.path.abspath(path)}:{name}" if sep and path.endswith(".py") and os.path.isfile(path) else target


@click.command("sweep")
@_target_arguments(click.option(
    "--shape", "shapes", multiple=True,
    help="NAME=SIZE,... (repeatable: every config at every shape; default: the target's first)."))
@click.option("--config", "configs", multiple=True,
              help="KEY=V1,V2,... e.g. threads=128,256,vec=4,8 (repeatable); every combination is tried. "
                   "Default: the target's config space.")
@click.option("--profile", "with_profile", is_flag=True, help="Also profile each valid config under ncu (quick set).")
@click.option("--report-dir", default="kernelscope-sweep", show_default=True, help="Where --profile writes reports.")
@click.option("--seed", default=0, show_default=True)
@click.option("--arch", default="sm_90a", show_default=True)
@click.option("--rep-ms", default=100.0, show_default=True)
@click.option("--fresh-inputs", is_flag=True, help="New input values before every launch (outside the timed events).")
@click.option("--json", "json_path", default=None, type=click.Path(dir_okay=False), help="Write the merged sweep JSON.")
@click.option("--gpus", default=None, metavar="all|0,1,...",
              help="Spread the points over these GPUs of this host (a local Dask cluster).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Submit the points to this Dask scheduler (default: $DASK_SCHEDULER_ADDRESS).")
@click.option("--workers-per-gpu", default=2, show_default=True,
              help="With --gpus: worker processes per GPU (one compiles while another times).")
@click.option("--journal", "journal_path", default=None, type=click.Path(dir_okay=False),
              help="The JSON Lines file every finished point is appended to (default: beside --json).")
@click.option("--resume", "resume_path", default=None, type=click.Path(dir_okay=False),
              help="Continue the sweep of this journal: its finished points are skipped.")
@force_option
def sweep_cmd(target, vs, shapes, dtype, configs, with_profile, report_dir, seed, arch, rep_ms, fresh_inputs, json_path,
              gpus, scheduler, workers_per_gpu, journal_path, resume_path, force):
    """Time every combination of config values; invalid ones are listed, not fatal. Every finished
    point is journaled at once; exit 130 on Ctrl-C with what finished kept."""
    from kernelscope.profiler import measure, sweep_runner
    from kernelscope.profiler.executors import make_executor
    from kernelscope.profiler.sweep_journal import Journal
    from kernelscope.reports.progress import SweepProgressView
    from kernelscope.reports.sweep_view import print_sweep
    from kernelscope.reports.terminal import make_console

    spec, shape_list, dtype, space = _spec_and_shapes(target, shapes, dtype, configs, several=True)
    space = space or dict(spec.config_space)
    if not space:
        raise UserError(f"{spec.name} declares no config space: pass --config KEY=V1,V2")
    if journal_path and resume_path and journal_path != resume_path:
        raise UserError("--journal and --resume name different files: the resumed journal is appended to")
    ref = reference_name(spec, vs)
    check_output_file(json_path, force, "JSON results")
    if with_profile:
        check_output_folder(report_dir, "sweep's reports")
    if not (gpus or scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")):
        require_gpu("sweep")
    plan = sweep_runner.SweepPlan(target=_absolute_target(target), reference=ref, dtype=dtype, arch=arch, seed=seed,
                                  rep_ms=rep_ms, profile=with_profile, report_dir=os.path.abspath(report_dir),
                                  fresh_inputs=fresh_inputs)
    points = sweep_runner.plan_points(shape_list, measure.combinations(space, spec.default_config))
    journal = Journal.start(resume_path or journal_path or _sweep_journal_path(json_path, spec.name),
                            plan.header(shape_list), resume=resume_path is not None)
    console = make_console()
    executor = make_executor(gpus, scheduler, workers_per_gpu)
    try:
        console.print(f"sweeping {len(points)} point(s) of {spec.name} ({dtype}) on {executor.describe()}; "
                      f"journal {journal.path}")
        view = SweepProgressView(console, len(points))
        outcome = sweep_runner.run_sweep(plan, points, executor, journal, on_progress=view.update,
                                         profile_fn=profile_point if with_profile else None)
        view.close(outcome.progress)
    finally:
        executor.close()
    print_sweep(console, outcome.document, list(space), with_profile)
    if json_path:
        try:
            _write_json(json_path, outcome.document, force)
        except OSError as e:
            raise UserError(f"cannot write {json_path}: {e.strerror or e} (the journal {journal.path} holds "
                            "every finished point)") from None
    if outcome.interrupted:
        click.echo(f"kernelscope: interrupted: {outcome.progress.done + outcome.progress.skipped} of {len(points)} "
                   f"points finished, kept in {journal.path}; continue with --resume {journal.path}", err=True)
        raise SystemExit(130)


def register(group) -> None:
    group.add_command(run_cmd)
    group.add_command(profile_cmd)
    group.add_command(sweep_cmd)
