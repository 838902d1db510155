#!/usr/bin/env bash
# Run 44 (device, session 7): bench/pending/dlrm-wg-rega.sh as run, without gpu_dlrm (run 45).
#
# What it measures: the wg kernel's register-A form (configurations w64r / w128r; x's fragments
# loaded from the raw stage into registers and split there, only W's parts through shared memory;
# design and prediction in kernels/dlrm_wg_sm90a.cu and docs/dlrm_small.md change 14):
#   1. correctness first: fused_tf32x3 at B = 2048 with GR_LIN_WG_REGA=1 against the CPU reference;
#   2. per op (CUPTI, graph, attribution only) with the current form and with GR_LIN_WG_REGA=1;
#   3. untraced graph replay of fused_tf32x3 x3_impl=auto_wg, both forms, with and without PDL;
#   4. per op with x3_impl=simt and tc (each layer on every kernel family), Nsight Compute on the
#      register-A kernel (bot.1);
#   5. gpu_dlrm_kernels (every wg configuration, the register-A cross in both maths) and gpu_dlrm.
# About 6-8 minutes of device time.
# If 3. beats 72.50 us (run 43), make the register-A form wg_config's default (dlrm.c), update the
# CPU tests that name the configuration, and re-run 5.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
GR_LIN_WG_REGA=1 timeout 60 $G run $w $X3 --iters 200 --batches 3 > "$W/check.log" 2>&1
echo "== check (register A) rc $?"; grep -E "vs ref|verif|FAIL|rror" "$W/check.log" | head -6
for ra in 0 1; do
  GR_LIN_WG_REGA=$ra timeout 40 $G run $w $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace$ra.log" 2>&1
  echo "== traced per op (graph) GR_LIN_WG_REGA=$ra rc $?"; .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep$ra.log" 2>&1; rm -f "$W/t.jsonl"
  sed -n "/workload ops/,/^\$/p" "$W/rep$ra.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
done
for ra in 0 1; do
  for p in "" "--pdl"; do
    GR_LIN_WG_REGA=$ra timeout 40 $G run $w $X3 $p --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3_$ra$p.log" 2>&1
    echo "== B=2048 fused_tf32x3 auto_wg GR_LIN_WG_REGA=$ra $p rc $?"; tab "$W/x3_$ra$p.log"; grep -E "vs ref" "$W/x3_$ra$p.log" | head -3
  done
done
# 6 raw stages in the register-A form (bot.1 and top.1 are the layers to read: top.0 gets 64 x 64
# tiles here, 256 blocks)
GR_LIN_WG_CFG=w64r6 timeout 40 $G run $w $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace_r6.log" 2>&1
echo "== traced per op (graph) GR_LIN_WG_CFG=w64r6 rc $?"; .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep_r6.log" 2>&1; rm -f "$W/t.jsonl"
sed -n "/workload ops/,/^\$/p" "$W/rep_r6.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
# for the per-layer choice: every layer's time on each kernel family (traced, attribution only)
for xi in simt tc; do
  timeout 40 $G run $w --set B=2048 --variant fused_tf32x3 --set x3_impl=$xi --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace_$xi.log" 2>&1
  echo "== traced per op (graph) x3_impl=$xi rc $?"; .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep_$xi.log" 2>&1; rm -f "$W/t.jsonl"
  sed -n "/workload ops/,/^\$/p" "$W/rep_$xi.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
done
# stall reasons of the register-A kernel on bot.1 (the first linear_wgr launch)
N="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --print-details all"
GR_LIN_WG_REGA=1 timeout 120 $N -k regex:linear_wgr -c 1 $G run $w $X3 --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu_w64r.txt" 2>&1
echo "== ncu rc $?"; grep -E "Duration|Issue Slots Busy|Eligible Warps|No Eligible|Warp Cycles Per Issued|Stall|Shared" "$W/ncu_w64r.txt" | head -30
timeout 270 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/gpu_dlrm_kernels.log" | head -8; grep -B2 -A10 "FAILED" "$W/gpu_dlrm_kernels.log" | head -30
tar -C "$OUT" -czf "$OUT/results.tgz" work
