"""Building and running the Nsight Compute command that profiles the worker.

ncu only profiles launches inside the worker's `ks:` NVTX push/pop ranges, with clock
and cache control stated explicitly. Every run leaves a sidecar
`<report>.kernelscope.json` next to the report: the command line, target, reference,
shape, config, clock and cache control, replay passes and wall time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelscope.errors import UserError
from kernelscope.profiler import worker
from kernelscope.profiler.documents import read_json_or_empty
from kernelscope.toolchain.tools import find_cuda_tool

# Named sets (`profile --set NAME`):
#   quick     the Occupancy section and the metrics the request names (the caller chooses
#             them: kernelscope.rules.collection picks what every view reads) - the fewest
#             replay passes that still fill every view;
#   sections  the curated sections below plus the metrics the request names (ncu's own
#             section pages and rule output appear in the GUI);
#   full      ncu's `--set full` (adds SourceCounters, per-PC sampling, the most passes).
NAMED_SETS = ("quick", "sections", "full")
QUICK_SECTIONS = (
    "SpeedOfLight",
    "LaunchStats",
    "Occupancy",
    "ComputeWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Tables",
    "InstructionStats",
    "WarpStateStats",
)
CLOCK_CONTROLS = ("none", "base")
CACHE_CONTROLS = ("all", "none")
PERMISSION_FIX = ("GPU performance counters are restricted to admin users (ERR_NVGPUCTRPERM): run as root, "
                  "or allow all users with `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in "
                  "/etc/modprobe.d and reload the driver (https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
SIDECAR_SUFFIX = ".kernelscope.json"


@dataclass
class ProfileRequest:
    target: str
    reference: str
    shape: dict[str, int]
    dtype: str
    config: dict[str, Any]
    report_path: str                       # ends in .ncu-rep
    section_set: str | list[str] = "quick"   # "quick", "full" or a list of section names
    clock_control: str = "none"
    cache_control: str = "all"
    seed: int = 0
    arch: str = "sm_90a"
    # Metrics collected by name on top of the sections. The driver does not choose them:
    # what the views read is known above it (kernelscope.rules.collection.metrics_for_set).
    metrics: list[str] = field(default_factory=list)
    # Compile the CuTe DSL code with line information (it changes no SASS instruction, only adds
    # debug sections: tests/test_source_lines.py) and collect per-instruction samples with the
    # source imported, so a report maps its time back to Python lines.
    line_info: bool = True
    source_counters: bool = True
    launch_count: int | None = None        # ncu's -c: profile at most this many launches


@dataclass
class ProfileRun:
    report_path: str
    sidecar_path: str
    command: list[str]
    wall_s: float
    passes: list[tuple[str, int]]          # (kernel as ncu printed it, replay passes)
    returncode: int
    output: str
    worker_status: dict[str, Any]

    @property
    def total_passes(self) -> int:
        return sum(p for _, p in self.passes)


def find_ncu() -> str:
    """ncu, looked for like every CUDA tool (kernelscope.toolchain.tools); UserError if none."""
    return find_cuda_tool("ncu")


def report_base(path: str) -> str:
    """ncu's -o takes the name without the .ncu-rep extension."""
    return path[: -len(".ncu-rep")] if path.endswith(".ncu-rep") else path


def normalise_report_path(path: str) -> str:
    return path if path.endswith(".ncu-rep") else path + ".ncu-rep"


SOURCE_COUNTERS_SECTION = "SourceCounters"


def source_args(req: "ProfileRequest") -> list[str]:
    """The per-instruction section (unless the set holds it already) and the source import."""
    out: list[str] = []
    full = req.section_set == "full"
    listed = not isinstance(req.section_set, str) and SOURCE_COUNTERS_SECTION in req.section_set
    if req.source_counters and not full and not listed:
        out += ["--section", SOURCE_COUNTERS_SECTION]
    if req.line_info:
        out += ["--import-source", "yes"]
    return out


def section_args(section_set: str | list[str]) -> list[str]:
    if isinstance(section_set, str):
        if section_set == "quick":
            # Occupancy is computed from the launch (no replay of its own) and carries the
            # theoretical occupancy, which has no collectable counter.
            return ["--section", "Occupancy"]
        if section_set == "sections":
            names: list[str] = list(QUICK_SECTIONS)
        elif section_set == "full":
            return ["--set", "full"]
        else:
            names = [section_set]
    else:
        names = list(section_set)
    if not names:
        raise UserError("no ncu section given")
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_]+", n)]
    if bad:
        raise UserError(f"not an ncu section name: {', '.join(bad)}")
    out: list[str] = []
    for n in names:
        out += ["--section", n]
    return out


