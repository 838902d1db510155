#!/usr/bin/env bash
# Run 60 (device, session 9): the final build, with the bulk form (w64b) the check's default for
# 64-wide wg tiles with K % 4 == 0. The wg GPU tests (the register-A forms over the whole shape
# cross, every configuration forced), gpu_dlrm (every variant vs the reference at B in {1, 7, 128,
# 2048}, auto_wg and x3_impl=wg with and without PDL), gpu_decode (its stream kernel now takes
# the mbarrier helpers from kernels/mbarrier.cuh), then the B = 2048 step A/B and per op, and B = 128.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
A="workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for bulk in 1 0 1; do
  l="$W/x3--pdl-bulk$bulk.log"
  GR_LIN_WG_BULK=$bulk timeout 40 $G run $A --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl GR_LIN_WG_BULK=$bulk rc $?"; tab "$l"; grep -E " (bot|R|y) .*graph vs ref" "$l" | head -3
done
timeout 40 $G run $A --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3.log" 2>&1
echo "== B=2048 fused_tf32x3 auto_wg (no PDL) rc $?"; tab "$W/x3.log"
timeout 40 $G run $A --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace.log" 2>&1
timeout 30 .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep.log" 2>&1; rm -f "$W/t.jsonl"
echo "== per op (graph, traced)"; sed -n "/workload ops/,/^\$/p" "$W/rep.log" | sed -n '14,24p' | awk 'NF>5 {print "   ", $2, $6}'
timeout 40 $G run workloads/dlrm_small.json --variant fused --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/b128.log" 2>&1
echo "== B=128 fused rc $?"; tab "$W/b128.log"
run_suite() { # suite, log name, [test filter]
  l="$W/$2.log"
  if [ $# -gt 2 ]; then timeout 150 .gpu/b/tests/gr_tests --suite "$1" --test "$3" > "$l" 2>&1; else timeout 150 .gpu/b/tests/gr_tests --suite "$1" > "$l" 2>&1; fi
  echo "== $1 ${3:-} rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|SKIPPED" "$l" | head -20
}
run_suite gpu_dlrm_kernels wg_registerA "register-A"
run_suite gpu_dlrm_kernels wg_every "every configuration"
run_suite gpu_dlrm gpu_dlrm
run_suite gpu_decode gpu_decode
tar -C "$OUT" -czf "$OUT/results.tgz" work
