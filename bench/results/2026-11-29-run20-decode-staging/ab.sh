#!/usr/bin/env bash
# Run 20, part 2: the same binary before (build/graphrun-old, commit 6b9ebe3's decode_gemv.cu) and
# after the staging change (build/graphrun), alternated on one machine, --pdl.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"; w=workloads/decode_step.json
t() { grep -A12 "^timing per step" "$1" | grep -E "^  fused" | head -1; grep -E "FAIL|not verified|rror" "$1" | head -3; }
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
for rep in 1 2; do
  for b in old new; do
    G=build/graphrun; [ $b = old ] && G=build/graphrun-old
    timeout 60 $G run $w --variant fused --iters 200 --batches 30 --pdl --quiet > "$W/ab_bf16_${b}_r$rep.log" 2>&1
    echo "== bf16 pdl $b r$rep $(t "$W/ab_bf16_${b}_r$rep.log")"
    timeout 60 $G run $w --variant fused $FP --iters 500 --batches 30 --pdl --quiet > "$W/ab_fp32B4_${b}_r$rep.log" 2>&1
    echo "== fp32B4 pdl $b r$rep $(t "$W/ab_fp32B4_${b}_r$rep.log")"
  done
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
