#!/usr/bin/env bash
# Run 20 (device): decode_step after the staging change (gate_up stages x * w_norm with 4 chunks
# of x and w_norm in flight per thread, down act with 8): fp32 L8 d1024 f4096 B4 and the default
# bf16 size, with and without --pdl (compare runs 16-18), fused_persistent fp32 B4; gpu_decode.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun; w=workloads/decode_step.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { grep -A12 "^timing per step" "$1" | grep -E "^  (fused|gemv|unfused)" | head -1; grep -E "FAIL|not verified|rror" "$1" | head -3; }
s() { grep -E "^ +(tests|asserts) |FAILED|failed" "$1" | head -${2:-12}; }
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
for rep in 1 2; do
  for pdl in "--pdl" ""; do
    tag="${pdl:+pdl_}r$rep"
    timeout 90 $G run $w --variant fused $FP --iters 500 --batches 30 $pdl --quiet > "$W/fp32B4_$tag.log" 2>&1
    echo "== fp32B4 $tag rc $? $(t "$W/fp32B4_$tag.log")"
    timeout 90 $G run $w --variant fused --iters 200 --batches 30 $pdl --quiet > "$W/bf16_$tag.log" 2>&1
    echo "== bf16 $tag rc $? $(t "$W/bf16_$tag.log")"
  done
done
timeout 90 $G run $w --variant fused_persistent $FP --iters 500 --batches 30 --quiet > "$W/fp32B4_persistent.log" 2>&1
echo "== fp32B4 persistent rc $? $(t "$W/fp32B4_persistent.log")"
timeout 200 build/tests/gr_tests --suite gpu_decode > "$W/gpu_decode.log" 2>&1; echo "== gpu_decode rc $?"; s "$W/gpu_decode.log"
tar -C "$OUT" -czf "$OUT/results.tgz" work
