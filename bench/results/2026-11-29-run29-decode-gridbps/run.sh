#!/usr/bin/env bash
# Run 29 (device): decode_step's per-layer GEMV kernels with a grid of one block per SM
# (GR_DEC_GRID_BPS=1) while their registers still allow two: with --pdl the next kernel's
# blocks can then sit beside the previous kernel's (with two blocks per SM the register file is
# full and they wait for both to leave). A/B in one process each, same machine.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
F="workloads/decode_step.json --variant fused --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4 --iters 2000 --batches 20 --pdl --quiet"
D="workloads/decode_step.json --variant fused --iters 1000 --batches 20 --pdl --quiet"
n=0
for c in fp32b4:2 fp32b4:1 bf16:2 bf16:1 fp32b4:2 fp32b4:1; do
  w=${c%:*}; bps=${c#*:}; n=$((n + 1))
  [ $w = fp32b4 ] && A="$F" || A="$D"
  env $( [ $bps = 1 ] && echo GR_DEC_GRID_BPS=1 ) timeout 60 $G run $A > "$W/${n}_${w}_bps$bps.log" 2>&1
  echo "== $w grid bps $bps rc $?: $(grep -E '^  fused +[0-9]+ +[0-9.]+ \[' "$W/${n}_${w}_bps$bps.log")"
  grep -E "FAIL|bad|not verified" "$W/${n}_${w}_bps$bps.log" | head -3
done
grep -E "floor|fused " "$W/1_fp32b4_bps2.log" | head -4
tar -C "$OUT" -czf "$OUT/results.tgz" work
