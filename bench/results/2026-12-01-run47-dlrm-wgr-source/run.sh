#!/usr/bin/env bash
# Run 47 (device, session 7): Nsight Compute source-level stall sampling of the register-A wg
# kernel on bot.1 (B = 2048 fused_tf32x3 x3_impl=auto_wg: the first linear_wgr launch), to find
# which instructions the stage pipeline waits on.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight -k regex:linear_wgr -c 1 -o "$W/wgr" $G run $w $X3 --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu.log" 2>&1
echo "== ncu rc $?"; tail -3 "$W/ncu.log"
ncu -i "$W/wgr.ncu-rep" --page details --print-details all > "$W/details.txt" 2>&1; echo "== details rc $?"
ncu -i "$W/wgr.ncu-rep" --page source --csv --print-source sass > "$W/sass.csv" 2>&1; echo "== sass rc $? $(wc -l < "$W/sass.csv") lines"
head -2 "$W/sass.csv" | cut -c1-400
rm -f "$W/wgr.ncu-rep"
gzip -9 "$W/sass.csv"
tar -C "$OUT" -czf "$OUT/results.tgz" work
