#!/usr/bin/env bash
# Run 36 (device): dlrm_small with mlp_interaction (bot.2 + bot.3 + gather + interaction in one
# kernel; fused, fused_tf32, fused_tf32x3 go from 8 to 6 kernels): GPU suites, B = 2048 and 128
# tables, a traced per-op run of fused_tf32x3 at B = 2048, and the rows-per-block override.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
for su in gpu_dlrm_kernels gpu_dlrm; do
  timeout 150 .gpu/gr_tests --suite $su > "$W/$su.log" 2>&1; echo "== $su rc $?"
  grep -E "^ +(tests|asserts) |FAILED" "$W/$su.log" | head -8; grep -B2 -A8 "FAILED" "$W/$su.log" | head -24
done
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified" "$1" | head -4; }
timeout 90 $G run $w --set B=2048 --iters 2000 --batches 30 --quiet > "$W/b2048.log" 2>&1; echo "== B=2048 rc $?"; tab "$W/b2048.log"
timeout 60 $G run $w --set B=128 --iters 5000 --batches 30 --quiet > "$W/b128.log" 2>&1; echo "== B=128 rc $?"; tab "$W/b128.log"
timeout 60 $G run $w --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 10 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace.log" 2>&1
echo "== trace rc $?"; .gpu/cupti-launchstat report "$W/t.jsonl" > "$W/rep.log" 2>&1; sed -n "/workload ops/,/^\$/p" "$W/rep.log" | head -14
for rb in 8 16; do GR_MI_RB=$rb timeout 40 $G run $w --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/rb$rb.log" 2>&1; echo "B=2048 RB=$rb rc $?: $(grep -E '^  fused_tf32x3 ' "$W/rb$rb.log" | head -1 | tr -s ' ')"; done
for rb in 1 2 4; do GR_MI_RB=$rb timeout 40 $G run $w --set B=128 --variant fused --iters 5000 --batches 20 --quiet --no-bandwidth > "$W/rb128_$rb.log" 2>&1; echo "B=128 RB=$rb rc $?: $(grep -E '^  fused ' "$W/rb128_$rb.log" | head -1 | tr -s ' ')"; done
tar -C "$OUT" -czf "$OUT/results.tgz" work
