#!/usr/bin/env bash
# Run 63 (device, session 10): why the folded bulk form (run 62) stopped on an illegal
# instruction. One layer (bench/linear_wg.json) forced onto w64b (GR_LIN_WG_CFG=w64b): K = 512
# (fold 1), 68 (fold 1, ragged last stage), 130 (fold 2), 367 (fold 4); the failing ones again
# under compute-sanitizer, and with a diagnostic build without the past-K zeroing (.gpu/b2,
# -DGR_WGB_DIAG_NOMASK: wrong results expected, it tells whether the zeroing or the folded boxes
# stop the kernel). Then the B = 2048 step with the fold-templated kernel (fold 1 is the run 60 code).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic"; grep -E "FAIL|not verified|rror|graph vs ref" "$1" | head -4; }
for s in "512 256" "68 256" "130 256" "367 512"; do
  set -- $s
  for b in b b2; do
    l="$W/layer-K$1-$b.log"
    GR_LIN_WG_CFG=w64b timeout 40 .gpu/$b/graphrun run bench/linear_wg.json --set K=$1 --set N=$2 --iters 200 --batches 5 --quiet --no-bandwidth --plan > "$l" 2>&1
    echo "== K=$1 N=$2 w64b build $b rc $?"; grep -E "linear +linear_act" "$l" | head -1 | awk '{print "   ", $(NF-2), $(NF-1), $NF}'; tab "$l"
  done
done
for K in 130 367; do
  GR_LIN_WG_CFG=w64b timeout 120 $CS --print-limit 3 .gpu/b/graphrun run bench/linear_wg.json --set K=$K --iters 3 --batches 1 --warmup 3 --quiet --no-bandwidth --no-cpu-ref > "$W/sanitizer-K$K.log" 2>&1
  echo "== compute-sanitizer K=$K rc $?"; grep -vE "^\s*$" "$W/sanitizer-K$K.log" | head -30
done
A="workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
l="$W/x3--pdl.log"
timeout 40 .gpu/b/graphrun run $A --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
echo "== B=2048 fused_tf32x3 auto_wg --pdl rc $?"; tab "$l"
tar -C "$OUT" -czf "$OUT/results.tgz" work
