#!/usr/bin/env bash
# Run 18 (device): dlrm_small fused with one shared-memory carveout for the fused-path kernels
# (GR_DLRM_CARVEOUT unset = driver, 100) at B = 128 and 2048, with and without --pdl, twice;
# decode_step fp32 B4 breakdown (gemv_only, gemv_stream, fused_persistent with --pdl); the GPU
# suites of both workloads on the final code.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=build/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { grep -A12 "^timing per step" "$1" | grep -E "^  (fused|gemv|unfused)" | head -1; grep -E "FAIL|not verified|rror" "$1" | head -3; }
s() { grep -E "^ +(tests|asserts) |FAILED|failed" "$1" | head -${2:-12}; }
for rep in 1 2; do
  for co in unset 100; do
    for pdl in "" "--pdl"; do
      tag="co${co}${pdl:+_pdl}_r$rep"
      if [ $co = unset ]; then unset GR_DLRM_CARVEOUT; else export GR_DLRM_CARVEOUT=$co; fi
      timeout 60 $G run workloads/dlrm_small.json --variant fused --set B=128 --iters 2000 --batches 30 $pdl --quiet > "$W/b128_$tag.log" 2>&1
      echo "== dlrm B128 $tag rc $? $(t "$W/b128_$tag.log")"
      timeout 60 $G run workloads/dlrm_small.json --variant fused --set B=2048 --iters 1000 --batches 30 $pdl --quiet > "$W/b2048_$tag.log" 2>&1
      echo "== dlrm B2048 $tag rc $? $(t "$W/b2048_$tag.log")"
    done
  done
done
unset GR_DLRM_CARVEOUT
w=workloads/decode_step.json; FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
for v in fused gemv_only gemv_stream fused_persistent; do
  timeout 90 $G run $w --variant $v $FP --iters 500 --batches 30 --pdl --quiet > "$W/fp32B4_${v}_pdl.log" 2>&1
  echo "== fp32B4 $v pdl rc $? $(t "$W/fp32B4_${v}_pdl.log")"
done
timeout 150 build/tests/gr_tests --suite gpu_dlrm_kernels > "$W/gpu_dlrm_kernels.log" 2>&1; echo "== gpu_dlrm_kernels rc $?"; s "$W/gpu_dlrm_kernels.log"
timeout 200 build/tests/gr_tests --suite gpu_dlrm > "$W/gpu_dlrm.log" 2>&1; echo "== gpu_dlrm rc $?"; s "$W/gpu_dlrm.log"
timeout 150 build/tests/gr_tests --suite gpu_decode > "$W/gpu_decode.log" 2>&1; echo "== gpu_decode rc $?"; s "$W/gpu_decode.log"
tar -C "$OUT" -czf "$OUT/results.tgz" work
