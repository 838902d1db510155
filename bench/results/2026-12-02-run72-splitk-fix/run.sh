#!/usr/bin/env bash
# Run 72 (device, session 11): decode_step_splitk after run 71 (302.7 us at fp32 B4 --pdl): the
# slice's A_down columns staged in shared memory (was one dependent L2 load per column), the
# residual added with the atomics (was one dependent load per row in block 0), the LoRA-A slots
# polled 4 at a time, LoRA-A tasks on the blocks with the smaller slices, 8 down steps in flight,
# xpart sharing h's shared memory. fp32 B4 with and without --pdl, fused --pdl on the same
# machine, the default bf16 size, ncu of one layer kernel, then gpu_decode.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror|trap" "$1" | head -4; }
F="workloads/decode_step.json --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set B=4"
for v in "fused_splitk --pdl" "fused --pdl" "fused_splitk"; do
  l="$W/fp32b4-${v// /_}.log"
  timeout 60 $G run $F --variant $v --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== fp32 B4 $v rc $?"; tab "$l"; grep -E "graph vs ref" "$l" | head -2
done
l="$W/bf16-splitk-pdl.log"
timeout 90 $G run workloads/decode_step.json --variant fused_splitk --pdl --iters 1000 --batches 10 --quiet --no-bandwidth > "$l" 2>&1
echo "== bf16 default fused_splitk --pdl rc $?"; tab "$l"
l="$W/ncu-layer.log"
timeout 120 ncu --kernel-name regex:splitk_layer --launch-skip 3 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy $G run $F --variant fused_splitk --iters 3 --batches 1 --quiet --no-bandwidth > "$l" 2>&1
echo "== ncu rc $?"; grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy|Dynamic Shared" "$l" | head -12
l="$W/ncu-fused.log"
timeout 120 ncu --kernel-name regex:"gate_up_kernel|down_kernel" --launch-skip 4 --launch-count 2 --section SpeedOfLight $G run $F --variant fused --iters 3 --batches 1 --quiet --no-bandwidth > "$l" 2>&1
echo "== ncu fused rc $?"; grep -E "Duration|DRAM Throughput" "$l" | head -6
l="$W/gpu_decode.log"
timeout 300 .gpu/b/tests/gr_tests --suite gpu_decode > "$l" 2>&1
echo "== gpu_decode rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|rel |nodes" "$l" | head -30
tar -C "$OUT" -czf "$OUT/results.tgz" work
