#!/usr/bin/env bash
# Run 17 (device): decode_step with the one-carveout setup; where the per-layer kernels signal
# the next one and issue their first weight loads (GR_DEC_PDL_MODE 0 / 1 / 2), with --pdl, bf16
# default size and fp32 L8 d1024 f4096 B4, twice; gpu_decode suite.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun; w=workloads/decode_step.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { grep -A12 "^timing per step" "$1" | grep -E "^  (fused|gemv|unfused)" | head -1; grep -E "FAIL|not verified|rror" "$1" | head -3; }
s() { grep -E "^ +(tests|asserts) |FAILED|failed" "$1" | head -${2:-12}; }
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
for rep in 1 2; do
  for m in 0 1 2; do
    tag="mode${m}_r$rep"
    GR_DEC_PDL_MODE=$m timeout 120 $G run $w --variant fused --iters 200 --batches 30 --pdl --quiet > "$W/bf16_$tag.log" 2>&1
    echo "== bf16 pdl $tag rc $? $(t "$W/bf16_$tag.log")"
    GR_DEC_PDL_MODE=$m timeout 120 $G run $w --variant fused $FP --iters 500 --batches 30 --pdl --quiet > "$W/fp32B4_$tag.log" 2>&1
    echo "== fp32B4 pdl $tag rc $? $(t "$W/fp32B4_$tag.log")"
  done
done
timeout 100 $G run $w --variant gemv_only --iters 400 --batches 30 --pdl --quiet > "$W/gemv_only_pdl.log" 2>&1; echo "== gemv_only pdl rc $? $(t "$W/gemv_only_pdl.log")"
timeout 100 $G run $w --variant gemv_stream --iters 400 --batches 30 --pdl --quiet > "$W/gemv_stream_pdl.log" 2>&1; echo "== gemv_stream pdl rc $? $(t "$W/gemv_stream_pdl.log")"
timeout 300 build/tests/gr_tests --suite gpu_decode > "$W/gpu_decode.log" 2>&1; echo "== gpu_decode rc $?"; s "$W/gpu_decode.log"
tar -C "$OUT" -czf "$OUT/results.tgz" work
