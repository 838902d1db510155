#!/usr/bin/env bash
# Run 75 (device, session 11): decode_step_splitk with groups of C blocks sharing the down pass
# (W_down read in pieces of C slices: C = 4 at fp32 B4 and the default size, ~500 bytes a row,
# instead of ~124 bytes, which run 74 saw stream at ~1.6 TB/s; act published to the group like
# tin). Small-size checks, fp32 L8 d1024 f4096 B4 timing (--pdl and not) and stamps, the default
# bf16 size, then gpu_decode.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror|trap" "$1" | head -4; }
for dt in fp32 bf16; do
  l="$W/small-$dt.log"
  timeout 60 $G run workloads/decode_step.json --set dtype=$dt --set L=3 --set d=256 --set f=512 --set B=3 --variant fused_splitk --pdl --iters 200 --batches 5 --quiet --no-bandwidth > "$l" 2>&1
  echo "== small $dt rc $?"; grep -E "vs ref|vs eager|rror|trap" "$l" | head -4
done
F="workloads/decode_step.json --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set B=4 --variant fused_splitk"
for pdl in "--pdl" ""; do
  l="$W/fp32b4-splitk$pdl.log"
  timeout 60 $G run $F $pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== fp32 B4 fused_splitk $pdl rc $?"; tab "$l"; grep -E "graph vs ref" "$l" | head -1
done
GR_STEP_TIMES="$W/times.csv" timeout 60 $G run $F --pdl --iters 200 --batches 2 --quiet --no-bandwidth --no-cpu-ref > "$W/stamps.log" 2>&1
python3 scripts/splitk-times "$W/times.csv" > "$W/times.txt"; cat "$W/times.txt"
l="$W/bf16-splitk-pdl.log"
timeout 90 $G run workloads/decode_step.json --variant fused_splitk --pdl --iters 1000 --batches 10 --quiet --no-bandwidth > "$l" 2>&1
echo "== bf16 default fused_splitk --pdl rc $?"; tab "$l"
l="$W/gpu_decode.log"
timeout 300 .gpu/b/tests/gr_tests --suite gpu_decode > "$l" 2>&1
echo "== gpu_decode rc $?"; grep -E "^ +(tests|asserts) |Elapsed" "$l" | head -8; grep -E "failed|FAILED|rel |nodes" "$l" | head -30
tar -C "$OUT" -czf "$OUT/results.tgz" work
