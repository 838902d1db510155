#!/usr/bin/env bash
# Run 42 (device): dlrm_small with the wg kernel as fused_tf32x3's default at B = 2048 (bot.1 and
# top.1 64 x 64 with 4 raw stages, top.0 64 x 128 with 3): the 6-stage 64 x 64 configuration
# forced (per-op, traced), the B = 2048 tables with and without PDL, B = 128, Nsight Compute
# source counters on bot.1's kernel, and the dlrm GPU suites.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
ops() { .gpu/b/cupti-launchstat report "$1" > "$2" 2>&1; sed -n "/workload ops/,/^\$/p" "$2" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'; }
for c in default w64s6; do
  e=""; [ $c != default ] && e="GR_LIN_WG_CFG=$c"
  env $e timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t_$c.jsonl" --trace-iters 200 > "$W/trace_$c.log" 2>&1
  echo "== traced per op (graph), $c rc $?"; ops "$W/t_$c.jsonl" "$W/rep_$c.log"; rm -f "$W/t_$c.jsonl"
done
timeout 90 $G run $w --set B=2048 --iters 2000 --batches 30 --quiet > "$W/b2048.log" 2>&1; echo "== B=2048 rc $?"; tab "$W/b2048.log"
timeout 90 $G run $w --set B=2048 --pdl --iters 2000 --batches 30 --quiet --no-bandwidth > "$W/b2048_pdl.log" 2>&1; echo "== B=2048 --pdl rc $?"; tab "$W/b2048_pdl.log"
timeout 60 $G run $w --set B=128 --iters 5000 --batches 30 --quiet > "$W/b128.log" 2>&1; echo "== B=128 rc $?"; tab "$W/b128.log"
N="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SourceCounters --print-details all"
timeout 120 $N -k regex:linear_wg -c 2 $G run $w --set B=2048 --variant fused_tf32x3 --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu.txt" 2>&1
echo "== ncu rc $?"; grep -E "Duration|Issue Slots Busy|Executed Instructions  |Warp Cycles Per Issued" "$W/ncu.txt" | head -12
for su in gpu_dlrm_kernels gpu_dlrm; do
  timeout 200 .gpu/b/tests/gr_tests --suite $su > "$W/$su.log" 2>&1; echo "== $su rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/$su.log" | head -8; grep -B2 -A10 "FAILED" "$W/$su.log" | head -40
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
