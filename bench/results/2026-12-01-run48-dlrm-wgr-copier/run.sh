#!/usr/bin/env bash
# Run 48 (device, session 7): the register-A form with every copy in the MMA warpgroup (the W
# splitters hold no cp.async in flight at their fence): verification at B = 2048, per op, graph
# timing of fused_tf32x3 x3_impl=auto_wg with and without PDL, then gpu_dlrm_kernels.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
timeout 40 $G run $w $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace.log" 2>&1
echo "== traced per op (graph) rc $?"; .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep.log" 2>&1; rm -f "$W/t.jsonl"
sed -n "/workload ops/,/^\$/p" "$W/rep.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
GR_LIN_WG_REGA=1 timeout 40 $G run $w $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace1.log" 2>&1
echo "== traced per op (graph) REGA=1 rc $?"; .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep1.log" 2>&1; rm -f "$W/t.jsonl"
sed -n "/workload ops/,/^\$/p" "$W/rep1.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
for ra in "" 1; do
  for p in "--pdl" ""; do
    GR_LIN_WG_REGA=$ra timeout 40 $G run $w $X3 $p --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3_$ra$p.log" 2>&1
    echo "== B=2048 fused_tf32x3 auto_wg $p GR_LIN_WG_REGA='$ra' rc $?"; tab "$W/x3_$ra$p.log"; grep -E "vs ref|vs eager" "$W/x3_$ra$p.log" | head -6
  done
done
timeout 300 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/gpu_dlrm_kernels.log" | head -8; grep -E "failed|FAILED" "$W/gpu_dlrm_kernels.log" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" work
