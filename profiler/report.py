"""Read Nsight Compute reports (.ncu-rep) into KernelProfile records.

The reader uses NVIDIA's `ncu_report` module: the PyPI wheel `ncu-report` when it is
installed, otherwise the copy inside an Nsight Compute install (found from `NCU_HOME`
or from `ncu` on PATH, under `extras/python`).
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import lzma
import math
import pickle
import os
import re
import shlex
import shutil
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

from kernelscope.errors import UserError
from kernelscope.profiler.merge import group_by_nvtx, merge_profiles  # noqa: F401  (re-exported)
from kernelscope.profiler.ncu_rules import ncu_rule_results
from kernelscope.profiler.record import DeviceInfo, KernelProfile, Metric, Session
from kernelscope.toolchain.sass_idioms import (BF16_UNPACK, FLOAT_EXPONENT, IMAD_MOVE, METRIC_NAMES, MOVE_PREFIX, OPERAND_IDIOM_OPCODES,
                                                idiom_counts)
from kernelscope.toolchain.tools import which_cuda_tool

REPORT_MAGIC = b"NVR\x00"
STALL_METRIC = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
OPCODE_MIX_METRIC = "sass__inst_executed_per_opcode"
OPCODE_MODIFIER_MIX_METRIC = "sass__inst_executed_per_opcode_with_modifier_all"
# Per-instruction executed counts (SourceCounters), keyed by program counter.
EXECUTED_PER_INSTRUCTION = "inst_executed"
# Barrier stall samples per instruction (SourceCounters), and the share of them at wgmma.wait_group.
BARRIER_SAMPLES_PER_INSTRUCTION = "smsp__pcsamp_warps_issue_stalled_barrier"
BARRIER_AT_WGMMA_WAIT = "kernelscope__barrier_samples_at_wgmma_wait_pct"
WGMMA_WAIT = re.compile(r"^(?:@!?U?P[T0-9]+\s+)?WARPGROUP\.DEPBAR\b")
# Warp states estimated from PC sampling (SourceCounters) where the report has no WarpStateStats
# (ncu's detailed set): a sample sees a warp in one state, and a warp is "selected" for exactly one
# cycle per issued instruction, so samples in a state over samples selected estimate that state's
# cycles per issued instruction, the unit of the smsp__average_warps_issue_stalled_* ratios.
SAMPLED_STALL = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+)$")
SAMPLED_STALL_METRIC = "kernelscope__sampled_stall_{}_per_issue_active.ratio"
# The sampler's reason names that differ from the warp-state ratios'.
SAMPLED_STALL_NAMES = {"no_instructions": "no_instruction"}
# The least share of the executions an unpack's opcodes must have for the SASS to be read.
IDIOM_SCAN_SHARE = 0.02
# The share of a kernel's executions whose instructions are read for idioms (hottest first).
IDIOM_SCAN_COVERAGE = 0.995

# ncu's defaults when a flag is absent from the recorded command line.
NCU_DEFAULT_CLOCK_CONTROL = "base"
NCU_DEFAULT_CACHE_CONTROL = "all"


def import_ncu_report():
    """Import `ncu_report` from the wheel or from an Nsight Compute install."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    for root in _ncu_install_roots():
        candidate = root / "extras" / "python"
        if (candidate / "ncu_report.py").exists() or (candidate / "ncu_report").exists():
            sys.path.insert(0, str(candidate))
            try:
                return importlib.import_module("ncu_report")
            except ImportError:
                sys.path.remove(str(candidate))
    raise UserError(
        "cannot read .ncu-rep files: the Python module ncu_report is missing "
        "(pip install ncu-report, or set NCU_HOME to an Nsight Compute install)"
    )


def _ncu_install_roots() -> Iterable[Path]:
    if os.environ.get("NCU_HOME"):
        yield Path(os.environ["NCU_HOME"])
    exe = which_cuda_tool("ncu")
    if exe:
        real = Path(exe).resolve()
        # <root>/ncu, or <root>/target/<platform>/ncu
        yield real.parent
        yield real.parent.parent.parent
        # CUDA's bin/ncu is often a wrapper script naming the real install.
        try:
            text = real.read_text(errors="ignore")[:4096]
        except OSError:
            text = ""
        for m in re.finditer(r"(/[\w./-]*nsight-compute[\w.-]*)", text):
            yield Path(m.group(1))
        yield from sorted(real.parent.parent.glob("nsight-compute*"), reverse=True)
    yield from sorted(Path("/opt/nvidia/nsight-compute").glob("*"), reverse=True)


