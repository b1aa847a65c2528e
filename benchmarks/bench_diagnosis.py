"""Does a diagnosis name the known cause of a slow kernel first? kernelscope vs Nsight Compute's own rules.

For each labelled slow/fast pair (DIR/labels.toml, default benchmarks/diagnosis/), it runs
`kernelscope diff SLOW FAST --format json` (the slower kernel as target, the faster as reference)
and reads ncu's rule results of the slower kernel from the same report, ranked by ncu's
estimated speedup. Each finding or rule result is mapped to a cause id of rules/causes.toml; a
pair is a hit@k when one of the first k findings names its labelled cause. A pair labelled with
cause "none" takes the same time within noise (the same kernel measured twice, or a knob that changes
nothing measurable): there the diagnosis should stay quiet (no main reason, no cause in the code
claiming MAIN_REASON_MIN of the gap), and anything else counts as a false alarm.

    python3 benchmarks/bench_diagnosis.py                    # the committed corpus
    python3 benchmarks/bench_diagnosis.py --dir HELD_OUT     # any directory with a labels.toml
    python3 benchmarks/bench_diagnosis.py --json result.json

Needs no GPU: it reads recorded reports (ncu_report must be importable).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import lzma
import shutil
import sys
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

# The least share of the gap a main reason explains; the cause that is clock frequency, not code.
from kernelscope.rules.diagnosis import CLOCK_CAUSE, MAIN_REASON_MIN

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO / "benchmarks" / "diagnosis"
CAUSES_FILE = REPO / "rules" / "causes.toml"
TOP_K = 3
# A pair's cause "none": two launches that take the same time within run-to-run noise (the same
# kernel measured twice, or a knob that changes nothing measurable).
SAME_TIME = "none"

# kernelscope rules as they are before findings carry a `cause` field: the cause a rule's
# message claims. Used only for a finding without `cause`. Rules that describe a symptom shared
# by many causes (SM or memory throughput below the reference, more instructions, stall kinds
# other than long scoreboard, TMA share) name no cause.
KERNELSCOPE_RULE_CAUSES: dict[str, str | None] = {
    "address-math-vs-reference": "integer-index-math",
    "local-memory-in-binary": "spills-local",
    "local-memory-spills": "spills-local",
    "shared-bank-conflicts": "bank-conflicts",
    "register-pressure": "occupancy-registers",
    "shared-memory-near-limit": "occupancy-shared-memory",
    "stall-long-scoreboard": "exposed-latency",
    "tail-effect": "grid-too-small",
    "tensor-pipe-below-reference": "tensor-underused",
    "no-hgmma-on-sm90": "tensor-underused",
    # occupancy-limiter names its limiter in the message: see kernelscope_cause().
}

# Nsight Compute rule results: (rule identifier, words that must appear in the title or message,
# cause). The first entry that matches a result decides; a result matching none names no cause.
# A rule maps to a cause only when its text is about that cause; the generic ones (issue slots,
# pipe utilization other than XU, L2 compression, roofline, achieved occupancy, workload
# imbalance of L1 or L2 slices, bottleneck summaries other than "Small Grid") name none.
NCU_RULE_CAUSES: list[tuple[str, tuple[str, ...], str]] = [
    ("UncoalescedGlobalAccess", (), "uncoalesced-access"),
    ("UncoalescedSharedAccess", (), "bank-conflicts"),
    ("SharedMemoryConflicts", (), "bank-conflicts"),
    ("ThreadDivergence", (), "divergence"),
    ("FPInstructions", ("non-fused",), "unfused-fp32"),
    ("TheoreticalOccupancy", ("registers",), "occupancy-registers"),
    ("TheoreticalOccupancy", ("shared memory",), "occupancy-shared-memory"),
    ("LaunchConfiguration", ("small grid",), "grid-too-small"),
    ("LaunchConfiguration", ("tail effect",), "grid-too-small"),
    ("SOLBottleneck", ("small grid",), "grid-too-small"),
    ("MemoryCacheAccessPattern", ("local",), "spills-local"),
    ("MemoryCacheAccessPattern", ("shared",), "bank-conflicts"),
    ("MemoryCacheAccessPattern", ("global",), "uncoalesced-access"),
    ("CPIStall", ("long scoreboard",), "exposed-latency"),
    ("HighPipeUtilization", ("xu is the highest",), "special-math"),
    # Unequal active cycles over the SMs or their sub-partitions (not the L1 or L2 slices, which
    # also follow from hot addresses).
    ("WorkloadImbalance", ("sms workload imbalance",), "load-imbalance"),
    ("WorkloadImbalance", ("smsps workload imbalance",), "load-imbalance"),
]


class InputError(Exception):
    """A bad labels file, report or selector: one line on stderr, exit 2."""


@dataclass
class Pair:
    id: str
    report: Path
    slow: str
    fast: str
    cause: str | None
    scored: bool
    why: str
    fast_report: Path | None = None     # where the fast kernel is, when not in `report`
    same: bool = False                  # the same time within noise (cause "none"): a cause named is a false alarm

    @property
    def fast_source(self) -> Path:
        return self.fast_report or self.report


@dataclass
class Judgement:
    """One diagnosis of one pair: its ranked findings (rule id, cause or None)."""
    ranked: list[tuple[str, str | None]] = field(default_factory=list)

    def causes(self, k: int = TOP_K) -> list[str | None]:
        return [cause for _, cause in self.ranked[:k]]

    def hit(self, cause: str | None, k: int) -> bool:
        return cause is not None and cause in self.causes(k)


def load_causes(path: Path = CAUSES_FILE) -> set[str]:
    with open(path, "rb") as f:
        return set(tomllib.load(f))


def _read_labels(labels: Path) -> dict:
    try:
        with open(labels, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise InputError(f"{labels}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{labels}: {e}") from None


def reprofiled_entries(labels: Path, doc: dict) -> list[dict]:
    """The pairs of another labels file profiled again into other reports ([[reprofiled]] tables:
    `from`, the labels file; `pairs`, the ids taken, in order; `report`, the report that holds
    them here; `reports`, for pairs whose original report is a key of it, their report here instead).
    Each keeps its id, kernels, cause and scoring; only where it was measured changes."""
    entries = []
    for group in doc.get("reprofiled", []):
        try:
            source = labels.parent / group["from"]
            wanted, default = group["pairs"], group["report"]
        except KeyError as missing:
            raise InputError(f"{labels}: a [[reprofiled]] table has no {missing}") from None
        by_id = {e.get("id"): e for e in _read_labels(source).get("pair", [])}
        unknown = [i for i in wanted if i not in by_id]
        if unknown:
            raise InputError(f"{labels}: [[reprofiled]]: no pair {unknown[0]!r} in {group['from']}")
        for i in wanted:
            entry = {k: v for k, v in by_id[i].items() if k not in ("report", "fast_report", "why")}
            entry["report"] = group.get("reports", {}).get(by_id[i].get("report"), default)
            entry["why"] = f"{group['from']}, profiled again"
            entries.append(entry)
    return entries


def load_pairs(directory: Path, causes: set[str]) -> list[Pair]:
    labels = directory / "labels.toml"
    doc = _read_labels(labels)
    entries = doc.get("pair", []) + reprofiled_entries(labels, doc)
    pairs = []
    for e in entries:
        cause = e.get("cause")
        same = cause == SAME_TIME and e.get("scored", True)  # scored = false: counted nowhere
        scored = e.get("scored", True) and not same
        if scored and cause not in causes:
            raise InputError(f"{labels}: pair {e.get('id')!r}: cause {cause!r} is not an id of {CAUSES_FILE.name}")
        try:
            pairs.append(Pair(e["id"], directory / e["report"], e["slow"], e["fast"], cause if scored else None, scored,
                              e.get("why", ""), directory / e["fast_report"] if "fast_report" in e else None, same))
        except KeyError as missing:
            raise InputError(f"{labels}: a pair has no {missing}") from None
    return pairs


def kernelscope_cause(finding: dict) -> str | None:
    """The cause a kernelscope finding names: its `cause` field, else the rule table."""
    if "cause" in finding:
        return finding["cause"] or None
    rule = finding.get("rule", "")
    if rule == "occupancy-limiter":
        text = finding.get("message", "").lower()
        if "limited by register" in text:
            return "occupancy-registers"
        if "limited by shared" in text:
            return "occupancy-shared-memory"
        if "limited by block slots" in text:
            return "occupancy-block-size"
        return None
    return KERNELSCOPE_RULE_CAUSES.get(rule)


def ncu_cause(result: dict) -> str | None:
    message = result.get("rule_message") or {}
    text = f"{message.get('title', '')} {message.get('message', '')}".lower()
    for rule, words, cause in NCU_RULE_CAUSES:
        if result.get("rule_identifier") == rule and all(w in text for w in words):
            return cause
    return None


def ncu_ranked(results: list[dict]) -> list[dict]:
    """ncu's rule results that raised something (warning or worse, with a message), ranked the way
    its report shows them: by estimated speedup, descending; results without an estimate after,
    in report order."""
    fired = [r for r in results
             if (r.get("rule_message") or {}).get("type", 0) >= 2 and (r.get("rule_message") or {}).get("message")]

    def speedup(r):
        return (r.get("speedup_estimation") or {}).get("speedup")
    with_estimate = sorted((r for r in fired if speedup(r) is not None), key=speedup, reverse=True)
    return with_estimate + [r for r in fired if speedup(r) is None]


# ncu_report's message types, by the kind kernelscope records (profiler/ncu_rules.py).
_MESSAGE_TYPES = {"none": 0, "ok": 1, "optimization": 2, "warning": 3, "error": 4}


def select_one(profiles: list, selector: str, path: Path):
    """The one kernel `kernelscope diff` selects with FILE:selector (@INDEX: by position in the
    file, which is report order)."""
    from kernelscope.errors import UserError
    from kernelscope.profiler.selection import select
    if selector.startswith("@") and selector[1:].isdigit():
        index = int(selector[1:])
        if index >= len(profiles):
            raise InputError(f"{path}: no kernel {selector} (it holds {len(profiles)})")
        return profiles[index]
    try:
        chosen = select(profiles, selector, what=str(path))
    except UserError as e:
        raise InputError(str(e)) from None
    if len(chosen) != 1:
        raise InputError(f"{path}:{selector} matches {len(chosen)} kernels, not one")
    return chosen[0]


def is_profile_document(path: Path) -> bool:
    """A kernelscope profile document (`show --format json`, xz or not), not an ncu report."""
    return path.name.endswith((".json", ".json.xz"))


def ncu_result_dict(r) -> dict:
    """A recorded NcuRuleResult in the shape ncu_report's rule_results_as_dicts() gives."""
    return {"rule_identifier": r.rule,
            "rule_message": {"title": r.title, "message": r.message, "type": _MESSAGE_TYPES.get(r.kind, 0)},
            "speedup_estimation": {"speedup": r.speedup}}


