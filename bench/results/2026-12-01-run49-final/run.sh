#!/usr/bin/env bash
# Run 49 (device, session 7's last): the final build's GPU suites for the code this session
# touched: gpu_dlrm_kernels (every wg configuration, the register-A cross) and gpu_decode
# (decode.h's shared host/device macro changed name).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
for s in gpu_decode gpu_dlrm_kernels; do
  timeout 250 .gpu/b/tests/gr_tests --suite $s > "$W/$s.log" 2>&1; echo "== $s rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/$s.log" | head -8; grep -E "failed|FAILED" "$W/$s.log" | head -20
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
