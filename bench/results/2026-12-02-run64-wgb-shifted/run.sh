#!/usr/bin/env bash
# Run 64 (device, session 10): the folded bulk form with 16-byte aligned, shifted boxes (36 floats
# wide, unswizzled, for row folds 2 and 4; run 63 found the TMA refuses unaligned box starts).
# One layer forced onto w64b (K = 512, 68, 130, 367); the B = 2048 step with top.0 on w128 (the
# check's choice) against every wg layer on w64b, interleaved, both verified; per op traced for
# both; the wg GPU tests (register-A forms incl. w64b over the shape cross, every configuration).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic"; grep -E "FAIL|not verified|rror|graph vs ref" "$1" | head -4; }
for s in "512 256" "68 256" "130 256" "367 512"; do
  set -- $s
  l="$W/layer-K$1.log"
  GR_LIN_WG_CFG=w64b timeout 40 $G run bench/linear_wg.json --set K=$1 --set N=$2 --iters 1000 --batches 10 --quiet --no-bandwidth --plan > "$l" 2>&1
  echo "== K=$1 N=$2 w64b rc $?"; grep -E "linear +linear_act" "$l" | head -1 | awk '{print "   ", $(NF-2), $(NF-1), $NF}'; tab "$l"
done
l="$W/layer-K367-w128.log"
timeout 40 $G run bench/linear_wg.json --iters 1000 --batches 10 --quiet --no-bandwidth --plan > "$l" 2>&1
echo "== K=367 N=512 check's choice rc $?"; grep -E "linear +linear_act" "$l" | head -1 | awk '{print "   ", $(NF-2), $(NF-1), $NF}'; tab "$l"
A="workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for cfg in auto w64b auto w64b; do
  l="$W/x3--pdl-$cfg.log"
  if [ $cfg = auto ]; then e=""; else e="GR_LIN_WG_CFG=$cfg"; fi
  env $e timeout 40 $G run $A --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl $cfg rc $?"; tab "$l"
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
