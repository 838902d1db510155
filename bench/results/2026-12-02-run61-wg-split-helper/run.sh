#!/usr/bin/env bash
# Run 61 (device, session 9): after W's split-and-store loop of the register-A and bulk forms
# became one helper (wgr_split_w): the register-A test (w64r, w128r, w64r6, w64b over the whole
# shape cross, both maths, with and without PDL) and the B = 2048 step, verified and timed.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
l="$W/x3--pdl.log"
timeout 40 $G run workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
echo "== B=2048 fused_tf32x3 auto_wg --pdl rc $?"; sed -n '/^timing per step/,/^  (saved/p' "$l" | grep -vE "^timing|saved|programmatic"; grep -E " (bot|R|y) .*graph vs ref|FAIL|rror" "$l" | head -4
l="$W/wg_registerA.log"
timeout 150 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels --test "register-A" > "$l" 2>&1; echo "== gpu_dlrm_kernels register-A rc $?"
grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|SKIPPED" "$l" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" work
