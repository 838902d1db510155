#!/usr/bin/env bash
# Run 26 (device): the tc kernel with three accumulators for 3xTF32 (big x big, small x big,
# big x small: each accumulator one MMA per k-step) against run 25's two; stall reasons of
# bot.1's tc kernel (Nsight Compute, raw per-issue stall ratios); gpu_dlrm_kernels.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
timeout 200 build/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/gpu_dlrm_kernels.log" | head -12
R="workloads/dlrm_small.json --set B=2048"
for v in "fused_tf32x3" "fused_tf32x3 --set x3_impl=tc"; do
  tag=$(echo "$v" | tr -c 'a-z0-9\n' '_'); tag=${tag:0:30}
  timeout 90 $G run $R --variant $v --iters 2000 --batches 30 --quiet > "$W/u_$tag.log" 2>&1
  echo "== untraced $v rc $?"; grep -E "^  fused_tf32x3 +[0-9]+ +[0-9.]+ \[" "$W/u_$tag.log"; grep -E "fused_tf32x3 +(bot|R|y) .*graph vs ref" "$W/u_$tag.log"
  timeout 90 $G run $R --variant $v --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trun_$tag.log" 2>&1
  build/cupti-launchstat report "$W/t.jsonl" > "$W/rep_$tag.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== traced $v"; grep -A12 "workload ops" "$W/rep_$tag.log" | tail -9
done
timeout 200 ncu --kernel-name regex:linear_tc --launch-count 1 --page raw \
  --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active \
  $G run $R --variant fused_tf32x3 --iters 2 --batches 1 --warmup 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu_stalls.txt" 2>&1
echo "== ncu rc $?"; grep -E "stalled|issue_active|tensor|warps_active|inst_executed" "$W/ncu_stalls.txt" | awk '$NF+0 > 0.05 || /issue_active|tensor|warps_active|inst_exec/' | head -40
tar -C "$OUT" -czf "$OUT/results.tgz" work
