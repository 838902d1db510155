#!/usr/bin/env bash
# Run 68 (device, session 10): decode_step's GEMV kernels with early weight steps (GR_DEC_EARLY=q:
# steps P .. P + q - 1 of each lane's first task copied into shared memory before the PDL wait).
# Run 16 measured this slower, but before run 17 gave the chain one shared-memory carveout (which
# had kept the next kernel's blocks from starting). fp32 L8 d1024 f4096 B4 `fused --pdl`
# (target 150 us) for q = 0, 1, 2, 3, 4, 8 (the check caps q per kernel), interleaved with q = 0;
# the default bf16 step for q = 0, 4, 8; all verified; then gpu_decode with GR_DEC_EARLY=4.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
F="workloads/decode_step.json --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set B=4 --variant fused --pdl"
for q in 0 1 2 0 3 4 0 8; do
  l="$W/fp32b4-early$q.log"
  GR_DEC_EARLY=$q timeout 60 $G run $F --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== fp32 B4 fused --pdl GR_DEC_EARLY=$q rc $?"; tab "$l"
done
for q in 0 4 8 0; do
  l="$W/bf16-early$q.log"
  GR_DEC_EARLY=$q timeout 90 $G run workloads/decode_step.json --variant fused --pdl --iters 1000 --batches 10 --quiet --no-bandwidth > "$l" 2>&1
  echo "== bf16 default fused --pdl GR_DEC_EARLY=$q rc $?"; tab "$l"
done
l="$W/gpu_decode-early4.log"
GR_DEC_EARLY=4 timeout 200 .gpu/b/tests/gr_tests --suite gpu_decode > "$l" 2>&1
echo "== gpu_decode GR_DEC_EARLY=4 rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|SKIPPED" "$l" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" work
