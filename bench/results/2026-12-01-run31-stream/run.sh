#!/usr/bin/env bash
# Run 31 (device): first run of decode_step_stream (variant fused_stream, the TMA-ring persistent
# kernel): a small smoke run, the fp32 B4 and default bf16 targets against fused --pdl in the same
# process, per-phase stamps (GR_STEP_TIMES) of the fp32 B4 step, then the gpu_decode suite.
# Binaries built on the CPU machine from a snapshot at /tmp/snap (GR_SOURCE_DIR), carried in .gpu/.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
ln -sfn "$PWD" /tmp/snap
G=.gpu/graphrun
w=workloads/decode_step.json
FP="--set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4"
echo "pwd $PWD"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
t() { local lab=$1; shift; local to=$1; shift; timeout $to "$@" > "$W/$lab.log" 2>&1; local rc=$?; echo "== $lab rc $rc";
      sed -n '/^timing per step/,/^  (saved/p' "$W/$lab.log" | grep -v "^  (saved"; grep -E "FAIL|not verified|error|rror:" "$W/$lab.log" | head -6; }
t smoke 60 $G run $w --variant fused_stream --set L=2 --set d=256 --set f=512 --set B=3 --set dtype=fp32 --iters 50
t fp32_stream 90 $G run $w --variant fused_stream $FP --iters 2000 --batches 30 --quiet
t fp32_fused_pdl 90 $G run $w --variant fused $FP --iters 2000 --batches 30 --pdl --quiet
t bf16_stream 90 $G run $w --variant fused_stream --iters 1000 --batches 30 --quiet
t bf16_fused_pdl 90 $G run $w --variant fused --iters 1000 --batches 30 --pdl --quiet
GR_STEP_TIMES="$W/times_fp32.csv" timeout 60 $G run $w --variant fused_stream $FP --iters 200 --no-cpu-ref --quiet > "$W/times_fp32.log" 2>&1
echo "== times rc $?"; python3 scripts/step-times "$W/times_fp32.csv" 2>&1 | tail -25
GR_STEP_TIMES="$W/times_bf16.csv" timeout 60 $G run $w --variant fused_stream --iters 200 --no-cpu-ref --quiet > "$W/times_bf16.log" 2>&1
echo "== times bf16 rc $?"; python3 scripts/step-times "$W/times_bf16.csv" 2>&1 | tail -12
timeout 240 .gpu/gr_tests --suite gpu_decode > "$W/gpu_decode.log" 2>&1; echo "== gpu_decode rc $?"
grep -E "^ +(tests|asserts) |FAILED|failed:" "$W/gpu_decode.log" | head -12; grep -B2 -A12 "FAILED" "$W/gpu_decode.log" | head -40
tar -C "$OUT" -czf "$OUT/results.tgz" work