# ncu_report keeps what it read of a report for the life of the process: ~17 MB for a 2 MB
# full-set report (H100, ncu 2025.3), freed neither with the context nor with its objects. A file
# read again (tests, a notebook re-running a cell, a batch that revisits a baseline) is therefore
# parsed once per process, and each call gets its own copy of the profiles. The copy kept is a
# pickle: for a 242-launch report, 0.07 s to store and 0.18 s to read back, where a deep copy took
# 0.42 s on every load, the first included (against a 0.6 s parse).
_PARSED_CACHE_SIZE = 32
_parsed: "collections.OrderedDict[tuple, bytes]" = collections.OrderedDict()


def load_report(
    path: str | os.PathLike,
    *,
    group_nvtx_prefix: str | None = None,
    lines: "bool | Callable[[KernelProfile], bool]" = False,
    timeline: bool = False,
    static_sass: "bool | Callable[[KernelProfile], bool]" = False,
) -> list[KernelProfile]:
    """One KernelProfile per profiled kernel launch, in report order.

    With `group_nvtx_prefix`, launches inside an NVTX push/pop range whose name starts
    with the prefix are merged into one profile per range (kind "nvtx-range"); launches
    outside such ranges stay single. With `lines`, each profile also gets its per-source-line
    records (`source_lines`); a predicate instead of True picks the launches that get them
    (reading a kernel's SASS costs a disassembly). With `timeline`, each also gets its PM samples
    over time (`timeline`, profiler.timeline.Timeline; None where the report has none). With
    `static_sass` (True or a predicate, as `lines`), each also gets the static__ facts of its
    function's SASS (profiler.report_sass: local memory, fences, shared atomics, code size), which
    any report holds whatever sections it collected.

    A file read before in this process, unchanged (same size and modification time) and with
    the same options, is not parsed again: the call returns a fresh copy of the profiles.
    """
    path = Path(path)
    key = _parse_key(path, group_nvtx_prefix, lines, timeline, static_sass)
    if key is not None and key in _parsed:
        _parsed.move_to_end(key)
        return pickle.loads(_parsed[key])
    profiles = _load_report_uncached(path, group_nvtx_prefix=group_nvtx_prefix, lines=lines, timeline=timeline,
                                     static_sass=static_sass)
    if key is not None:
        _parsed[key] = pickle.dumps(profiles, protocol=pickle.HIGHEST_PROTOCOL)
        while len(_parsed) > _PARSED_CACHE_SIZE:
            _parsed.popitem(last=False)
    return profiles


def _parse_key(path: Path, group_nvtx_prefix, lines, timeline: bool, static_sass=False) -> tuple | None:
    """The cache key of a load: None (not cached) for a predicate `lines` or `static_sass`, or a
    path that cannot be stat'ed (the uncached load then reports the error)."""
    if not isinstance(lines, bool) or not isinstance(static_sass, bool):
        return None
    try:
        st = path.stat()
        resolved = path.resolve()
    except OSError:
        return None
    return (str(resolved), st.st_size, st.st_mtime_ns, group_nvtx_prefix, lines, timeline, static_sass)


def _load_report_uncached(
    path: Path,
    *,
    group_nvtx_prefix: str | None = None,
    lines: "bool | Callable[[KernelProfile], bool]" = False,
    timeline: bool = False,
    static_sass: "bool | Callable[[KernelProfile], bool]" = False,
) -> list[KernelProfile]:
    if path.suffix == ".xz":
        # Recorded reports are kept xz-compressed; ncu_report reads only plain files.
        with decompressed(path, ".ncu-rep") as plain:
            profiles = _load_report_uncached(plain, group_nvtx_prefix=group_nvtx_prefix, lines=lines,
                                             timeline=timeline, static_sass=static_sass)
        for p in profiles:
            p.source = str(path)
        return profiles
    raw = _read_checked(path)
    ncu_report = import_ncu_report()
    try:
        context = ncu_report.load_report(str(path))
    except Exception as e:  # the module raises plain exceptions with its own text
        raise UserError(f"{path}: not a readable Nsight Compute report ({e})") from None
    session = _session_facts(raw)
    profiles: list[KernelProfile] = []
    sass_seen: dict[tuple[str, int], str] = {}      # (function, pc) -> SASS, for this report
    facts_seen: dict = {}                           # function -> its static__ facts, for this report
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            action = report_range.action_by_idx(action_index)
            profile = _profile_from_action(action, str(path), len(profiles), session, sass_seen)
            if lines is True or (callable(lines) and lines(profile)):
                from kernelscope.profiler.report_lines import lines_from_action

                profile.source_lines = lines_from_action(action, profile.name)
            if timeline:
                from kernelscope.profiler.timeline import read_timeline

                profile.timeline = read_timeline(action)
            if static_sass is True or (callable(static_sass) and static_sass(profile)):
                from kernelscope.profiler.report_sass import read_sass_facts

                for name, metric in read_sass_facts(action, facts_seen).items():
                    profile.metrics.setdefault(name, metric)
            profiles.append(profile)
    if not profiles:
        raise UserError(f"{path}: the report holds no profiled kernels")
    if group_nvtx_prefix is not None:
        profiles = group_by_nvtx(profiles, group_nvtx_prefix)
    return profiles