class Reports:
    """Plain copies of the (xz) reports, made once, and their ncu_report contexts."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-diagnosis-")
        self._plain: dict[Path, Path] = {}
        self._contexts: dict[Path, object] = {}

    def plain(self, path: Path) -> Path:
        if path not in self._plain:
            if not path.exists():
                raise InputError(f"{path}: no such report")
            if is_profile_document(path):
                target = path                 # kernelscope reads its own documents, xz or not
            elif path.suffix == ".xz":
                target = Path(self._tmp.name) / f"{len(self._plain)}-{path.name[:-3]}"
                with lzma.open(path) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            else:
                target = path
            self._plain[path] = target
        return self._plain[path]

    def ncu_results(self, path: Path, selector: str) -> tuple[list[dict], float]:
        """ncu's rule results (as ncu_report's dicts) and the duration (ns) of the kernel that
        `kernelscope diff` selects with FILE:selector; from the report itself, or from the rule
        results a kernelscope profile document kept of it."""
        if not is_profile_document(path):
            action = self.ncu_action(path, selector)
            return action.rule_results_as_dicts(), action.metric_by_name("gpu__time_duration.sum").as_double()
        from kernelscope.profiler.sources import load_profiles
        profile = select_one(load_profiles(path), selector, path)
        return [ncu_result_dict(r) for r in profile.ncu_rules], float(profile.value("gpu__time_duration.sum"))

    def ncu_action(self, path: Path, selector: str):
        """The ncu_report action of the kernel that `kernelscope diff` selects with FILE:selector."""
        from kernelscope.profiler.report import import_ncu_report, load_report
        plain = self.plain(path)
        if plain not in self._contexts:
            context = import_ncu_report().load_report(str(plain))
            actions = [context.range_by_idx(r).action_by_idx(a)
                       for r in range(context.num_ranges()) for a in range(context.range_by_idx(r).num_actions())]
            self._contexts[plain] = (context, actions, load_report(plain))
        _, actions, profiles = self._contexts[plain]
        return actions[select_one(profiles, selector, path).index]

    def close(self):
        self._tmp.cleanup()


@contextlib.contextmanager
def parse_each_report_once():
    """Memoize the report loading of `kernelscope diff` while the benchmark runs: the command
    runs unchanged, but a report holding 28 kernels is parsed once instead of twice per pair."""
    import functools
    from unittest import mock

    from kernelscope.api import selection
    loader = getattr(selection, "load_profiles", None)
    if loader is None:  # the command loads reports some other way: run it as it is
        yield
        return
    with mock.patch.object(selection, "load_profiles", functools.lru_cache(maxsize=None)(loader)):
        yield


def run_kernelscope_diff(slow_spec: str, fast_spec: str) -> dict:
    """`kernelscope diff SLOW FAST --format json`, run in this process; its parsed JSON."""
    from kernelscope.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["diff", slow_spec, fast_spec, "--format", "json"])
        except SystemExit as e:
            if e.code not in (0, None):
                raise InputError(f"kernelscope diff {slow_spec} {fast_spec} failed: {err.getvalue().strip()}") from None
    return json.loads(out.getvalue())


def judge(pair: Pair, reports: Reports) -> dict:
    diff = run_kernelscope_diff(f"{reports.plain(pair.report)}:{pair.slow}",
                                f"{reports.plain(pair.fast_source)}:{pair.fast}")
    ks = Judgement([(f.get("rule", "?"), kernelscope_cause(f)) for f in diff.get("findings", [])])
    slow_results, slow_ns = reports.ncu_results(pair.report, pair.slow)
    _, fast_ns = reports.ncu_results(pair.fast_source, pair.fast)
    ncu_results = ncu_ranked(slow_results)
    ncu = Judgement([(r.get("rule_identifier", "?"), ncu_cause(r)) for r in ncu_results])
    row = {"id": pair.id, "cause": pair.cause, "scored": pair.scored,
           "slow_us": round(slow_ns / 1e3, 2), "fast_us": round(fast_ns / 1e3, 2), "gap": round(slow_ns / fast_ns, 3)}
    for name, j in (("kernelscope", ks), ("ncu", ncu)):
        row[name] = {"top": [{"rule": rule, "cause": cause} for rule, cause in j.ranked[:TOP_K]],
                     "hit1": j.hit(pair.cause, 1), "hit3": j.hit(pair.cause, TOP_K)}
    if pair.same:
        row["same"] = True
        row["kernelscope"]["quiet"] = not false_alarm(diff)
    return row


def false_alarm(diff: dict) -> bool:
    """For two launches that take the same time: a main reason named, or a finding that names a
    cause in the code and claims at least MAIN_REASON_MIN of the gap (a lower clock is no cause in
    the code: it is the right reading of such a gap)."""
    verdict = diff.get("verdict") or {}
    return verdict.get("main_reason") is not None or any(
        f.get("cause") not in (None, CLOCK_CAUSE) and (f.get("explains") or 0.0) >= MAIN_REASON_MIN
        for f in diff.get("findings", []))


def totals(rows: list[dict]) -> dict:
    scored = [r for r in rows if r["scored"]]
    same = [r for r in rows if r.get("same")]
    return {"pairs": len(scored),
            **{f"{tool}_{k}": sum(r[tool][k] for r in scored) for tool in ("kernelscope", "ncu") for k in ("hit1", "hit3")},
            "same_pairs": len(same), "kernelscope_quiet": sum(r["kernelscope"]["quiet"] for r in same)}


def print_table(rows: list[dict], total: dict) -> None:
    def causes(entry):
        return ", ".join(t["cause"] or f"({t['rule']})" for t in entry["top"]) or "-"

    def hits(entry):
        return f"{'1' if entry['hit1'] else '.'}{'3' if entry['hit3'] else '.'}"
    print(f"{'pair':<24} {'gap':>5} {'cause':<23} {'ks':<3} {'kernelscope top 3':<66} {'ncu':<3} ncu top 3")
    for r in rows:
        cause = "(the same time)" if r.get("same") else r["cause"] if r["scored"] else "(not scored)"
        mark = ("q" if r["kernelscope"]["quiet"] else "!") if r.get("same") else hits(r["kernelscope"])
        print(f"{r['id']:<24} {r['gap']:>5.2f} {cause:<23} {mark:<3} {causes(r['kernelscope'])[:66]:<66} "
              f"{hits(r['ncu']):<3} {causes(r['ncu'])}")
    n = total["pairs"]
    print(f"\n{n} scored pairs. kernelscope: hit@1 {total['kernelscope_hit1']}/{n}, hit@3 {total['kernelscope_hit3']}/{n}. "
          f"ncu rules: hit@1 {total['ncu_hit1']}/{n}, hit@3 {total['ncu_hit3']}/{n}.")
    if total["same_pairs"]:
        print(f"{total['same_pairs']} pairs that take the same time: kernelscope quiet on "
              f"{total['kernelscope_quiet']}/{total['same_pairs']} (q: no main reason and no cause in the code "
              f"claiming >= {MAIN_REASON_MIN:.0%} of the gap; !: a false alarm).")
    print("(gap: slow/fast duration under ncu; hits: 1 = the first finding names the cause, 3 = one of the first three;"
          " a rule in parentheses names no cause)")


def run(directory: Path, pair_ids: list[str] | None = None) -> tuple[list[dict], dict]:
    pairs = [p for p in load_pairs(directory, load_causes()) if pair_ids is None or p.id in pair_ids]
    reports = Reports()
    try:
        with parse_each_report_once():
            rows = [judge(p, reports) for p in pairs]
    finally:
        reports.close()
    return rows, totals(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="directory holding labels.toml (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="also write the rows and totals here (xz-compressed if the "
                        "name ends in .xz)")
    args = parser.parse_args(argv)
    try:
        rows, total = run(args.dir)
    except InputError as e:
        print(f"bench_diagnosis: error: {e}", file=sys.stderr)
        return 2
    print_table(rows, total)
    if args.json:
        where = args.dir.resolve()
        shown = str(where.relative_to(REPO)) if where.is_relative_to(REPO) else str(where)
        text = json.dumps({"dir": shown, "top_k": TOP_K, "pairs": rows, "totals": total}, indent=1) + "\n"
        if args.json.suffix == ".xz":       # the committed copy, small
            with lzma.open(args.json, "wt", preset=9) as out:
                out.write(text)
        else:
            args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
