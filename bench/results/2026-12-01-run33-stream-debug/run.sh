#!/usr/bin/env bash
# Run 33 (device): why decode_step_stream v2 fails for 2-byte dtypes at L >= 2 (run 32): small
# runs per dtype and depth, then compute-sanitizer memcheck / racecheck / initcheck on bf16 L=2.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
ln -sfn "$PWD" /tmp/snap
G=.gpu/graphrun
w=workloads/decode_step.json
S="--set d=256 --set f=512 --iters 20 --no-bandwidth --quiet"
for dt in bf16 fp16 fp32; do for L in 1 2 3; do
  timeout 30 $G run $w --variant fused_stream $S --set dtype=$dt --set L=$L --set B=1 > "$W/s_${dt}_$L.log" 2>&1
  echo "$dt L=$L rc $?: $(grep -E 'vs ref' "$W/s_${dt}_$L.log" | head -1 | tr -s ' ')"
done; done
for tool in memcheck racecheck initcheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --print-limit 10 $G run $w --variant fused_stream $S --set dtype=bf16 --set L=2 --set B=1 --no-capture-check > "$W/san_$tool.log" 2>&1
  echo "== $tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Uninit|hazard|race|Barrier|at 0x|by thread" "$W/san_$tool.log" | head -12
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
