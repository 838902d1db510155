#!/usr/bin/env bash
# Run 38 (device): the wg kernel with padded 8-row groups (SBO 1040 B) against run 37's unpadded
# layout (SBO 1024 B: the groups of a core-matrix column on the same banks), every configuration
# on fused_tf32x3 at B = 2048; Nsight Compute on bot.1's kernel (padded, unpadded) and on
# mlp_interaction; a traced per-op run.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
row() { grep -E "^  $2 +[0-9]+ +[0-9.]+ \[" "$1" | head -1 | tr -s ' '; grep -E "FAIL|not verified|rror" "$1" | head -4; }
for c in w64 w64u w128 w128u; do
  GR_LIN_WG_CFG=$c timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --set x3_impl=wg --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/cfg_$c.log" 2>&1
  echo "x3_impl=wg (all layers but top.2) $c rc $?: $(row "$W/cfg_$c.log" fused_tf32x3)"
done
timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 30 --quiet --no-bandwidth > "$W/auto.log" 2>&1
echo "auto rc $?: $(row "$W/auto.log" fused_tf32x3)"; grep -E "vs ref" "$W/auto.log" | head -3
timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace.log" 2>&1
echo "== trace rc $?"; build/cupti-launchstat report "$W/t.jsonl" > "$W/rep.log" 2>&1; sed -n "/workload ops/,/^\$/p" "$W/rep.log" | sed -n '12,24p'
N="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section Occupancy"
for c in w64 w64u; do
  GR_LIN_WG_CFG=$c timeout 120 $N -k regex:linear_wg -c 1 $G run $w --set B=2048 --variant fused_tf32x3 --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu_$c.txt" 2>&1
  echo "== ncu $c rc $?"; grep -E "Duration|Memory Throughput|Issue Slots Busy|Bank Conflicts|Shared Memory|Warp Cycles Per Issued|Stall|Eligible Warps|No Eligible" "$W/ncu_$c.txt" | head -30
done
timeout 120 $N -k regex:mlp_interaction -c 1 $G run $w --set B=2048 --variant fused_tf32x3_mlpint --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu_mi.txt" 2>&1
echo "== ncu mlp_interaction rc $?"; grep -E "Duration|Throughput|Issue Slots Busy|Bank Conflicts|Warp Cycles Per Issued|Eligible Warps|No Eligible|Achieved Occupancy" "$W/ncu_mi.txt" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" work
