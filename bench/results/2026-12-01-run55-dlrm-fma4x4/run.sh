#!/usr/bin/env bash
# Run 55 (device, session 8): the final build after the fma4x4 refactor (the SIMT Linear kernel's
# and the interaction's 4 x 4 step in one helper): their GPU tests and the B = 2048 step.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
for t in "simt, lt" interaction; do
  l="$W/gpu_dlrm_kernels_$(echo $t | tr -cd 'a-z').log"
  timeout 100 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels --test "$t" > "$l" 2>&1; echo "== gpu_dlrm_kernels --test '$t' rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$l" | head -8; grep -E "failed|FAILED" "$l" | head -20
done
timeout 40 $G run workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3--pdl.log" 2>&1
echo "== B=2048 fused_tf32x3 auto_wg --pdl rc $?"; sed -n '/^timing per step/,/^  (saved/p' "$W/x3--pdl.log" | grep -vE "^timing|saved"; grep -E " (bot|R|y) .*graph vs ref|FAIL" "$W/x3--pdl.log" | head -4
tar -C "$OUT" -czf "$OUT/results.tgz" work
