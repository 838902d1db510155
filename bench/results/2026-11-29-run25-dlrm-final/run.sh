#!/usr/bin/env bash
# Run 25 (device): the instruction ceiling (gr_mma_peak), the dlrm GPU suites and the dlrm bench
# suite on the final tc kernel and impl choice; per-op traced times (attribution) of fused and
# fused_tf32x3 at B = 2048; gpu_decode (launch.cuh changed: every launch goes through
# gr_launch_cluster).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
GR_SM_MHZ=1980 timeout 60 build/gr_mma_peak 4096 > "$W/mma_peak.txt" 2>&1; echo "== mma_peak rc $?"; cat "$W/mma_peak.txt"
for su in gpu_dlrm_kernels gpu_dlrm gpu_decode; do
  timeout 250 build/tests/gr_tests --suite $su > "$W/$su.log" 2>&1; echo "== $su rc $?"
  grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/$su.log" | head -12
done
R="workloads/dlrm_small.json --set B=2048"
for v in fused fused_tf32x3; do
  timeout 90 $G run $R --variant $v --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trun_$v.log" 2>&1
  rc=$?
  build/cupti-launchstat report "$W/t.jsonl" > "$W/rep_$v.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== traced $v rc $rc"; grep -A12 "workload ops" "$W/rep_$v.log" | tail -9
done
mkdir -p "$W/bench"
GR_BUILD_DIR=build BENCH_OUT="$W/bench" timeout 420 bench/run.sh dlrm 2>&1 | tee "$W/bench_dlrm.txt" | grep -E "^==|fused|unfused|exit" | head -60
tar -C "$OUT" -czf "$OUT/results.tgz" work
