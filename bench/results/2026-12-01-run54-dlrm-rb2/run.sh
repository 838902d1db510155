#!/usr/bin/env bash
# Run 54 (device, session 8's last): the final defaults (2 interaction rows per block at B =
# 2048, after run 53's A/B): dlrm_small timing and per op, and the GPU tests of the changed
# kernels and of every dlrm_small variant.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for p in --pdl ""; do
  timeout 40 $G run $w $X3 $p --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3$p.log" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg $p rc $?"; tab "$W/x3$p.log"; grep -E " (bot|R|y) .*graph vs ref" "$W/x3$p.log" | head -3
done
timeout 40 $G run $w $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace.log" 2>&1
.gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep.log" 2>&1; rm -f "$W/t.jsonl"
echo "== per op (graph)"; sed -n "/workload ops/,/^\$/p" "$W/rep.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
for v in fused fused_tf32 fused_2stream; do
  timeout 40 $G run $w --set B=2048 --variant $v --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/b2048_$v.log" 2>&1
  echo "== B=2048 $v --pdl rc $?"; tab "$W/b2048_$v.log"
done
timeout 40 $G run $w --variant fused --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/b128.log" 2>&1
echo "== B=128 fused rc $?"; tab "$W/b128.log"
for s in "gpu_dlrm_kernels --test interaction" gpu_dlrm; do
  l="$W/$(echo $s | tr ' ' '_').log"
  timeout 200 .gpu/b/tests/gr_tests --suite $s > "$l" 2>&1; echo "== $s rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$l" | head -8; grep -E "failed|FAILED" "$l" | head -20
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
