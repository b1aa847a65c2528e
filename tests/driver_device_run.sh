#!/bin/bash
# The driver's device experiment: gpu tests, `run` (with the do_bench agreement check),
# `profile` of the CuTe DSL RMSNorm and of a user kernel file against torch, and a sweep.
# Run from the repository root on a GPU machine after the kit setup; results go to $OUT
# (or ./driver-out). ncu runs with --clock-control none (clocks left as found) and
# --cache-control all, recorded in each report's .kernelscope.json sidecar.
set -o pipefail
OUT=${OUT:-driver-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin" KERNELSCOPE_CACHE="$OUT/cache"
log="$OUT/log.txt"
step() { echo "=== $*" | tee -a "$log"; "$@" 2>&1 | tee -a "$log"; echo "=== rc=$?" | tee -a "$log"; }

step nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
step ncu --version
ncu --query-metrics --chip gh100 > /tmp/gh100-metrics.txt 2>&1
for m in $(python3 -c "from kernelscope.rules.collection import quick_metrics; print(' '.join(m.split('.', 1)[0] for m in quick_metrics()))"); do
  grep -q "^$m " /tmp/gh100-metrics.txt || echo "metric not known to ncu: $m" | tee -a "$log"
done
step timeout 300 python3 -m pytest -q -m gpu tests/test_driver_gpu.py tests/test_rmsnorm.py
step kernelscope run rmsnorm --vs torch.rmsnorm --do-bench --json "$OUT/run_rmsnorm.json"
step kernelscope run tests/examples/my_scale.py:SPEC --do-bench --json "$OUT/run_my_scale.json"
step kernelscope profile rmsnorm --vs torch.rmsnorm --shape M=16384,N=4096 -o "$OUT/rmsnorm-vs-torch.ncu-rep"
step kernelscope profile tests/examples/my_scale.py:SPEC --vs torch -o "$OUT/my_scale-vs-torch.ncu-rep"
# A config the kernel rejects, found inside the profiled process: one line, non-zero exit.
step kernelscope profile rmsnorm --shape M=1024,N=8192 --config threads=64 -o /tmp/rejected.ncu-rep
# Which process can read a report: without torch, and with torch imported first.
rep="$OUT/rmsnorm-vs-torch.ncu-rep"
step python3 -X faulthandler -c "import sys; from kernelscope.profiler.report import load_report; print('without torch:', len(load_report(sys.argv[1])))" "$rep"
step python3 -X faulthandler -c "import sys, torch; from kernelscope.profiler.report import load_report; print('with torch:', len(load_report(sys.argv[1])))" "$rep"
xz -9 -f "$OUT"/*.ncu-rep
rm -rf "$OUT/cache"
ls -la "$OUT"
