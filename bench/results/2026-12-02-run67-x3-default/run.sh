#!/usr/bin/env bash
# Run 67 (device, session 10): with top.0 on the tall bulk form, is x3_impl=auto_wg faster than the
# default x3_impl=auto (tc / cuBLASLt) without --pdl too? fused_tf32x3 at B = 2048 and B = 128,
# auto and auto_wg, with and without --pdl, interleaved; and `fused --pdl` at B = 2048 twice
# (run 66 had its graph slower than eager, 95.69 against 80.72 us; run 54 the other way round).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
for B in 2048 128; do
  for pdl in "" "--pdl"; do
    for impl in auto auto_wg; do
      l="$W/x3-B$B-$impl$pdl.log"
      timeout 40 $G run workloads/dlrm_small.json --set B=$B --variant fused_tf32x3 --set x3_impl=$impl $pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
      echo "== B=$B fused_tf32x3 x3_impl=$impl $pdl rc $?"; tab "$l"
    done
  done
done
for i in 1 2; do
  l="$W/fused-B2048--pdl-$i.log"
  timeout 40 $G run workloads/dlrm_small.json --set B=2048 --variant fused --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== B=2048 fused --pdl ($i) rc $?"; tab "$l"
done
l="$W/fused-B2048.log"
timeout 40 $G run workloads/dlrm_small.json --set B=2048 --variant fused --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
echo "== B=2048 fused rc $?"; tab "$l"
tar -C "$OUT" -czf "$OUT/results.tgz" work
