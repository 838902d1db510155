#!/usr/bin/env bash
# Run 70 (device, session 10): after the bulk kernel's producer loads its x halves in one loop
# (89ba3d0, no change of behaviour intended): the wg register-A test (w64b and w64b2 over the
# shape cross) and the B = 2048 fused_tf32x3 --pdl step, verified.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
l="$W/x3--pdl.log"
timeout 40 $G run workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
echo "== B=2048 fused_tf32x3 --pdl rc $?"; sed -n '/^timing per step/,/^  (saved/p' "$l" | grep -vE "^timing|saved|programmatic|variant"; grep -E " (bot|R|y) .*graph vs ref|FAIL|rror" "$l" | head -4
l="$W/wg_registerA.log"
timeout 150 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels --test "register-A" > "$l" 2>&1; echo "== gpu_dlrm_kernels register-A rc $?"
grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|SKIPPED" "$l" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" work
