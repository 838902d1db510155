#!/usr/bin/env bash
# Run 37 (device): the wgmma 3xTF32 Linear kernel (impl wg; fused_tf32x3's auto puts bot.1, top.0
# and top.1 on it at B = 2048): a smoke run first (layout verdict), the dlrm GPU suites, the
# B = 2048 and 128 tables, a traced per-op run, and the 64 x 128 tile forced on the N = 256 layers.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --iters 500 --batches 10 --quiet > "$W/smoke.log" 2>&1
echo "== smoke rc $?"; grep -E "vs ref|FAIL|rror" "$W/smoke.log" | head -8; tab "$W/smoke.log"
for su in gpu_dlrm_kernels gpu_dlrm; do
  timeout 240 build/tests/gr_tests --suite $su > "$W/$su.log" 2>&1; echo "== $su rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/$su.log" | head -8; grep -B2 -A10 "FAILED" "$W/$su.log" | head -40
done
timeout 90 $G run $w --set B=2048 --iters 2000 --batches 30 --quiet > "$W/b2048.log" 2>&1; echo "== B=2048 rc $?"; tab "$W/b2048.log"
timeout 60 $G run $w --set B=128 --iters 5000 --batches 30 --quiet > "$W/b128.log" 2>&1; echo "== B=128 rc $?"; tab "$W/b128.log"
timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace.log" 2>&1
echo "== trace rc $?"; build/cupti-launchstat report "$W/t.jsonl" > "$W/rep.log" 2>&1; sed -n "/workload ops/,/^\$/p" "$W/rep.log" | head -14
for v in "x3_impl=tc" "x3_impl=auto"; do
  timeout 40 $G run $w --set B=2048 --set $v --variant fused_tf32x3 --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/$v.log" 2>&1
  echo "B=2048 fused_tf32x3 $v rc $?: $(grep -E '^  fused_tf32x3 ' "$W/$v.log" | head -1 | tr -s ' ')"
done
GR_LIN_WG_CFG=w128 timeout 40 $G run $w --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/w128.log" 2>&1
echo "B=2048 fused_tf32x3 all 64x128 rc $?: $(grep -E '^  fused_tf32x3 ' "$W/w128.log" | head -1 | tr -s ' ')"
timeout 40 $G run $w --set B=2048 --variant fused_tf32x3 --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/pdl.log" 2>&1
echo "B=2048 fused_tf32x3 --pdl rc $?: $(grep -E '^  fused_tf32x3 ' "$W/pdl.log" | head -1 | tr -s ' ')"
tar -C "$OUT" -czf "$OUT/results.tgz" work
