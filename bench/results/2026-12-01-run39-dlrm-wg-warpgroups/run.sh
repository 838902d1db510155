#!/usr/bin/env bash
# Run 39 (device): the wg kernel with 1, 2 and 4 warpgroups copying and splitting (the first one
# also issuing the MMAs): fused_tf32x3 at B = 2048 (auto: bot.1, top.0, top.1 on wg) with each
# configuration forced, untraced graph timing and a traced per-op run each; Nsight Compute on
# bot.1's kernel; the dlrm GPU suites.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
row() { grep -E "^  $2 +[0-9]+ +[0-9.]+ \[" "$1" | head -1 | tr -s ' '; grep -E "FAIL|not verified|rror" "$1" | head -4; }
ops() { build/cupti-launchstat report "$1" > "$2" 2>&1; sed -n "/workload ops/,/^\$/p" "$2" | sed -n '12,24p' | grep -E "bot.1|top.0|top.1" | awk '{print "   ", $2, $6}'; }
for c in default w64 w64x4 w64x1 w128 w128x1; do
  e=""; [ $c != default ] && e="GR_LIN_WG_CFG=$c"
  env $e timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/cfg_$c.log" 2>&1
  echo "auto $c rc $?: $(row "$W/cfg_$c.log" fused_tf32x3)"
  env $e timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t_$c.jsonl" --trace-iters 200 > "$W/trace_$c.log" 2>&1
  ops "$W/t_$c.jsonl" "$W/rep_$c.log"; rm -f "$W/t_$c.jsonl"
done
timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/pdl.log" 2>&1
echo "auto --pdl rc $?: $(row "$W/pdl.log" fused_tf32x3)"
N="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --print-details all"
timeout 120 $N -k regex:linear_wg -c 1 $G run $w --set B=2048 --variant fused_tf32x3 --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu_w64.txt" 2>&1
echo "== ncu rc $?"; grep -E "Duration|Issue Slots Busy|Eligible Warps|No Eligible|Warp Cycles Per Issued|Stall" "$W/ncu_w64.txt" | head -24
for su in gpu_dlrm_kernels gpu_dlrm; do
  timeout 200 build/tests/gr_tests --suite $su > "$W/$su.log" 2>&1; echo "== $su rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/$su.log" | head -8; grep -B2 -A10 "FAILED" "$W/$su.log" | head -40
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
