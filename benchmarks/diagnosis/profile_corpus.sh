#!/usr/bin/env bash
# Builds the planted pairs (corpus.cu), checks and times every pair (planted and peers.py), then
# profiles one launch of each kernel under Nsight Compute's full set and writes xz -9 reports.
#   bash benchmarks/diagnosis/profile_corpus.sh OUT_DIR
#   PARTS=planted bash benchmarks/diagnosis/profile_corpus.sh OUT_DIR    (planted pairs only)
#   PARTS=planted PAIRS="fp64 icache" REPORT=planted-set2 bash ...        (those planted pairs, into planted-set2.ncu-rep.xz)
#   NCU_SECTIONS="--section SpeedOfLight ..." bash ...                      (other sections than --set full)
#   PARTS=peers PEERS=gemm_cluster PEER_REPORT=gemm-cluster bash ...        (those peer pairs, into gemm-cluster.ncu-rep.xz)
#   PARTS=cute CUTE_REPORT=cute-set1 bash ...                               (the CuTe DSL pairs of cute_pairs.py)
#   PARTS=cute2 CUTE2_REPORT=cute-set2 bash ...                             (the CuTe DSL pairs of cute_pairs_set2.py)
#   PARTS=cute3 CUTE3_REPORT=cute-set3 bash ...                             (the CuTe DSL pairs of cute_pairs_set3.py)
# On the GPU machine, with quack and flash_attn.cute importable (the GPU kit). Writes
# OUT_DIR/{gpu.txt,timing.txt,ncu.log,planted.ncu-rep.xz,peers.ncu-rep.xz} (REPORT names the first,
# PEER_REPORT the second).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT_DIR=${1:?usage: profile_corpus.sh OUT_DIR}
NCU=${NCU:-/usr/local/cuda/bin/ncu}
mkdir -p "$OUT_DIR"
BUILD=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > "$OUT_DIR/gpu.txt"
nvcc -O3 -arch=sm_90a -lineinfo -o "$BUILD/corpus" "$HERE/corpus.cu" || { echo "build failed"; exit 1; }

PARTS=${PARTS:-planted peers}
REPORT=${REPORT:-planted}
PEER_REPORT=${PEER_REPORT:-peers}
CUTE_REPORT=${CUTE_REPORT:-cute}
CUTE2_REPORT=${CUTE2_REPORT:-cute2}
CUTE3_REPORT=${CUTE3_REPORT:-cute3}
PEER_ARGS=()
[ -n "${PEERS:-}" ] && PEER_ARGS=(--pairs "$PEERS")
read -r -a ONLY <<< "${PAIRS:-}"
has() { [[ " $PARTS " == *" $1 "* ]]; }
status=0
{
    if has planted; then "$BUILD/corpus" "${ONLY[@]}" || status=1; fi
    if has peers; then python3 "$HERE/peers.py" "${PEER_ARGS[@]}" || status=1; fi
    if has cute; then python3 "$HERE/cute_pairs.py" || status=1; fi
    if has cute2; then python3 "$HERE/cute_pairs_set2.py" || status=1; fi
    if has cute3; then python3 "$HERE/cute_pairs_set3.py" || status=1; fi
} > "$OUT_DIR/timing.txt" 2>&1

# One launch per kernel: the programs open the profiler only around the launches to record.
read -r -a SECTIONS <<< "${NCU_SECTIONS:---set full}"
NCU_FLAGS=("${SECTIONS[@]}" --import-source no --clock-control none --profile-from-start off --nvtx)
{
    if has planted; then timeout 300 "$NCU" "${NCU_FLAGS[@]}" -o "$OUT_DIR/$REPORT" -f "$BUILD/corpus" --profile "${ONLY[@]}" || status=1; fi
    if has peers; then timeout 240 "$NCU" "${NCU_FLAGS[@]}" -o "$OUT_DIR/$PEER_REPORT" -f python3 "$HERE/peers.py" --profile "${PEER_ARGS[@]}" || status=1; fi
    if has cute; then timeout 240 "$NCU" "${NCU_FLAGS[@]}" -o "$OUT_DIR/$CUTE_REPORT" -f python3 "$HERE/cute_pairs.py" --profile || status=1; fi
    if has cute2; then timeout 240 "$NCU" "${NCU_FLAGS[@]}" -o "$OUT_DIR/$CUTE2_REPORT" -f python3 "$HERE/cute_pairs_set2.py" --profile || status=1; fi
    if has cute3; then timeout 240 "$NCU" "${NCU_FLAGS[@]}" -o "$OUT_DIR/$CUTE3_REPORT" -f python3 "$HERE/cute_pairs_set3.py" --profile || status=1; fi
} > "$OUT_DIR/ncu.log" 2>&1
for rep in "$REPORT" "$PEER_REPORT" "$CUTE_REPORT" "$CUTE2_REPORT" "$CUTE3_REPORT"; do
    [ -f "$OUT_DIR/$rep.ncu-rep" ] && xz -9 -f "$OUT_DIR/$rep.ncu-rep"
done
cat "$OUT_DIR/gpu.txt" "$OUT_DIR/timing.txt"
grep -v "^==PROF==" "$OUT_DIR/ncu.log" | tail -20
grep -c "==PROF== Profiling" "$OUT_DIR/ncu.log"
ls -la "$OUT_DIR"
exit $status
