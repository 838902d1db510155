#!/usr/bin/env bash
# Run 76 (device, session 11): the final build (fused_splitk as in c37906d: one block per slice,
# a separate down pipeline of 8 single-row steps). gpu_decode; then fp32 L8 d1024 B4 with f = 4096
# (the size) and f = 4000 (W_down rows not a power of two apart: a probe of whether the
# split-K down pass's slow streaming is a row-stride effect), fused --pdl and fused_splitk --pdl on
# the same machine; the default bf16 size, both.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror|trap" "$1" | head -4; }
l="$W/gpu_decode.log"
timeout 300 .gpu/b/tests/gr_tests --suite gpu_decode > "$l" 2>&1
echo "== gpu_decode rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|rel |nodes" "$l" | head -30
for f in 4096 4000; do
  for v in fused fused_splitk; do
    l="$W/fp32b4-f$f-$v.log"
    timeout 60 $G run workloads/decode_step.json --set dtype=fp32 --set L=8 --set d=1024 --set f=$f --set B=4 --variant $v --pdl --iters 2000 --batches 20 --quiet > "$l" 2>&1
    echo "== fp32 B4 f=$f $v --pdl rc $?"; tab "$l"; grep -E "graph vs ref|floor" "$l" | head -3
  done
done
for v in fused fused_splitk; do
  l="$W/bf16-$v.log"
  timeout 90 $G run workloads/decode_step.json --variant $v --pdl --iters 1000 --batches 10 --quiet --no-bandwidth > "$l" 2>&1
  echo "== bf16 default $v --pdl rc $?"; tab "$l"
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
