#!/usr/bin/env bash
# Run 16 (device): decode_step, the shared-memory carveout of the step's kernels (GR_DEC_CARVEOUT:
# -1 = the driver's choice, 100 = max shared for all) x the pre-wait shared-memory steps
# (GR_DEC_PRE_STEPS 0 / 6), with and without --pdl; bf16 default size and fp32 L8 d1024 f4096 B4.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun; w=workloads/decode_step.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { grep -A12 "^timing per step" "$1" | grep -E "^  (fused|gemv|unfused)" | head -1; grep -E "FAIL|not verified|rror" "$1" | head -3; }
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
for rep in 1 2; do
for co in -1 100; do
  for pre in 0 6; do
    for pdl in "--pdl" ""; do
      [ "$pdl" = "" ] && [ "$pre" = 6 ] && continue
      tag="co${co}_pre${pre}${pdl:+_pdl}_r$rep"
      GR_DEC_CARVEOUT=$co GR_DEC_PRE_STEPS=$pre timeout 120 $G run $w --variant fused --iters 200 --batches 30 $pdl --quiet > "$W/bf16_$tag.log" 2>&1
      echo "== bf16 $tag rc $? $(t "$W/bf16_$tag.log")"
      GR_DEC_CARVEOUT=$co GR_DEC_PRE_STEPS=$pre timeout 120 $G run $w --variant fused $FP --iters 500 --batches 30 $pdl --quiet > "$W/fp32B4_$tag.log" 2>&1
      echo "== fp32B4 $tag rc $? $(t "$W/fp32B4_$tag.log")"
    done
  done
done
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