@contextlib.contextmanager
def decompressed(path: Path, suffix: str):
    """A temporary plain copy of an .xz file (UserError when it is missing or not xz)."""
    if not path.exists():
        raise UserError(f"{path}: no such file")
    with tempfile.TemporaryDirectory(prefix="kernelscope-") as tmp:
        plain = Path(tmp) / (path.name[: -len(".xz")] if path.name.endswith(".xz") else path.name + suffix)
        try:
            with lzma.open(path) as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst)
        except (lzma.LZMAError, EOFError) as e:
            raise UserError(f"{path}: not a valid xz file ({e})") from None
        yield plain


def _read_checked(path: Path) -> bytes:
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a report")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    if not raw.startswith(REPORT_MAGIC):
        raise UserError(f"{path}: not an Nsight Compute report (.ncu-rep)")
    if _looks_truncated(raw):
        raise UserError(f"{path}: the report is truncated (incomplete copy or interrupted ncu run)")
    return raw


def _looks_truncated(raw: bytes) -> bool:
    """True when the report's block sizes run past the end of the file.

    A report is a magic, a small file header, then blocks of
    [u32 header size][header message][payload], where field 5 of the header message
    is the payload size. The check only says "truncated" when that walk provably runs
    past the end; any layout it does not understand is given the benefit of the doubt.
    """
    try:
        pos = len(REPORT_MAGIC)
        (file_header_size,) = struct.unpack_from("<I", raw, pos)
        pos += 4 + file_header_size
        while pos < len(raw):
            if pos + 4 > len(raw):
                return True
            (header_size,) = struct.unpack_from("<I", raw, pos)
            pos += 4
            if pos + header_size > len(raw):
                return True
            payload = _varint_field(raw[pos : pos + header_size], 5)
            pos += header_size + payload
        return pos > len(raw)
    except (struct.error, ValueError, IndexError):
        return False


