"""A/A and injected regressions of the timing gate, in one process (GPU).

    python3 suites/timing_proof.py RESULTS_DIR [N] [--samples S] [--ncu]

The cases of suites/gpu.toml at smaller shapes (M=4096,N=4096 and M=2048,N=8192), so the
whole experiment fits a few minutes; each kernel is compiled once and reused (the same
build, as the A/A asks; `gate_proof.sh` runs the CLI in fresh processes instead).

1. A/A: a baseline, then N gates of the same build against it: each exit must be 0.
2. Injected regression: case rmsnorm-16k-4k's target swapped for rmsnorm plus a 16 MiB
   device copy per call (suites/slower_variants.py): the same SASS, more launched work.
   The gate must call it a REGRESSION and name the extra work.
3. Improvement: the slower run as the baseline, the real kernel gated against it.
4. A different config (vec = 2): other SASS; the gate names the opcode and register changes.
5. The environment moved, simulated: the last A/A run with the target's samples scaled by
   1.10 (real SASS, real launches): the gate must say "same code, the environment moved".
6. With --ncu: each case's target once under ncu, CUDA-event median against ncu's clock.

Writes RESULTS_DIR/proof.json and prints a summary (also RESULTS_DIR/summary.txt).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOWER = f"{ROOT}/suites/slower_variants.py:rmsnorm_with_extra_traffic"


def suite_texts(samples: int) -> dict[str, str]:
    text = (ROOT / "suites" / "gpu.toml").read_text()
    text = text.replace("samples = 200", f"samples = {samples}")
    text = text.replace("shape = {M = 16384, N = 4096}", "shape = {M = 4096, N = 4096}")
    text = text.replace("shape = {M = 4096, N = 8192}", "shape = {M = 2048, N = 8192}")
    head, marker, rest = text.partition('name = "rmsnorm-16k-4k"')
    first, sep, tail = rest.partition("[[case]]")
    assert marker and 'target = "rmsnorm"' in first and "config = {vec = 8}" in first
    slower = first.replace('target = "rmsnorm"', f'target = "{SLOWER}"')
    slower = slower.replace("config = {vec = 8}", "config = {vec = 8, extra_mib = 16}")
    return {"plain": text, "slower": head + marker + slower + sep + tail,
            "vec2": head + marker + first.replace("config = {vec = 8}", "config = {vec = 2}") + sep + tail}


def compile_once():
    """Reuse each compile within this process (the same build for every gate)."""
    from kernelscope.profiler import measure

    real, memo = measure.compile_checked, {}

    def cached(spec, config, shape, dtype, arch):
        key = (spec.name, repr(sorted(config.items())), shape.get("N"), dtype, arch)
        if key not in memo:
            memo[key] = real(spec, config, shape, dtype, arch)
        return memo[key]

    measure.compile_checked = cached


def timing_rows(result) -> list[dict]:
    return [{"case": m.case, "metric": m.metric, "verdict": m.verdict, "change": m.change, "p": m.p_value,
             "reason": m.reason} for m in result.metrics if m.family in ("timing", "code")]


def suspect_checks(doc) -> list[str]:
    from kernelscope.profiler.timing_checks import failures_of

    return [f"{c['id']} {side}: {f}" for c in doc["cases"] for side, t in (c.get("timing") or {}).items()
            for f in failures_of(t)]


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0])
    n = int(args[1]) if len(args) > 1 else 20
    samples = int(argv[argv.index("--samples") + 1]) if "--samples" in argv else 100
    if "--samples" in argv:
        args = [a for a in args if a != str(samples)]
    out.mkdir(parents=True, exist_ok=True)
    from kernelscope.gate import runner
    from kernelscope.gate import suite as suite_files
    from kernelscope.gate import verdicts as g

    compile_once()
    suites = {}
    for name, text in suite_texts(samples).items():
        (out / f"{name}.toml").write_text(text)
        suites[name] = suite_files.load_suite(out / f"{name}.toml")
    proof: dict = {"n": n, "samples": samples}
    t0 = time.time()
    base = runner.run_suite(suites["plain"])
    proof["baseline_seconds"] = round(time.time() - t0, 1)
    proof["device"] = base["environment"].get("gpu", {}).get("name")
    proof["suspect_in_honest_runs"] = suspect_checks(base)
    aa, last = [], None
    for i in range(n):
        t0 = time.time()
        last = runner.run_suite(suites["plain"])
        result = g.gate(base, last)
        proof["suspect_in_honest_runs"] += suspect_checks(last)
        aa.append({"exit": result.exit_code, "verdict": result.verdict, "seconds": round(time.time() - t0, 1),
                   "timing": timing_rows(result)})
        print(f"A/A {i + 1}: exit {result.exit_code} {result.verdict}", flush=True)
    proof["aa"] = aa
    slower = runner.run_suite(suites["slower"])
    proof["regression"] = _gate(g, base, slower)
    proof["improvement"] = _gate(g, slower, last)
    proof["vec2"] = _gate(g, base, runner.run_suite(suites["vec2"]))
    shifted = json.loads(json.dumps(last))
    target = shifted["cases"][0]["timing"]["target"]
    target["samples_ms"] = [x * 1.10 for x in target["samples_ms"]]
    proof["environment_moved"] = _gate(g, base, shifted)
    write(out, proof)
    if "--ncu" in argv:
        proof["ncu"] = ncu_points(base)
        write(out, proof)
    print(summary(proof))
    return 0


def write(out: Path, proof: dict) -> None:
    """After each step, so a run cut short still leaves what it measured."""
    (out / "proof.json").write_text(json.dumps(proof, indent=1, default=str))
    (out / "summary.txt").write_text(summary(proof))


def _gate(g, base, current) -> dict:
    result = g.gate(base, current)
    return {"exit": result.exit_code, "verdict": result.verdict, "timing": timing_rows(result)}


def ncu_points(base) -> list[dict]:
    """Each case's target: checked timing, then one launch under ncu (clock control none)."""
    from kernelscope.cli.cross_check import cross_check
    from kernelscope.kernels import registry
    from kernelscope.profiler import measure
    from kernelscope.profiler.timing_checks import NCU_AGREEMENT

    points = []
    for case in base["cases"]:
        spec = registry.resolve(case["target"])
        config = spec.config_for(case["shape"], case["dtype"], case["config"])
        run = measure.run_target(spec, None, case["shape"], case["dtype"], config, rep_ms=50, warmup_ms=10)
        timing = run.target_side.timing
        cross_check(spec, case["target"], case["shape"], case["dtype"], config, 0, "sm_90a", timing, run.peaks)
        check = timing.checks.get(NCU_AGREEMENT)
        points.append({"case": case["id"], "events_median_ms": timing.median_ms, "passed": check.passed,
                       "detail": check.detail})
    return points


