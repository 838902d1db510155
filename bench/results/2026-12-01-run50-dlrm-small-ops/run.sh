#!/usr/bin/env bash
# Run 50 (device, session 8): gpu_dlrm_kernels on session 7's review refactor (wg tables, one
# wg_family), then what bounds the small B = 2048 kernels of fused_tf32x3 (bot.0 tiled, bot.2 /
# bot.3 / top.2 simt, the interaction): Nsight Compute, and the step with tables that fit in L2.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
timeout 260 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/gpu_dlrm_kernels.log" | head -8; grep -E "failed|FAILED" "$W/gpu_dlrm_kernels.log" | head -20
for rc in 1000000 1000; do
  timeout 40 $G run $w $X3 --set rows_cap=$rc --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3_rc$rc.log" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl rows_cap=$rc rc $?"; tab "$W/x3_rc$rc.log"
  timeout 40 $G run $w $X3 --set rows_cap=$rc --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace_rc$rc.log" 2>&1
  .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep_rc$rc.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== per op (graph) rows_cap=$rc"; sed -n "/workload ops/,/^\$/p" "$W/rep_rc$rc.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
done
timeout 200 ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis -k regex:"tiled|simt|interaction" -c 5 -o "$W/small" $G run $w $X3 --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu.log" 2>&1
echo "== ncu rc $?"; tail -3 "$W/ncu.log"
ncu -i "$W/small.ncu-rep" --page details --print-details all > "$W/details.txt" 2>&1; echo "== details rc $?"
grep -E "^  [a-z_]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Achieved Occupancy|Issue Slots Busy|Registers Per|Stall|Warp Cycles Per Issued" "$W/details.txt" | head -90
rm -f "$W/small.ncu-rep"
tar -C "$OUT" -czf "$OUT/results.tgz" work
