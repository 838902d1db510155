#!/usr/bin/env bash
# Run 45 (device, session 7): the register-A form with wgmma.wait_group 0 after each stage (run 44
# gave wrong, run-to-run different results with wait_group 1): B = 2048 verification, per op and
# graph timing of fused_tf32x3 x3_impl=auto_wg --pdl with both forms, then gpu_dlrm_kernels.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
GR_LIN_WG_REGA=1 timeout 60 $G run $w $X3 --iters 200 --batches 3 > "$W/check.log" 2>&1
echo "== check (register A) rc $?"; grep -E "vs ref|vs eager|FAIL|rror" "$W/check.log" | head -8
GR_LIN_WG_REGA=1 timeout 40 $G run $w $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace1.log" 2>&1
echo "== traced per op (graph) GR_LIN_WG_REGA=1 rc $?"; .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep1.log" 2>&1; rm -f "$W/t.jsonl"
sed -n "/workload ops/,/^\$/p" "$W/rep1.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
for ra in 0 1; do
  GR_LIN_WG_REGA=$ra timeout 40 $G run $w $X3 --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3_$ra.log" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl GR_LIN_WG_REGA=$ra rc $?"; tab "$W/x3_$ra.log"; grep -E "vs ref" "$W/x3_$ra.log" | head -3
done
timeout 300 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/gpu_dlrm_kernels.log" | head -8; grep -E "failed|FAILED" "$W/gpu_dlrm_kernels.log" | head -30
tar -C "$OUT" -czf "$OUT/results.tgz" work