def worker_command(req: ProfileRequest, status_path: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "kernelscope.profiler.worker", "--target", req.target,
           "--shape", json.dumps(req.shape), "--dtype", req.dtype,
           "--config", json.dumps(req.config, default=list), "--seed", str(req.seed), "--arch", req.arch]
    if req.reference:
        cmd += ["--vs", req.reference]
    if status_path:
        cmd += ["--status", status_path]
    return cmd


def requested_metrics(req: ProfileRequest) -> list[str]:
    """Metrics collected by name: the request's, once each, in its order."""
    return list(dict.fromkeys(req.metrics))


def _cached_answer(ncu: str, question: str, ask):
    """ncu's answer to `question` (a JSON value computed by `ask()`, None when it failed),
    kept on disk per ncu binary (path, size, modification time): asking takes seconds."""
    import hashlib

    from kernelscope.toolchain.disk_cache import cache_root, write_json_atomically

    try:
        st = os.stat(ncu)
        ident = f"{os.path.realpath(ncu)}|{st.st_size}|{st.st_mtime_ns}|{question}"
    except OSError:
        return ask()
    kept = cache_root() / "ncu-answers" / f"{hashlib.sha256(ident.encode()).hexdigest()[:24]}.json"
    answer = read_json_or_empty(str(kept)).get("answer")
    if answer:
        return answer
    answer = ask()
    if answer:
        write_json_atomically(kept, {"ncu": ident, "answer": answer})
    return answer


def known_metric_bases(ncu: str, chip: str | None = "gh100") -> set[str] | None:
    """Base metric names this ncu knows for the chip (None when the query fails)."""
    def ask():
        cmd = [ncu, "--query-metrics"] + (["--chip", chip] if chip else [])
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return sorted({ln.split()[0] for ln in r.stdout.splitlines()
                       if ln.strip() and re.match(r"^[a-z]\w*__\w+\s", ln)}) or None

    names = _cached_answer(ncu, f"metrics {chip}", ask)
    return set(names) if names else None


def drop_unknown_metrics(metrics: list[str], known: set[str] | None) -> tuple[list[str], list[str]]:
    """(kept, dropped): a metric whose base name ncu does not know would fail the whole run."""
    if known is None:
        return list(metrics), []
    # sass__* metrics (instruction-level patching) are valid but absent from --query-metrics.
    kept = [m for m in metrics if m.split(".", 1)[0] in known or m.startswith("sass__")]
    return kept, [m for m in metrics if m not in kept]


def build_command(ncu: str, req: ProfileRequest, status_path: str | None = None,
                  metrics_override: list[str] | None = None) -> list[str]:
    if req.clock_control not in CLOCK_CONTROLS:
        raise UserError(f"clock control {req.clock_control!r}: choose one of {', '.join(CLOCK_CONTROLS)}")
    if req.cache_control not in CACHE_CONTROLS:
        raise UserError(f"cache control {req.cache_control!r}: choose one of {', '.join(CACHE_CONTROLS)}")
    metrics = requested_metrics(req) if metrics_override is None else list(metrics_override)
    cmd = [ncu,
           # Only launches inside the worker's push/pop ranges named ks:... are profiled.
           "--nvtx", "--nvtx-include", f"regex:{worker.NVTX_PREFIX}.*/",
           "--clock-control", req.clock_control,
           "--cache-control", req.cache_control,
           *section_args(req.section_set),
           *source_args(req)]
    if metrics:
        cmd += ["--metrics", ",".join(metrics)]
    if req.launch_count:
        cmd += ["--launch-count", str(req.launch_count)]
    cmd += ["--export", report_base(req.report_path), "--force-overwrite"]
    cmd += worker_command(req, status_path)
    return cmd


_PASSES = re.compile(r'==PROF== Profiling "([^"]+)".*?(\d+)\s+pass(?:es)?')


def parse_passes(output: str) -> list[tuple[str, int]]:
    """Replay passes per profiled kernel from ncu's progress lines."""
    return [(m.group(1), int(m.group(2))) for m in _PASSES.finditer(output)]


