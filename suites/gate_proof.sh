#!/usr/bin/env bash
# Calibrate the timing gate on this GPU machine: does it stay quiet on noise and catch
# a slower kernel?
#
#   1. A/A: save a baseline of suites/gpu.toml, then gate the same build against it
#      N times (default 20); every run should PASS. Each non-zero exit is a false alarm.
#   2. Injected regression: case rmsnorm-16k-4k swapped for a deliberately slower
#      variant (rmsnorm plus a 16 MiB device copy per launch): timing:target must be
#      a REGRESSION of that case only.
#   3. Improvement: the slower variant's run (saved in step 2) as the baseline, gated with
#      the real kernel: the timing must be an IMPROVEMENT and the gate must exit 0.
#   4. Counters: suites/gpu-counters.toml (one ncu profile per case, clock control none),
#      its A/A gate, and the gate of its ncu report against it (--report).
#   5. A slower config: the same case with vec = 2 instead of 8 (reported as measured).
#
# Usage: bash suites/gate_proof.sh RESULTS_DIR [N]
# Writes every gate's JSON, terminal output and exit code under RESULTS_DIR and prints
# a table at the end (also in RESULTS_DIR/summary.txt).
set -u
cd "$(dirname "$0")/.."
DIR=${1:?usage: gate_proof.sh RESULTS_DIR [N]}
N=${2:-20}
mkdir -p "$DIR"
export CUTE_DSL_ARCH=${CUTE_DSL_ARCH:-sm_90a}
ks() { python3 -m kernelscope "$@"; }
stamp() { echo "[$(date +%H:%M:%S)] $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
    > "$DIR/gpu-before.csv" 2>&1

# Suite variants: only case rmsnorm-16k-4k changes.
python3 - "$DIR" <<'EOF'
import sys
out = sys.argv[1]
text = open("suites/gpu.toml").read()
head, marker, rest = text.partition('name = "rmsnorm-16k-4k"')
first, sep, tail = rest.partition("[[case]]")
assert marker and 'target = "rmsnorm"' in first and "config = {vec = 8}" in first
slower = first.replace('target = "rmsnorm"', 'target = "suites/slower_variants.py:rmsnorm_with_extra_traffic"')
slower = slower.replace("config = {vec = 8}", "config = {vec = 8, extra_mib = 16}")
open(f"{out}/slower.toml", "w").write(head + marker + slower + sep + tail)
open(f"{out}/vec2.toml", "w").write(head + marker + first.replace("config = {vec = 8}", "config = {vec = 2}") + sep + tail)
EOF

stamp "baseline (suites/gpu.toml)"
ks baseline save --suite suites/gpu.toml -o "$DIR/baseline.json" --force --quiet 2> "$DIR/baseline.log"
echo $? > "$DIR/baseline.rc"

for i in $(seq 1 "$N"); do
    ks gate --baseline "$DIR/baseline.json" --suite suites/gpu.toml --quiet --json "$DIR/aa-$i.json" \
        > "$DIR/aa-$i.txt" 2>&1
    echo $? > "$DIR/aa-$i.rc"
    stamp "A/A $i: exit $(cat "$DIR/aa-$i.rc")"
done

stamp "injected regression: slower variant"
# --save-run keeps the slower variant's measurements: they are the baseline of step 4.
ks gate --baseline "$DIR/baseline.json" --suite "$DIR/slower.toml" --quiet --json "$DIR/regression.json" \
    --markdown "$DIR/regression.md" --junit "$DIR/regression.xml" --save-run "$DIR/baseline-slower.json" \
    > "$DIR/regression.txt" 2>&1
echo $? > "$DIR/regression.rc"

stamp "improvement: the slower variant's run as baseline, gate of the real kernel"
ks gate --baseline "$DIR/baseline-slower.json" --suite suites/gpu.toml --quiet --json "$DIR/improvement.json" \
    > "$DIR/improvement.txt" 2>&1
echo $? > "$DIR/improvement.rc"

stamp "counters: ncu baseline, A/A gate, report gate"
ks baseline save --suite suites/gpu-counters.toml -o "$DIR/baseline-counters.json" --force --quiet \
    --keep-reports "$DIR/reports" 2> "$DIR/baseline-counters.log"
echo $? > "$DIR/baseline-counters.rc"
ks gate --baseline "$DIR/baseline-counters.json" --suite suites/gpu-counters.toml --quiet \
    --json "$DIR/counters-aa.json" > "$DIR/counters-aa.txt" 2>&1
echo $? > "$DIR/counters-aa.rc"
report=$(ls "$DIR"/reports/*.ncu-rep 2>/dev/null | head -1)
if [ -n "$report" ]; then
    ks gate --baseline "$DIR/baseline-counters.json" --report "$report" --json "$DIR/counters-report.json" \
        > "$DIR/counters-report.txt" 2>&1
    echo $? > "$DIR/counters-report.rc"
fi

stamp "slower config: vec=2"
ks gate --baseline "$DIR/baseline.json" --suite "$DIR/vec2.toml" --quiet --json "$DIR/vec2.json" \
    > "$DIR/vec2.txt" 2>&1
echo $? > "$DIR/vec2.rc"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
    > "$DIR/gpu-after.csv" 2>&1
stamp "done"

python3 - "$DIR" "$N" <<'EOF' | tee "$DIR/summary.txt"
import json, os, sys
d, n = sys.argv[1], int(sys.argv[2])

def load(name):
    path = os.path.join(d, name)
    return json.load(open(path)) if os.path.exists(path) else None

def rc(name):
    path = os.path.join(d, name + ".rc")
    return open(path).read().strip() if os.path.exists(path) else "-"

def timing_rows(doc):
    rows = []
    for case in doc["cases"]:
        for m in case["metrics"]:
            if m["family"] == "timing":
                change = "n/a" if m["change"] is None else f"{m['change']:+.2%}"
                p = "n/a" if m["p_value"] is None else f"{m['p_value']:.2g}"
                rows.append(f"{case['case']:16} {m['metric']:9} {change:>8} p={p:8} {m['verdict']}")
    return rows

env = (load("baseline.json") or {}).get("environment", {})
print(f"device: {env.get('gpu', {}).get('name')}  driver {env.get('driver')}  torch {env.get('torch')}  "
      f"cutlass-dsl {env.get('nvidia-cutlass-dsl')}  timing clocks: {env.get('timing', {}).get('clock_control')} "
      f"(not locked), L2 flushed: {env.get('timing', {}).get('flush_l2')}")
alarms, worst = 0, {}
for i in range(1, n + 1):
    doc = load(f"aa-{i}.json")
    code = rc(f"aa-{i}")
    if code != "0":
        alarms += 1
    if doc:
        for case in doc["cases"]:
            for m in case["metrics"]:
                if m["family"] == "timing" and m["change"] is not None:
                    key = (case["case"], m["metric"])
                    worst[key] = max(worst.get(key, 0.0), abs(m["change"]))
print(f"A/A: {n} gates, false alarms (exit != 0): {alarms}")
for (case, metric), w in sorted(worst.items()):
    print(f"  largest |median change| {case:16} {metric:9} {w:.2%}")
for name in ("regression", "improvement", "counters-aa", "counters-report", "vec2"):
    doc = load(f"{name}.json")
    print(f"{name}: exit {rc(name)}  verdict {doc['verdict'] if doc else 'n/a'}")
    if not doc:
        continue
    for row in timing_rows(doc):
        print("  " + row)
    flagged = [(c["case"], m) for c in doc["cases"] for m in c["metrics"]
               if m["verdict"] != "PASS" and m["family"] != "timing"]
    for case, m in flagged[:12]:
        print(f"  {case:16} {m['family']}:{m['metric']:28} {m['verdict']:12} {m['reason'][:90]}")
    if len(flagged) > 12:
        print(f"  ... {len(flagged) - 12} more")
EOF
