#!/usr/bin/env bash
# Run 74 (device, session 11): decode_step_splitk as committed in c37906d (the run 72 kernel: a
# separate down pipeline of PD single-row steps, B_down from L2) with PD = 8 and PD = 12: untraced
# timing at fp32 L8 d1024 f4096 B4 --pdl and GR_STEP_TIMES stamps of each, to compare with run 73
# (the down pass inside the gate/up register pipeline: 254.3 us).
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved|programmatic|variant"; grep -E "FAIL|not verified|rror|trap" "$1" | head -4; }
F="workloads/decode_step.json --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set B=4 --variant fused_splitk --pdl"
for pd in 8 12; do
  G=.gpu/b/graphrun_pd$pd
  l="$W/fp32b4-pd$pd.log"
  timeout 60 $G run $F --iters 2000 --batches 20 --quiet --no-bandwidth > "$l" 2>&1
  echo "== PD=$pd fp32 B4 fused_splitk --pdl rc $?"; tab "$l"; grep -E "graph vs ref" "$l" | head -1
  GR_STEP_TIMES="$W/times-pd$pd.csv" timeout 60 $G run $F --iters 200 --batches 2 --quiet --no-bandwidth --no-cpu-ref > "$W/stamps-pd$pd.log" 2>&1
  python3 scripts/splitk-times "$W/times-pd$pd.csv" | tee "$W/times-pd$pd.txt" | tail -1
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
