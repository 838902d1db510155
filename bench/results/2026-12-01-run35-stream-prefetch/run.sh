#!/usr/bin/env bash
# Run 35 (device): decode_step_stream v3: the 2-byte fix (ldcg_elem) and the producer's L2
# prefetch ahead of the ring (GR_DEC_S_PREFETCH stages). Correctness at L = 2 in every dtype,
# sweeps of the prefetch distance and in-flight cap on both targets, stamps, gpu_decode.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
ln -sfn "$PWD" /tmp/snap
G=.gpu/graphrun
w=workloads/decode_step.json
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
row() { grep -E "^  fused_stream +1 " "$1" | awk '{print "eager", $3, "graph", $6, $7, $8}'; grep -E "FAIL|not verified|rror" "$1" | head -3; }
for dt in bf16 fp16 fp32; do
  timeout 30 $G run $w --variant fused_stream --set d=256 --set f=512 --set L=3 --set B=3 --set dtype=$dt --iters 20 --no-bandwidth --quiet > "$W/s_$dt.log" 2>&1
  echo "$dt L=3 B=3 rc $?: $(grep -E 'vs ref' "$W/s_$dt.log" | head -1 | tr -s ' ')"
done
for cfg in "4 0" "4 4" "4 8" "4 16" "4 32" "2 8" "2 16" "8 16"; do set -- $cfg
  GR_DEC_S_INFLIGHT=$1 GR_DEC_S_PREFETCH=$2 timeout 60 $G run $w --variant fused_stream $FP --iters 2000 --batches 20 --quiet > "$W/fp32_$1_$2.log" 2>&1
  echo "fp32 B4 inflight $1 prefetch $2 rc $?: $(row "$W/fp32_$1_$2.log")"
done
for cfg in "4 0" "4 8" "4 16" "4 32"; do set -- $cfg
  GR_DEC_S_INFLIGHT=$1 GR_DEC_S_PREFETCH=$2 timeout 60 $G run $w --variant fused_stream --iters 1000 --batches 20 --quiet > "$W/bf16_$1_$2.log" 2>&1
  echo "bf16 default inflight $1 prefetch $2 rc $?: $(row "$W/bf16_$1_$2.log")"
done
GR_STEP_TIMES="$W/times_fp32.csv" timeout 60 $G run $w --variant fused_stream $FP --iters 200 --no-cpu-ref --quiet > /dev/null 2>&1
python3 scripts/step-times "$W/times_fp32.csv" 2>&1 | tail -2
GR_STEP_TIMES="$W/times_bf16.csv" timeout 60 $G run $w --variant fused_stream --iters 200 --no-cpu-ref --quiet > /dev/null 2>&1
python3 scripts/step-times "$W/times_bf16.csv" 2>&1 | tail -2
timeout 300 .gpu/gr_tests --suite gpu_decode > "$W/gpu_decode.log" 2>&1; echo "== gpu_decode rc $?"
grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/gpu_decode.log" | head -12; grep -B2 -A8 "FAILED" "$W/gpu_decode.log" | head -30
tar -C "$OUT" -czf "$OUT/results.tgz" work
