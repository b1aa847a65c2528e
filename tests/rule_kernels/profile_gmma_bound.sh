#!/bin/bash
# Profiles tests/rule_kernels/gmma_bound.py under ncu into $OUT/rule-gmma.ncu-rep(.xz), with the
# sections and metrics of profile_rule_kernels.sh (read from it, so the two stay the same).
# Clock control none: the GPU clocks are left as they are; cache control: ncu default (all).
cd "$(dirname "$0")" || exit 1
eval "$(grep -E '^(METRICS|SECTIONS)=' profile_rule_kernels.sh)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
timeout 200 /usr/local/cuda/bin/ncu --clock-control none --profile-from-start off --nvtx $SECTIONS --metrics $METRICS -o $OUT/rule-gmma -f python3 gmma_bound.py > $OUT/ncu.log 2>&1; echo "ncu rc=$?" >> $OUT/ncu.log
xz -9 -k $OUT/rule-gmma.ncu-rep
STALLS=$(echo smsp__average_warps_issue_stalled_{gmma,barrier,long_scoreboard,wait,mio_throttle,math_pipe_throttle,selected}_per_issue_active.ratio | tr ' ' ',')
/usr/local/cuda/bin/ncu --import $OUT/rule-gmma.ncu-rep --page raw --csv --metrics gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,$STALLS > $OUT/stalls.csv 2>&1
ls -la $OUT; cat $OUT/gpu.txt; grep -v "^==PROF==" $OUT/ncu.log | tail -20; grep -c "==PROF== Profiling" $OUT/ncu.log
cat $OUT/stalls.csv
