#!/usr/bin/env bash
# Run 22 (device): where the tc kernel's time goes after run 21's fragment change.
# Nsight Compute on its four launches in fused_tf32x3 at B = 2048 (bot.0, bot.1, top.0, top.1),
# traced per-op durations (attribution only), and untraced graph timings per tile configuration
# (GR_LIN_TC_CFG). Run from the repository root with a carried build/.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { sed -n '/^timing per step/,/saved us\/krn/p' "$1" | grep -E "variant|fused"; grep -E "graph vs ref.*(FAIL|bad)|not verified|error" "$1" | head -5; }
R="workloads/dlrm_small.json --set B=2048"
timeout 240 ncu --kernel-name regex:linear_tc --launch-count 4 --section SpeedOfLight \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
  --section Occupancy --section SchedulerStats --section LaunchStats \
  $G run $R --variant fused_tf32x3 --iters 2 --batches 1 --warmup 1 --no-cpu-ref --no-bandwidth --quiet \
  > "$W/ncu.txt" 2>&1; echo "== ncu rc $?"
grep -E "linear_tc_kernel|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Issue Slots Busy|Eligible Warps|Achieved Occupancy|Registers Per|Stall|No Eligible" "$W/ncu.txt" | head -80
for cfg in "" 64 6432; do
  tag=${cfg:-auto}
  GR_LIN_TC_CFG=$cfg timeout 90 $G run $R --variant fused_tf32x3 --iters 2000 --batches 30 --quiet > "$W/x3_$tag.log" 2>&1
  echo "== untraced fused_tf32x3 cfg $tag rc $?"; t "$W/x3_$tag.log"
  GR_LIN_TC_CFG=$cfg timeout 90 $G run $R --variant fused_tf32x3 --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trun_$tag.log" 2>&1
  build/cupti-launchstat report "$W/t.jsonl" > "$W/rep_$tag.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== traced fused_tf32x3 cfg $tag"; grep -A12 "workload ops" "$W/rep_$tag.log" | tail -10
done
timeout 90 $G run $R --variant fused_tf32x3 --set x3_impl=tc --iters 2000 --batches 30 --quiet > "$W/x3_alltc.log" 2>&1
echo "== untraced fused_tf32x3 x3_impl=tc rc $?"; t "$W/x3_alltc.log"
tar -C "$OUT" -czf "$OUT/results.tgz" work