def summary(proof: dict) -> str:
    lines = [f"device: {proof.get('device')}  samples per side: {proof['samples']}"]
    alarms = [a for a in proof["aa"] if a["exit"] != 0]
    regressions = sum(1 for a in proof["aa"] for t in a["timing"] if t["verdict"] == "REGRESSION")
    worst = max((abs(t["change"]) for a in proof["aa"] for t in a["timing"] if t["change"] is not None), default=0)
    lines.append(f"A/A: {len(proof['aa'])} gates, non-zero exits {len(alarms)}, timing REGRESSIONs {regressions}, "
                 f"largest |median change| {worst:.2%}")
    env_moved = sum(1 for a in proof["aa"] for t in a["timing"] if "environment moved" in (t["reason"] or ""))
    lines.append(f"A/A timings that moved beyond the thresholds with the same code: {env_moved}")
    lines.append(f"checks failed on honest runs: {len(proof['suspect_in_honest_runs'])}")
    for line in proof["suspect_in_honest_runs"][:5]:
        lines.append(f"  {line}")
    for name in ("regression", "improvement", "vec2", "environment_moved"):
        r = proof[name]
        lines.append(f"{name}: exit {r['exit']} verdict {r['verdict']}")
        for t in r["timing"]:
            change = "" if t["change"] is None else f"{t['change']:+.1%}"
            lines.append(f"  {t['case']:16} {t['metric']:9} {t['verdict']:12} {change:>7} {t['reason'][:150]}")
    for p in proof.get("ncu", []):
        lines.append(f"ncu {p['case']}: {'agree' if p['passed'] else 'DISAGREE'} {p['detail']}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
