#!/usr/bin/env bash
# Run 69 (device, session 10): the final build (the early-step experiment of run 68 reverted).
# decode_step `fused --pdl` at fp32 L8 d1024 f4096 B4 (twice) and the default bf16 size: today's
# baseline for run 68's q = 0 figures; dlrm_small B = 2048 fused_tf32x3 with the new default
# x3_impl (auto_wg), with and without --pdl; then gpu_dlrm (with its new x3_impl=auto case).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
F="workloads/decode_step.json --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set B=4 --variant fused --pdl"
for i in 1 2; do
  l="$W/fp32b4-$i.log"
  timeout 60 $G run $F --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== fp32 B4 fused --pdl ($i) rc $?"; tab "$l"
done
l="$W/bf16.log"
timeout 90 $G run workloads/decode_step.json --variant fused --pdl --iters 1000 --batches 10 --quiet --no-bandwidth > "$l" 2>&1
echo "== bf16 default fused --pdl rc $?"; tab "$l"
for pdl in "--pdl" ""; do
  l="$W/x3-default$pdl.log"
  timeout 40 $G run workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 $pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused_tf32x3 (default x3_impl) $pdl rc $?"; tab "$l"; grep -E " (bot|R|y) .*graph vs ref" "$l" | head -3
done
l="$W/gpu_dlrm.log"
timeout 200 .gpu/b/tests/gr_tests --suite gpu_dlrm > "$l" 2>&1
echo "== gpu_dlrm rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|SKIPPED" "$l" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" work
