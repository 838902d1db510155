#!/usr/bin/env bash
# Run 73 (device, session 11): decode_step_splitk with the down pass in the same register pipeline
# as the gate/up items (its first steps issued in the last round of a warp's last item; B_down in
# shared memory by one bulk copy): small-size checks, the untraced timing at fp32 L8 d1024 f4096
# B4, GR_STEP_TIMES stamps (with and without --pdl, scripts/splitk-times), the default bf16 size.
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
l="$W/fp32b4-splitk-pdl.log"
timeout 60 $G run $F --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
echo "== fp32 B4 fused_splitk --pdl rc $?"; tab "$l"
for pdl in "--pdl" ""; do
  l="$W/stamps$pdl.log"
  GR_STEP_TIMES="$W/times$pdl.csv" timeout 60 $G run $F $pdl --iters 200 --batches 2 --quiet --no-bandwidth --no-cpu-ref > "$l" 2>&1
  echo "== stamps $pdl rc $?"; python3 scripts/splitk-times "$W/times$pdl.csv" | tee "$W/times$pdl.txt"
done
l="$W/bf16-splitk-pdl.log"
timeout 90 $G run workloads/decode_step.json --variant fused_splitk --pdl --iters 1000 --batches 10 --quiet --no-bandwidth > "$l" 2>&1
echo "== bf16 default fused_splitk --pdl rc $?"; tab "$l"
tar -C "$OUT" -czf "$OUT/results.tgz" work
