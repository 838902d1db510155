#!/usr/bin/env bash
# Run 57 (device, session 9): the bulk form (w64b) with tensor maps (2 TMA boxes per stage
# instead of run 56's 128 row copies). Its GPU tests, the B = 2048 step A/B (default w64r on bot.1 /
# top.1 against GR_LIN_WG_BULK=1), per-op times traced, and Nsight Compute on the bulk kernel.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
A="workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg --pdl"
for rep in 1 2; do
for bulk in 0 1; do
  l="$W/x3--pdl-bulk$bulk-$rep.log"
  GR_LIN_WG_BULK=$bulk timeout 40 $G run $A --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl GR_LIN_WG_BULK=$bulk (rep $rep) rc $?"; sed -n '/^timing per step/,/^  (saved/p' "$l" | grep -vE "^timing|saved|programmatic"; grep -E " (bot|R|y) .*graph vs ref|FAIL|rror" "$l" | head -4
done; done
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for bulk in 0 1; do
  GR_LIN_WG_BULK=$bulk timeout 40 $G run workloads/dlrm_small.json $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t$bulk.jsonl" --trace-iters 200 > "$W/trace$bulk.log" 2>&1
  timeout 30 .gpu/b/cupti-launchstat report "$W/t$bulk.jsonl" > "$W/rep$bulk.log" 2>&1
  echo "== per op (graph, traced) GR_LIN_WG_BULK=$bulk"; sed -n "/workload ops/,/^\$/p" "$W/rep$bulk.log" | sed -n '14,24p' | awk 'NF>5 {print "   ", $2, $6}'
done
rm -f "$W"/t*.jsonl
for t in "register-A" "every configuration"; do
  l="$W/gpu_dlrm_kernels_$(echo $t | tr -cd 'a-zA-Z').log"
  timeout 150 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels --test "$t" > "$l" 2>&1; echo "== gpu_dlrm_kernels --test '$t' rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$l" | head -8; grep -E "failed|FAILED|rror" "$l" | head -20
done
GR_LIN_WG_BULK=1 timeout 120 ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis -k regex:"wgb" -c 2 -o "$W/wgb" $G run workloads/dlrm_small.json $X3 --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu.log" 2>&1
echo "== ncu rc $?"; tail -2 "$W/ncu.log"
ncu -i "$W/wgb.ncu-rep" --page details > "$W/details.txt" 2>&1; rm -f "$W/wgb.ncu-rep"
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Issue Slots|Stall|Tensor" "$W/details.txt" | head -30
tar -C "$OUT" -czf "$OUT/results.tgz" work
