#!/usr/bin/env bash
# Run 71 (device, session 11): the new fused_splitk variant (decode_step_splitk: one kernel per
# layer + prep + finish). Small-size check first, then the fp32 L8 d1024 f4096 B4 target with and
# without --pdl against fused --pdl on the same machine, the default bf16 size, then gpu_decode.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror|trap" "$1" | head -4; }
for dt in fp32 bf16; do
  l="$W/small-$dt.log"
  timeout 60 $G run workloads/decode_step.json --set dtype=$dt --set L=2 --set d=256 --set f=512 --set B=4 --variant fused_splitk --iters 200 --batches 5 --no-bandwidth > "$l" 2>&1
  echo "== small $dt splitk rc $?"; tail -25 "$l" | grep -iE "verif|pass|fail|graph|eager|rel" | head -12
done
F="workloads/decode_step.json --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set B=4"
l="$W/fp32b4-splitk-pdl-bw.log"
timeout 90 $G run $F --variant fused_splitk --pdl --iters 2000 --batches 20 > "$l" 2>&1
echo "== fp32 B4 fused_splitk --pdl (with bandwidth) rc $?"; tab "$l"
for v in "fused_splitk" "fused --pdl" "fused_splitk --pdl"; do
  l="$W/fp32b4-${v// /_}.log"
  timeout 60 $G run $F --variant $v --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== fp32 B4 $v rc $?"; tab "$l"
done
l="$W/bf16-splitk-pdl.log"
timeout 90 $G run workloads/decode_step.json --variant fused_splitk --pdl --iters 1000 --batches 10 --quiet --no-bandwidth > "$l" 2>&1
echo "== bf16 default fused_splitk --pdl rc $?"; tab "$l"
l="$W/gpu_decode.log"
timeout 300 .gpu/b/tests/gr_tests --suite gpu_decode > "$l" 2>&1
echo "== gpu_decode rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|rel |nodes" "$l" | head -30
tar -C "$OUT" -czf "$OUT/results.tgz" work
