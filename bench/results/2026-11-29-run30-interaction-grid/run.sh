#!/usr/bin/env bash
# Run 30 (device): the interaction kernels with one block per batch row up to 16 per SM (was 8:
# at B = 2048 each block did two rows, the second gather not overlapped). gpu_dlrm_kernels
# (interaction tests incl. B = 2500, past the cap), the dlrm B = 2048 table, gpu_dlrm.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
timeout 100 build/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/gpu_dlrm_kernels.log" | head -12
timeout 60 $G run workloads/dlrm_small.json --set B=2048 --iters 2000 --batches 30 --quiet > "$W/b2048.log" 2>&1; echo "== b2048 rc $?"
sed -n '/^timing per step/,/^  (saved/p' "$W/b2048.log"; grep -E "FAIL|bad|not verified" "$W/b2048.log" | head -5
timeout 80 build/tests/gr_tests --suite gpu_dlrm > "$W/gpu_dlrm.log" 2>&1; echo "== gpu_dlrm rc $?"
grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/gpu_dlrm.log" | head -12
tar -C "$OUT" -czf "$OUT/results.tgz" work
