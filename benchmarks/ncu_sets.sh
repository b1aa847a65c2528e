#!/usr/bin/env bash
# Replay passes and wall time of `kernelscope profile` per ncu set (quick, sections, full),
# on the shipped gemm vs cuBLAS at 2048^3 bf16, and which catalog metrics each set fills.
#   bash benchmarks/ncu_sets.sh OUT_DIR
# Writes OUT_DIR/gemm-2048-<set>.ncu-rep(.xz), the profile logs and OUT_DIR/ncu-sets.txt.
set -u
cd "$(dirname "$0")/.."
OUT_DIR=${1:?usage: ncu_sets.sh OUT_DIR}
mkdir -p "$OUT_DIR"
for set in ${SETS:-quick sections full}; do
    start=$(date +%s.%N)
    python3 -m kernelscope profile gemm --vs cublas --shape M=2048,N=2048,K=2048 --set "$set" \
        --clock-control none -o "$OUT_DIR/gemm-2048-$set.ncu-rep" > "$OUT_DIR/profile-$set.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    python3 - "$OUT_DIR/gemm-2048-$set.ncu-rep" "$set" "$rc" "$start" "$end" >> "$OUT_DIR/ncu-sets.txt" <<'PY'
import sys
from kernelscope.profiler.catalog import load_catalog, evaluate
from kernelscope.profiler.report import load_report
path, name, rc, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
try:
    profiles = load_report(path)
except Exception as e:  # the log says why
    print(f"{name}: exit {rc}, no report ({e})")
    raise SystemExit
catalog = load_catalog()
measured = [m for m in catalog.metrics.values() if m.view != "static" and not any(r.startswith("static__") for r in m.raw_metrics())]
for p in profiles:
    missing = [m.id for m in measured if evaluate(m, p) is None]
    print(f"{name}: exit {rc}, {p.name[:40]}: {p.session.replay_passes} passes, wall {end - start:.1f} s for the profile, "
          f"{len(measured) - len(missing)}/{len(measured)} catalog metrics, mix {len(p.instruction_mix)} opcodes, "
          f"stalls {len(p.stalls)}; missing: {', '.join(missing) or '-'}")
PY
done
cat "$OUT_DIR/ncu-sets.txt"
