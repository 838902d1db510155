#!/usr/bin/env bash
# Run 53 (device, session 8): the committed defaults after runs 51-52 (bot.0 tiled, bot.3 SIMT,
# top.2 rowdot; the blocked interaction with the gather's loop), A/B in one run against the
# register gather (GR_IX_REG=1) and 2 rows per block (GR_IX_RB=2); per op; B = 2048 and 128
# variants; the GPU tests of the changed kernels and every dlrm_small variant.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for env in "" GR_IX_REG=1 GR_IX_RB=2 ""; do
  l="$W/x3_${env:-default}.log"
  env $env timeout 40 $G run $w $X3 --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl ${env:-default} rc $?"; tab "$l"; grep -E " y .*graph vs ref" "$l" | head -1
done
timeout 40 $G run $w $X3 --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3_nopdl.log" 2>&1
echo "== B=2048 fused_tf32x3 auto_wg (no PDL) rc $?"; tab "$W/x3_nopdl.log"
for env in "" GR_IX_REG=1; do
  env $env timeout 40 $G run $w $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace_${env:-default}.log" 2>&1
  .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep_${env:-default}.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== per op (graph) ${env:-default}"; sed -n "/workload ops/,/^\$/p" "$W/rep_${env:-default}.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
done
for v in fused fused_tf32; do
  timeout 40 $G run $w --set B=2048 --variant $v --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/b2048_$v.log" 2>&1
  echo "== B=2048 $v --pdl rc $?"; tab "$W/b2048_$v.log"
done
timeout 60 $G run $w --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/b128.log" 2>&1
echo "== B=128 all variants rc $?"; tab "$W/b128.log"
for s in "gpu_dlrm_kernels --test smallk" "gpu_dlrm_kernels --test interaction" gpu_dlrm; do
  l="$W/$(echo $s | tr ' ' '_').log"
  timeout 200 .gpu/b/tests/gr_tests --suite $s > "$l" 2>&1; echo "== $s rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$l" | head -8; grep -E "failed|FAILED" "$l" | head -20
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
