#!/usr/bin/env bash
# Run 23 (device): the tc kernel with the cheaper 3xTF32 split (integer round + mask for big,
# small handed over untruncated) and shifted 16-byte copies for K % 4 != 0 (top.0, K = 367).
# GPU suites for the kernel and the workload, the dlrm B = 2048 table, per-op traced times.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { sed -n '/^timing per step/,/^  (saved/p' "$1"; grep -E "graph vs ref.*(FAIL|bad)|not verified|error" "$1" | head -5; }
s() { grep -E "^ +(tests|asserts) |FAILED|failed:|SKIPPED|tc tf32x3" "$1" | head -${2:-14}; }
timeout 200 build/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"; s "$W/gpu_dlrm_kernels.log" 30
R="workloads/dlrm_small.json --set B=2048"
timeout 150 $G run $R --iters 2000 --batches 40 --quiet > "$W/b2048.log" 2>&1; echo "== b2048 rc $?"; t "$W/b2048.log"
grep -E "fused_tf32x3 .*vs ref" "$W/b2048.log" | head -4
for v in fused_tf32x3 "fused_tf32x3 --set x3_impl=tc"; do
  tag=$(echo "$v" | tr -c 'a-z0-9\n' '_'); tag=${tag:0:30}
  timeout 90 $G run $R --variant $v --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trun_$tag.log" 2>&1
  build/cupti-launchstat report "$W/t.jsonl" > "$W/rep_$tag.log" 2>&1; rm -f "$W/t.jsonl"
  echo "== traced $v"; grep -A12 "workload ops" "$W/rep_$tag.log" | tail -9
done
timeout 90 $G run $R --variant fused_tf32x3 --set x3_impl=tc --iters 2000 --batches 30 --quiet > "$W/x3_alltc.log" 2>&1
echo "== untraced fused_tf32x3 x3_impl=tc rc $?"; t "$W/x3_alltc.log" | grep -E "variant|fused"
timeout 240 build/tests/gr_tests --suite gpu_dlrm > "$W/gpu_dlrm.log" 2>&1; echo "== gpu_dlrm rc $?"; grep -E "^ +(tests|asserts) |FAILED|B=2048 fused_tf32x3|B=2048 tiled fused_tf32x3" "$W/gpu_dlrm.log" | head
tar -C "$OUT" -czf "$OUT/results.tgz" work
