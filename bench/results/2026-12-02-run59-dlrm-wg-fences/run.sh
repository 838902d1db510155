#!/usr/bin/env bash
# Run 59 (device, session 9): the bulk form (w64b) with __syncwarp after the MMA warps' mbarrier
# spins and fence.proxy.async before the slot hand-back (runs 57-58 gave wrong results in the
# K = 512 shapes, where the ring wraps). The register-A test, the B = 2048 step verified 4 times
# per setting, and its timing.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
A="workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for i in 1 2 3 4; do
  GR_LIN_WG_BULK=1 timeout 30 $G run $A --iters 50 --batches 2 --quiet --no-bandwidth > "$W/verify$i.log" 2>&1
  echo "== verify $i rc $?"; grep -E "FAIL|rror" "$W/verify$i.log" | head -3
done
for bulk in 0 1; do
  l="$W/x3--pdl-bulk$bulk.log"
  GR_LIN_WG_BULK=$bulk timeout 40 $G run $A --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl GR_LIN_WG_BULK=$bulk rc $?"; sed -n '/^timing per step/,/^  (saved/p' "$l" | grep -vE "^timing|saved|programmatic"; grep -E " (bot|R|y) .*graph vs ref|FAIL|rror" "$l" | head -4
done
l="$W/gpu_dlrm_kernels_registerA.log"
timeout 150 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels --test "register-A" > "$l" 2>&1; echo "== gpu_dlrm_kernels --test register-A rc $?"
grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$l" | head -8; grep -E "failed|FAILED|rror" "$l" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" work
