#!/usr/bin/env bash
# Run 43 (device, the session's last): the wg kernel with its pieces worked out once per launch
# (per-op, B = 2048 fused_tf32x3 with and without PDL, gpu_dlrm_kernels), then decode_step:
# gpu_decode on this build (fused_stream's final form: no L2 prefetch, in-flight cap 2) and the
# fp32 L8 d1024 f4096 B4 and default bf16 tables.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
timeout 40 $G run $w --set B=2048 --variant fused_tf32x3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace.log" 2>&1
echo "== traced per op (graph) rc $?"; .gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep.log" 2>&1; rm -f "$W/t.jsonl"
sed -n "/workload ops/,/^\$/p" "$W/rep.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
for p in "" "--pdl"; do
  timeout 40 $G run $w --set B=2048 --variant fused_tf32x3 $p --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3$p.log" 2>&1
  echo "== B=2048 fused_tf32x3 $p rc $?"; tab "$W/x3$p.log"; grep -E "vs ref" "$W/x3$p.log" | head -3
done
timeout 150 .gpu/b/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"
grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/gpu_dlrm_kernels.log" | head -8; grep -B2 -A10 "FAILED" "$W/gpu_dlrm_kernels.log" | head -30
timeout 130 .gpu/b/tests/gr_tests --suite gpu_decode > "$W/gpu_decode.log" 2>&1; echo "== gpu_decode rc $?"
grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/gpu_decode.log" | head -8; grep -B2 -A10 "FAILED" "$W/gpu_decode.log" | head -30
d=workloads/decode_step.json
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
timeout 45 $G run $d $FP --iters 1000 --batches 20 --quiet > "$W/fp32.log" 2>&1; echo "== decode fp32 B4 rc $?"; tab "$W/fp32.log"
for v in fused fused_stream; do
  timeout 25 $G run $d $FP --variant $v --pdl --iters 1000 --batches 20 --quiet --no-bandwidth > "$W/fp32_pdl_$v.log" 2>&1; echo "== decode fp32 B4 $v --pdl rc $?"; tab "$W/fp32_pdl_$v.log"
done
timeout 40 $G run $d --variant fused_stream --iters 500 --batches 20 --quiet > "$W/bf16_stream.log" 2>&1; echo "== decode bf16 fused_stream rc $?"; tab "$W/bf16_stream.log"
timeout 40 $G run $d --variant fused --pdl --iters 500 --batches 20 --quiet --no-bandwidth > "$W/bf16_pdl.log" 2>&1; echo "== decode bf16 fused --pdl rc $?"; tab "$W/bf16_pdl.log"
tar -C "$OUT" -czf "$OUT/results.tgz" work