def failure_message(returncode: int, output: str, status: dict[str, Any], report_exists: bool) -> str | None:
    """One line describing why a profile failed, or None when it did not."""
    if "ERR_NVGPUCTRPERM" in output:
        return PERMISSION_FIX
    if status.get("kind") == "config_rejected":
        return f"the kernel rejects this config: {status.get('error')}"
    if status.get("kind") == "user":
        return str(status.get("error"))
    if status.get("kind") == "crash":
        return f"the profiled process crashed during {status.get('stage')}: {status.get('error')}"
    m = re.search(r"==ERROR== (.+)", output)
    if returncode != 0 and m:
        return f"ncu failed: {m.group(1).strip()}"
    if returncode != 0:
        if not status:
            tail = [ln for ln in output.strip().splitlines() if ln.strip()]
            return f"the profiled process ended with code {returncode} before reporting: {tail[-1] if tail else 'no output'}"
        return f"ncu ended with code {returncode}"
    if "No kernels were profiled" in output or not report_exists:
        return ("nothing was captured: no kernel launched inside the ks:target / ks:reference NVTX ranges "
                "(does the target launch on the GPU? is NVTX working?)")
    return None


def write_sidecar(req: ProfileRequest, run_info: dict[str, Any]) -> str:
    path = req.report_path + SIDECAR_SUFFIX
    record = {"request": asdict(req), **run_info}
    with open(path, "w") as f:
        json.dump(record, f, indent=1, default=str)
    return path


def ncu_version(ncu: str) -> str | None:
    def ask():
        try:
            r = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        lines = [ln.strip() for ln in r.stdout.splitlines() if "Version" in ln]
        return lines[-1] if lines else None

    return _cached_answer(ncu, "version", ask)


def run_profile(req: ProfileRequest, *, ncu: str | None = None, timeout_s: float | None = None,
                echo=None) -> ProfileRun:
    """Run ncu on the worker. Raises UserError with one line on any failure; a report that
    ncu already wrote is kept and named in the message."""
    ncu = ncu or find_ncu()
    req.report_path = normalise_report_path(req.report_path)
    os.makedirs(os.path.dirname(os.path.abspath(req.report_path)), exist_ok=True)
    fd, status_path = tempfile.mkstemp(prefix="kernelscope-worker-", suffix=".json")
    os.close(fd)
    os.unlink(status_path)   # the worker creates it; absence means it never got that far
    kept, dropped = drop_unknown_metrics(requested_metrics(req), known_metric_bases(ncu))
    cmd = build_command(ncu, req, status_path, metrics_override=kept)
    env = dict(os.environ)
    env.setdefault("CUTE_DSL_ARCH", req.arch)
    if req.line_info:
        env["CUTE_DSL_LINEINFO"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    start, started_at = time.monotonic(), time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise UserError(f"ncu did not finish within {timeout_s:.0f} s") from None
    wall = time.monotonic() - start
    output = (proc.stdout or "") + (proc.stderr or "")
    if echo is not None:
        echo(output)
    status = read_json_or_empty(status_path)
    if os.path.isfile(status_path):
        os.unlink(status_path)
    report_exists = os.path.isfile(req.report_path)
    passes = parse_passes(output)
    sidecar = write_sidecar(req, {
        "command_line": subprocess.list2cmdline(cmd), "ncu_version": ncu_version(ncu),
        "wall_s": wall, "passes": passes, "returncode": proc.returncode, "worker_status": status,
        # ncu's start-up before the profiled interpreter ran, then the worker's own stages.
        "ncu_started_at": started_at,
        "worker_started_after_s": (round(status["started_at"] - started_at, 3)
                                   if isinstance(status.get("started_at"), (int, float)) else None),
        "metrics_dropped_unknown_to_ncu": dropped,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    problem = failure_message(proc.returncode, output, status, report_exists)
    if problem:
        kept = f" (report kept: {req.report_path})" if report_exists else ""
        # A config the kernel refuses is the user's input (2), as under `run`; the rest is the environment.
        raise UserError(problem + kept, exit_code=2 if status.get("kind") == "config_rejected" else 3)
    return ProfileRun(report_path=req.report_path, sidecar_path=sidecar, command=cmd, wall_s=wall,
                      passes=passes, returncode=proc.returncode, output=output, worker_status=status)
