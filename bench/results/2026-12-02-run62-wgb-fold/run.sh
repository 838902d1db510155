#!/usr/bin/env bash
# Run 62 (device, session 10): the bulk wg form (w64b) with row folds, so layers with K % 4 != 0
# (top.0, K = 367: rows folded in fours into 16-byte map rows) can run on it. The B = 2048 step
# with top.0 on w128 (the check's choice) against w64b (GR_LIN_WG_CFG=w64b: every wg layer on
# it), interleaved, both verified; per op traced for both; then the wg GPU tests (the register-A
# forms incl. w64b over the whole shape cross, every configuration forced on 9 shapes).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
A="workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for cfg in auto w64b auto w64b; do
  l="$W/x3--pdl-$cfg.log"
  if [ $cfg = auto ]; then e=""; else e="GR_LIN_WG_CFG=$cfg"; fi
  env $e timeout 40 $G run $A --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl $cfg rc $?"; tab "$l"; grep -E " (bot|R|y) .*graph vs ref" "$l" | head -3
done
for cfg in auto w64b; do
  if [ $cfg = auto ]; then e=""; else e="GR_LIN_WG_CFG=$cfg"; fi
  env $e timeout 40 $G run $A --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace-$cfg.log" 2>&1
  timeout 30 .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep-$cfg.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== per op (graph, traced) $cfg"; sed -n "/workload ops/,/^\$/p" "$W/rep-$cfg.log" | sed -n '14,24p' | awk 'NF>5 {print "   ", $2, $6}'
done
run_suite() { # suite, log name, [test filter]
  l="$W/$2.log"
  if [ $# -gt 2 ]; then timeout 200 .gpu/b/tests/gr_tests --suite "$1" --test "$3" > "$l" 2>&1; else timeout 200 .gpu/b/tests/gr_tests --suite "$1" > "$l" 2>&1; fi
  echo "== $1 ${3:-} rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|SKIPPED" "$l" | head -20
}
run_suite gpu_dlrm_kernels wg_registerA "register-A"
run_suite gpu_dlrm_kernels wg_every "every configuration"
tar -C "$OUT" -czf "$OUT/results.tgz" work
