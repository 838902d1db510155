#!/usr/bin/env bash
# Run 32 (device): decode_step_stream v2 (producer keeps at most GR_DEC_S_INFLIGHT stages in
# flight; slot waits by stage number; down tasks of 4 rows split along K over the warps). Sweep of
# the in-flight cap on the fp32 B4 and default bf16 targets, stamps at the default cap, then
# gpu_decode. Binaries from the /tmp/snap snapshot (GR_SOURCE_DIR), carried in .gpu/.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
ln -sfn "$PWD" /tmp/snap
G=.gpu/graphrun
w=workloads/decode_step.json
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
row() { grep -E "^  fused_stream +1 " "$1" | awk '{print $3, $4, $5, "| graph", $6, $7, $8}'; grep -E "FAIL|not verified|rror" "$1" | head -3; }
for IF in 2 3 4 6 9; do
  GR_DEC_S_INFLIGHT=$IF timeout 60 $G run $w --variant fused_stream $FP --iters 2000 --batches 20 --quiet > "$W/fp32_if$IF.log" 2>&1
  echo "fp32 B4 inflight $IF rc $?: $(row "$W/fp32_if$IF.log")"
done
for IF in 2 3 4 6 12; do
  GR_DEC_S_INFLIGHT=$IF timeout 60 $G run $w --variant fused_stream --iters 1000 --batches 20 --quiet > "$W/bf16_if$IF.log" 2>&1
  echo "bf16 default inflight $IF rc $?: $(row "$W/bf16_if$IF.log")"
done
GR_STEP_TIMES="$W/times_fp32.csv" timeout 60 $G run $w --variant fused_stream $FP --iters 200 --no-cpu-ref --quiet > /dev/null 2>&1
python3 scripts/step-times "$W/times_fp32.csv" 2>&1 | tail -3
GR_STEP_TIMES="$W/times_bf16.csv" timeout 60 $G run $w --variant fused_stream --iters 200 --no-cpu-ref --quiet > /dev/null 2>&1
python3 scripts/step-times "$W/times_bf16.csv" 2>&1 | tail -3
timeout 300 .gpu/gr_tests --suite gpu_decode > "$W/gpu_decode.log" 2>&1; echo "== gpu_decode rc $?"
grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/gpu_decode.log" | head -12; grep -B2 -A8 "FAILED" "$W/gpu_decode.log" | head -30
tar -C "$OUT" -czf "$OUT/results.tgz" work
