#!/usr/bin/env bash
# Run 15 (device): decode_step with the GEMV kernels' pre-wait shared-memory steps (GR_DEC_PRE),
# A/B against GR_DEC_PRE_STEPS=0 (the kernels as before); the GPU suites it touches.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun; w=workloads/decode_step.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { grep -A12 "^timing per step" "$1" | grep -E "^  (fused|gemv|unfused)"; grep -E "FAIL|not verified|rror" "$1" | head -3; }
s() { grep -E "^ +(tests|asserts) |FAILED|failed" "$1" | head -${2:-12}; }
timeout 420 build/tests/gr_tests --suite gpu_decode > "$W/gpu_decode.log" 2>&1; echo "== gpu_decode rc $?"; s "$W/gpu_decode.log"
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
for pre in 0 6 0 6; do
  for pdl in "" "--pdl"; do
    tag="pre${pre}${pdl:+_pdl}"
    GR_DEC_PRE_STEPS=$pre timeout 120 $G run $w --variant fused --iters 200 --batches 30 $pdl --quiet > "$W/bf16_$tag.log" 2>&1
    echo "== bf16 default $tag rc $?"; t "$W/bf16_$tag.log"
    GR_DEC_PRE_STEPS=$pre timeout 120 $G run $w --variant fused $FP --iters 500 --batches 30 $pdl --quiet > "$W/fp32B4_$tag.log" 2>&1
    echo "== fp32 B4 $tag rc $?"; t "$W/fp32B4_$tag.log"
  done
done
for pre in 0 6; do
  GR_DEC_PRE_STEPS=$pre timeout 90 $G run $w --variant gemv_only --iters 400 --batches 30 --pdl --quiet > "$W/gemv_only_pre${pre}_pdl.log" 2>&1
  echo "== gemv_only pdl pre$pre rc $?"; t "$W/gemv_only_pre${pre}_pdl.log"; grep -A4 "HBM roofline" "$W/gemv_only_pre${pre}_pdl.log" | tail -1
done
timeout 100 $G run $w --variant fused --set B=4 --iters 200 --batches 20 --no-cpu-ref --pdl --quiet > "$W/bf16_B4_pdl.log" 2>&1; echo "== bf16 B4 pdl rc $?"; t "$W/bf16_B4_pdl.log"
timeout 100 $G run $w --variant fused --set B=8 --iters 200 --batches 20 --no-cpu-ref --pdl --quiet > "$W/bf16_B8_pdl.log" 2>&1; echo "== bf16 B8 pdl rc $?"; t "$W/bf16_B8_pdl.log"
timeout 200 build/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"; s "$W/gpu_dlrm_kernels.log"
timeout 300 build/tests/gr_tests --suite gpu_dlrm > "$W/gpu_dlrm.log" 2>&1; echo "== gpu_dlrm rc $?"; s "$W/gpu_dlrm.log"
tar -C "$OUT" -czf "$OUT/results.tgz" work
