#!/usr/bin/env bash
# Run 28 (device): every GPU suite on the final code of this session (launch.cuh changed: every
# kernel launch now goes through gr_launch_cluster), within one time budget: each suite gets at
# most what is left of BUDGET seconds; a suite that does not fit is reported as not run.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W/capcheck_fixtures"
BUDGET=${BUDGET:-430}
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
for su in gpu_dlrm_kernels gpu_dlrm gpu_decode gpu_kernels gpu_workloads gpu_gemm gpu_launch_modes \
          gpu_capcheck gpu_service gpu_timeline gpu_tp gpu_cupti; do
  left=$(( BUDGET - ($(date +%s) - T0) ))
  if [ $left -lt 20 ]; then echo "== $su not run: ${left}s of the budget left"; continue; fi
  t0=$(date +%s)
  GR_CAPCHECK_FIXTURES="$W/capcheck_fixtures" timeout $left build/tests/gr_tests --suite $su > "$W/$su.log" 2>&1
  rc=$?
  echo "== $su rc $rc in $(( $(date +%s) - t0 )) s: $(grep -E '^ +tests ' "$W/$su.log" | tr -s ' ')"
  [ $rc -ne 0 ] && grep -B2 -A10 "FAILED" "$W/$su.log" | head -30
  grep "^  Test: " "$W/$su.log" > "$W/$su.summary.txt"
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
