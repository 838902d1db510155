#!/usr/bin/env bash
# Run 77 (device, session 11): after moving the stamp writer, the dtype dispatch and task_sums into
# kernels/decode_dev.cuh (meant to change nothing that runs): gpu_decode, GR_STEP_TIMES files of
# fused_persistent (scripts/step-times) and fused_splitk (scripts/splitk-times), and the fp32 B4
# timing of fused --pdl and fused_splitk --pdl once more.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror|trap" "$1" | head -4; }
l="$W/gpu_decode.log"
timeout 300 .gpu/b/tests/gr_tests --suite gpu_decode > "$l" 2>&1
echo "== gpu_decode rc $?"; grep -E "^ +(tests|asserts) " "$l"; grep -E "failed|FAILED" "$l" | head -10
F="workloads/decode_step.json --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set B=4"
GR_STEP_TIMES="$W/persistent.csv" timeout 60 $G run $F --variant fused_persistent --iters 20 --batches 1 --quiet --no-bandwidth --no-cpu-ref > "$W/persistent.log" 2>&1
echo "== persistent stamps rc $?"; head -2 "$W/persistent.csv"; python3 scripts/step-times "$W/persistent.csv" | tail -3
GR_STEP_TIMES="$W/splitk.csv" timeout 60 $G run $F --variant fused_splitk --pdl --iters 20 --batches 1 --quiet --no-bandwidth --no-cpu-ref > "$W/splitk.log" 2>&1
echo "== splitk stamps rc $?"; head -2 "$W/splitk.csv"; python3 scripts/splitk-times "$W/splitk.csv" | tail -1
for v in fused fused_splitk; do
  l="$W/fp32b4-$v.log"
  timeout 60 $G run $F --variant $v --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== fp32 B4 $v --pdl rc $?"; tab "$l"; grep -E "graph vs ref" "$l" | head -1
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
