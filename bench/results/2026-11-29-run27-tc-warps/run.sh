#!/usr/bin/env bash
# Run 27 (device): tc configurations with 8 warps per block (6432w8: 16 x 16 warp tiles,
# 64w8: 32 x 16) against the 4-warp ones, per layer (CUPTI kernel durations, attribution) with
# every tc-capable layer forced onto tc (x3_impl=tc), and each configuration verified by
# gpu_dlrm_kernels.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
timeout 240 build/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/gpu_dlrm_kernels.log" | head -12
R="workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=tc"
for cfg in "" 32 6432w8 64w8; do
  tag=${cfg:-auto}
  GR_LIN_TC_CFG=$cfg timeout 90 $G run $R --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trun_$tag.log" 2>&1
  rc=$?
  build/cupti-launchstat report "$W/t.jsonl" > "$W/rep_$tag.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== traced cfg $tag rc $rc: $(grep -A12 'workload ops' "$W/rep_$tag.log" | grep -E ' (bot|top)\.[0-3] ' | tail -7 | awk '{printf "%s %s  ", $2, $(NF-1)}')"
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
