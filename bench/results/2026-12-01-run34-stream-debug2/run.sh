#!/usr/bin/env bash
# Run 34 (device): decode_step_stream v2, 2-byte dtypes at L >= 2: check act (layer L-1's gate/up
# output) besides x, against the CPU reference, for fused_stream and fused_persistent; and with
# the in-flight cap off.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
ln -sfn "$PWD" /tmp/snap
G=.gpu/graphrun
python3 - <<'PY'
import json
w = json.load(open("workloads/decode_step.json"))
w["outputs"] = [{"buffer": "x", "rtol": 0.01}, {"buffer": "act", "rtol": 0.01}]
json.dump(w, open("/tmp/dbg.json", "w"))
PY
S="--set d=256 --set f=512 --set B=1 --iters 3 --warmup 0 --batches 1 --no-bandwidth --quiet"
for v in fused_stream fused_persistent; do for dt in bf16 fp32; do for L in 1 2; do
  timeout 30 $G run /tmp/dbg.json --variant $v $S --set dtype=$dt --set L=$L > "$W/$v.$dt.$L.log" 2>&1
  echo "$v $dt L=$L rc $?:"; grep -E "vs ref" "$W/$v.$dt.$L.log" | tr -s ' ' | head -4
done; done; done
GR_DEC_S_INFLIGHT=14 timeout 30 $G run /tmp/dbg.json --variant fused_stream $S --set dtype=bf16 --set L=2 > "$W/if14.log" 2>&1
echo "inflight 14 bf16 L=2 rc $?"; grep -E "vs ref" "$W/if14.log" | tr -s ' ' | head -4
timeout 30 $G run /tmp/dbg.json --variant fused_stream $S --set dtype=bf16 --set L=2 --set r=8 > "$W/r8.log" 2>&1
echo "r=8 bf16 L=2 rc $?"; grep -E "vs ref" "$W/r8.log" | tr -s ' ' | head -4
timeout 30 $G run /tmp/dbg.json --variant fused_stream $S --set dtype=bf16 --set L=2 --set d=1024 > "$W/d1024.log" 2>&1
echo "d=1024 bf16 L=2 rc $?"; grep -E "vs ref" "$W/d1024.log" | tr -s ' ' | head -4
tar -C "$OUT" -czf "$OUT/results.tgz" work
