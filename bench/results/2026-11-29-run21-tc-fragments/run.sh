#!/usr/bin/env bash
# Run 21 (device): check the session-3 refactors on the GPU (gpu_decode, gpu_dlrm_kernels,
# gpu_dlrm) and time the tc linear kernel after the fragment/issue-order change (16-byte
# fragment reads, k permuted alike in A and B; MMAs pass by pass, separate accumulators).
# Run from the repository root with a carried build/ (graphrun, tests, cupti-launchstat).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { sed -n '/^timing per step/,/saved us\/krn/p' "$1"; grep -E "graph vs ref.*(FAIL|bad)|not verified|error" "$1" | head -5; }
s() { grep -E "^ +(tests|asserts) |FAILED|failed:|rel L2|SKIPPED" "$1" | head -${2:-12}; }
for su in gpu_dlrm_kernels gpu_decode; do
  timeout 200 build/tests/gr_tests --suite $su > "$W/$su.log" 2>&1; echo "== $su rc $?"; s "$W/$su.log" 20
done
B="--set B=2048 --iters 2000 --batches 40 --quiet"
timeout 150 $G run workloads/dlrm_small.json $B > "$W/b2048.log" 2>&1; echo "== b2048 rc $?"
t "$W/b2048.log"
timeout 90 $G run workloads/dlrm_small.json --variant fused_tf32x3 --set linear_impl=tc $B > "$W/b2048_x3_alltc.log" 2>&1; echo "== x3 all tc rc $?"
t "$W/b2048_x3_alltc.log"
timeout 90 $G run workloads/dlrm_small.json --variant fused_tf32 --set linear_impl=tc $B > "$W/b2048_tf32_alltc.log" 2>&1; echo "== tf32 all tc rc $?"
t "$W/b2048_tf32_alltc.log"
for v in "fused_tf32x3 --set linear_impl=tc" "fused_tf32 --set linear_impl=tc"; do
  tag=$(echo "$v" | tr -c 'a-z0-9\n' '_' ); tag=${tag:0:30}
  timeout 90 $G run workloads/dlrm_small.json --variant $v --set B=2048 --iters 2000 --batches 20 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t_$tag.jsonl" --trace-iters 200 > "$W/run_$tag.log" 2>&1
  build/cupti-launchstat report "$W/t_$tag.jsonl" > "$W/rep_$tag.log" 2>&1
  echo "== traced $v"; grep -A12 "workload ops" "$W/rep_$tag.log" | tail -9
  rm -f "$W/t_$tag.jsonl"
done
timeout 200 build/tests/gr_tests --suite gpu_dlrm > "$W/gpu_dlrm.log" 2>&1; echo "== gpu_dlrm rc $?"; s "$W/gpu_dlrm.log" 30
tar -C "$OUT" -czf "$OUT/results.tgz" work