def _varint_field(message: bytes, wanted: int) -> int:
    """Value of varint field `wanted` in a protobuf message (0 when absent)."""
    i = 0
    while i < len(message):
        key, i = _varint(message, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(message, i)
            if field == wanted:
                return value
        elif wire == 2:
            length, i = _varint(message, i)
            i += length
        elif wire == 5:
            i += 4
        elif wire == 1:
            i += 8
        else:
            raise ValueError("unknown wire type")
    return 0


def _varint(data: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


_VERSION = re.compile(rb"Nsight Compute[^\x00-\x1f]{0,40}\x12([\x01-\x7f])")
_NCU_COMMAND = re.compile(rb"(?:^|[/\\\x00-\x20])ncu(?:\.exe)?\x20-")


def _session_facts(raw: bytes) -> Session:
    """The ncu version and command line recorded in the report, and what they imply."""
    session = Session(tool="ncu")
    m = _VERSION.search(raw)
    if m:
        length = m.group(1)[0]
        start = m.end()
        session.tool_version = raw[start : start + length].decode("ascii", "replace").strip()
    command = _recorded_command(raw)
    if command:
        session.command_line = command
        args = _split(command)
        session.clock_control = _flag_value(args, "--clock-control") or NCU_DEFAULT_CLOCK_CONTROL
        session.cache_control = _flag_value(args, "--cache-control") or NCU_DEFAULT_CACHE_CONTROL
    return session


def _recorded_command(raw: bytes) -> str | None:
    """The ncu command line, stored as a length-prefixed string in the session block."""
    for m in _NCU_COMMAND.finditer(raw):
        hit = m.start()
        # The string starts after its varint length. Try starts from the farthest back:
        # the first one whose whole text is printable is the real start (a start inside
        # the string would cut it short, one before it would include the length bytes).
        for start in range(max(hit - 1024, 1), hit + 1):
            for width in (1, 2):
                if start - width < 0:
                    continue
                try:
                    length, end = _varint(raw, start - width)
                except IndexError:
                    continue
                if end != start or start + length <= m.end() or start + length > len(raw):
                    continue
                text = raw[start : start + length]
                if all(0x20 <= b < 0x7F for b in text):
                    return text.decode("ascii").strip()
    return None


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _flag_value(args: list[str], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _profile_from_action(action: Any, source: str, index: int, session: Session,
                         sass_seen: dict[tuple[str, int], str]) -> KernelProfile:
    metrics: dict[str, Metric] = {}
    for name in action.metric_names():
        metric = action.metric_by_name(name)
        if metric is None:
            continue
        value = metric.value()
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue  # NaN/inf carry no measurement: treat as not collected
        metrics[name] = Metric(value=value, unit=metric.unit() or "")
    mix = _instanced_by_name(action, OPCODE_MIX_METRIC)
    metrics.update(_sass_idiom_metrics(action, mix, sass_seen))
    metrics.update(_barrier_wait_metrics(action, sass_seen))
    metrics.update(_sampled_stall_metrics(metrics))

    def number(name: str) -> float | None:
        m = metrics.get(name)
        return m.value if m is not None and isinstance(m.value, (int, float)) else None

    def dims(prefix: str) -> tuple[int, int, int] | None:
        values = [number(f"{prefix}_{axis}") for axis in "xyz"]
        if any(v is None for v in values):
            return None
        return tuple(int(v) for v in values)  # type: ignore[return-value]

    cluster = dims("launch__cluster_dim")
    if cluster == (0, 0, 0):
        cluster = None  # launched without a cluster
    major = number("device__attribute_compute_capability_major")
    minor = number("device__attribute_compute_capability_minor")
    clock_khz = number("device__attribute_clock_rate")
    memory_khz = number("device__attribute_memory_clock_rate")
    device = DeviceInfo(
        name=_string(metrics.get("device__attribute_display_name")),
        sm_count=_int(number("device__attribute_multiprocessor_count")),
        compute_capability=f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None,
        max_sm_clock_hz=clock_khz * 1e3 if clock_khz is not None else None,
        sm_clock_hz=number("gpc__cycles_elapsed.avg.per_second") or number("sm__cycles_elapsed.avg.per_second"),
        memory_clock_hz=memory_khz * 1e3 if memory_khz is not None else None,
    )
    this_session = Session(**vars(session))
    passes = number("profiler__replayer_passes")
    this_session.replay_passes = int(passes) if passes is not None else None

    return KernelProfile(
        source=source,
        index=index,
        kind="kernel",
        name=action.name(action.NameBase_FUNCTION),
        demangled_name=action.name(action.NameBase_DEMANGLED),
        mangled_name=action.name(action.NameBase_MANGLED) or None,
        nvtx_ranges=_nvtx_ranges(action),
        grid=dims("launch__grid_dim"),
        block=dims("launch__block_dim"),
        cluster=cluster,
        device=device,
        session=this_session,
        metrics=metrics,
        instruction_mix=mix,
        stalls={m.group(1): float(v.value) for name, v in metrics.items() if (m := STALL_METRIC.match(name))},
        ncu_rules=ncu_rule_results(action),
    )


def _sass_idiom_metrics(action: Any, mix: dict[str, float], sass_seen: dict[tuple[str, int], str]) -> dict[str, Metric]:
    """Executed instructions per SASS idiom (toolchain.sass_idioms: bf16 unpacking, exponent
    shifts and register copies that use integer opcodes). IMAD.MOV is a copy whatever its operands, so the opcode mix
    with modifiers (InstructionStats) counts it exactly; an unpack needs its operands, read from
    the SASS of each instruction where the report has per-instruction executed counts
    (SourceCounters). That read costs ~0.3 ms an instruction, so it is done only where the
    opcodes an unpack can have are at least IDIOM_SCAN_SHARE of the executions (below, they
    cannot move the index-math share by much), over the hottest instructions making up
    IDIOM_SCAN_COVERAGE of them. A count not read stays absent."""
    with_modifiers = _instanced_by_name(action, OPCODE_MODIFIER_MIX_METRIC)
    source = with_modifiers or mix
    total = sum(source.values())
    if not total:
        return {}
    out: dict[str, Metric] = {}
    if with_modifiers:
        moves = sum(n for op, n in with_modifiers.items() if op.startswith(MOVE_PREFIX))
        out[METRIC_NAMES[IMAD_MOVE]] = Metric(value=moves, unit="inst")
        candidates = sum(with_modifiers.get(op, 0.0) for op in OPERAND_IDIOM_OPCODES)
        if candidates == 0:
            out[METRIC_NAMES[BF16_UNPACK]] = Metric(value=0.0, unit="inst")
            out[METRIC_NAMES[FLOAT_EXPONENT]] = Metric(value=0.0, unit="inst")
            return out
    else:
        candidates = mix.get("IMAD", 0.0) + mix.get("SHF", 0.0)
    if candidates < IDIOM_SCAN_SHARE * total:
        return out
    metric = action.metric_by_name(EXECUTED_PER_INSTRUCTION)
    if metric is None or metric.num_instances() == 0 or not metric.has_correlation_ids():
        return out
    ids = metric.correlation_ids()
    function = action.name(action.NameBase_MANGLED) or action.name(action.NameBase_FUNCTION)

    def sass_at(pc: int) -> str:
        # Launches of one function in one report share their code: read each instruction once.
        key = (function, pc)
        if key not in sass_seen:
            sass_seen[key] = action.sass_by_pc(pc)
        return sass_seen[key]

    per_pc = sorted(((float(metric.as_double(i)), ids.as_uint64(i)) for i in range(metric.num_instances())), reverse=True)
    budget, hot = IDIOM_SCAN_COVERAGE * sum(n for n, _ in per_pc), []
    for n, pc in per_pc:
        if budget <= 0:
            break
        hot.append((sass_at(pc), n))
        budget -= n
    counts = idiom_counts(hot)
    kinds = (BF16_UNPACK, FLOAT_EXPONENT) if with_modifiers else (BF16_UNPACK, FLOAT_EXPONENT, IMAD_MOVE)
    out.update({METRIC_NAMES[k]: Metric(value=counts[k], unit="inst") for k in kinds})
    return out


def _barrier_wait_metrics(action: Any, sass_seen: dict[tuple[str, int], str]) -> dict[str, Metric]:
    """Where the barrier stall samples sit (SourceCounters): the share at WARPGROUP.DEPBAR, where a
    warp waits in wgmma.wait_group for its own WGMMAs and ncu samples it as a barrier stall; the
    rest sit at or just after a BAR, waiting for other warps. Absent without per-instruction samples."""
    metric = action.metric_by_name(BARRIER_SAMPLES_PER_INSTRUCTION)
    if metric is None or metric.num_instances() == 0 or not metric.has_correlation_ids():
        return {}
    ids = metric.correlation_ids()
    per_pc = [(float(metric.as_double(i)), ids.as_uint64(i)) for i in range(metric.num_instances())]
    total = sum(n for n, _ in per_pc)
    if total <= 0:
        return {}
    function = action.name(action.NameBase_MANGLED) or action.name(action.NameBase_FUNCTION)
    at_wait = 0.0
    for n, pc in per_pc:
        if n <= 0:
            continue
        key = (function, pc)
        if key not in sass_seen:
            sass_seen[key] = action.sass_by_pc(pc)
        if WGMMA_WAIT.match(sass_seen[key].strip()):
            at_wait += n
    return {BARRIER_AT_WGMMA_WAIT: Metric(value=100.0 * at_wait / total, unit="%")}


def _sampled_stall_metrics(metrics: dict[str, Metric]) -> dict[str, Metric]:
    """Cycles per issued instruction of each warp state, estimated from the PC samples, for a report
    without the warp-state ratios (see SAMPLED_STALL); nothing where the ratios or the samples of the
    issuing state are missing."""
    if any(STALL_METRIC.match(name) for name in metrics):
        return {}
    samples = {}
    for name, metric in metrics.items():
        m = SAMPLED_STALL.match(name)
        if m and not m.group(1).endswith("_not_issued") and isinstance(metric.value, (int, float)):
            samples[SAMPLED_STALL_NAMES.get(m.group(1), m.group(1))] = float(metric.value)
    selected = samples.get("selected", 0.0)
    if selected <= 0:
        return {}
    return {SAMPLED_STALL_METRIC.format(reason): Metric(value=n / selected, unit="")
            for reason, n in samples.items()}


def _string(metric: Metric | None) -> str | None:
    return None if metric is None else str(metric.value)


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _instanced_by_name(action: Any, name: str) -> dict[str, float]:
    """An instanced metric whose correlation ids are names (e.g. opcodes) as a dict."""
    metric = action.metric_by_name(name)
    if metric is None or metric.num_instances() == 0 or not metric.has_correlation_ids():
        return {}
    ids = metric.correlation_ids()
    out: dict[str, float] = {}
    for i in range(metric.num_instances()):
        out[ids.as_string(i)] = float(metric.as_double(i))
    return out


def _nvtx_ranges(action: Any) -> list[str]:
    """Names of the NVTX push/pop ranges (outermost first) around this launch."""
    state = action.nvtx_state()
    if state is None:
        return []
    names: list[str] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        names.extend(str(n) for n in domain.push_pop_ranges())
    return names


