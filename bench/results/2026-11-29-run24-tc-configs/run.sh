#!/usr/bin/env bash
# Run 24 (device): every tc configuration (GR_LIN_TC_CFG: 3 or 4 stages, K split over a cluster
# of 2) checked against the reference (gpu_dlrm_kernels), then timed per layer of fused_tf32x3 at
# B = 2048 (CUPTI kernel durations: attribution, not the untraced step time).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
timeout 240 build/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/gpu_dlrm_kernels.log" | head -20
R="workloads/dlrm_small.json --set B=2048"
for cfg in "" 64 6432 64s4 6432s4 64k2 64k2s4; do
  tag=${cfg:-auto}
  GR_LIN_TC_CFG=$cfg timeout 90 $G run $R --variant fused_tf32x3 --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trun_$tag.log" 2>&1
  rc=$?
  build/cupti-launchstat report "$W/t.jsonl" > "$W/rep_$tag.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== traced cfg $tag rc $rc: $(grep -A12 'workload ops' "$W/rep_$tag.log" | grep -E 'bot\.[01]|top\.[01]' | awk '{printf "%s %s  ", $2, $(NF-1)}')"
  grep -E "vs ref.*(FAIL|bad)|error" "$W/trun_$tag.log" | head -3
done
timeout 90 $G run $R --iters 2000 --batches 30 --quiet --variant fused_tf32x3 > "$W/x3_auto.log" 2>&1
echo "== untraced auto rc $?"; grep -E "^  fused_tf32x3 +[0-9]" "$W/x3_auto.log"
tar -C "$OUT" -czf "$OUT/results.tgz" work
