#!/usr/bin/env bash
# Run 65 (device, session 10): the tall bulk form w64b2 (128 x 64 tiles, the two MMA warpgroups
# on the two 64-row halves, every stage): one wave of 128 blocks for top.0 (2048 x 512 x 367),
# where w64b needed two (run 64: 24.54 us against w128's 22.88). The layer alone in w128, w64b2
# (and K = 512); the B = 2048 step with the check's new choice (top.0 on w64b2) against
# GR_LIN_WG_TALL=0 (top.0 on w128), interleaved, verified; per op traced for both; the wg GPU
# tests (register-A forms incl. w64b and w64b2 over the shape cross, every configuration).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic"; grep -E "FAIL|not verified|rror|graph vs ref" "$1" | head -4; }
for s in "367 w128" "367 w64b2" "512 w128" "512 w64b2"; do
  set -- $s
  l="$W/layer-K$1-$2.log"
  GR_LIN_WG_CFG=$2 timeout 40 $G run bench/linear_wg.json --set K=$1 --iters 1000 --batches 10 --quiet --no-bandwidth --plan > "$l" 2>&1
  echo "== 2048 x 512 x $1 $2 rc $?"; grep -E "linear +linear_act" "$l" | head -1 | awk '{print "   ", $(NF-4), $(NF-2), $(NF-1), $NF}'; tab "$l"
done
A="workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for tall in 1 0 1 0; do
  l="$W/x3--pdl-tall$tall.log"
  GR_LIN_WG_TALL=$tall timeout 40 $G run $A --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl GR_LIN_WG_TALL=$tall rc $?"; tab "$l"
done
for tall in 1 0; do
  GR_LIN_WG_TALL=$tall timeout 40 $G run $A --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace-tall$tall.log" 2>&1
  timeout 30 .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep-tall$tall.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== per op (graph, traced) GR_LIN_WG_TALL=$tall"; sed -n "/workload ops/,/^\$/p" "$W/rep-tall$tall.log" | sed -n '14,24p' | awk 'NF>5 {print "   ", $2, $6}'
done
run_suite() { # suite, log name, [test filter]
  l="$W/$2.log"
  if [ $# -gt 2 ]; then timeout 220 .gpu/b/tests/gr_tests --suite "$1" --test "$3" > "$l" 2>&1; else timeout 220 .gpu/b/tests/gr_tests --suite "$1" > "$l" 2>&1; fi
  echo "== $1 ${3:-} rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|SKIPPED" "$l" | head -20
}
run_suite gpu_dlrm_kernels wg_registerA "register-A"
run_suite gpu_dlrm_kernels wg_every "every configuration"
tar -C "$OUT" -czf "$OUT/results.tgz" work
