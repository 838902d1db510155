#!/usr/bin/env bash
# Run 51 (device, session 8): the blocked interaction kernels (4 x 4 dot blocks, RB rows per
# block) and the smallk / rowdot Linear kernels (bot.0, top.2): GPU suites, dlrm_small timing at
# B = 2048 and 128, per op, rows per interaction block forced, Nsight Compute on the new kernels.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W="$OUT/work"; mkdir -p "$W"
G=.gpu/b/graphrun
w=workloads/dlrm_small.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
tab() { sed -n '/^timing per step/,/^  (saved/p' "$1" | grep -vE "^timing|saved"; grep -E "FAIL|not verified|rror" "$1" | head -4; }
X3="--set B=2048 --variant fused_tf32x3 --set x3_impl=auto_wg"
for p in "--pdl" ""; do
  timeout 40 $G run $w $X3 $p --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3$p.log" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg $p rc $?"; tab "$W/x3$p.log"; grep -E " y .*vs ref" "$W/x3$p.log" | head -2
done
timeout 40 $G run $w $X3 --iters 400 --batches 5 --quiet --no-bandwidth --no-cpu-ref --trace "$W/t.jsonl" --trace-iters 200 > "$W/trace.log" 2>&1
.gpu/b/cupti-launchstat report "$W/t.jsonl" > "$W/rep.log" 2>&1; rm -f "$W/t.jsonl"
echo "== per op (graph)"; sed -n "/workload ops/,/^\$/p" "$W/rep.log" | sed -n '12,24p' | awk 'NF>5 {print "   ", $2, $6}'
for rb in 1 2; do
  GR_IX_RB=$rb timeout 40 $G run $w $X3 --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/x3_rb$rb.log" 2>&1
  echo "== B=2048 fused_tf32x3 auto_wg --pdl GR_IX_RB=$rb rc $?"; tab "$W/x3_rb$rb.log"
done
for v in fused fused_tf32 fused_2stream; do
  timeout 40 $G run $w --set B=2048 --variant $v --pdl --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/b2048_$v.log" 2>&1
  echo "== B=2048 $v --pdl rc $?"; tab "$W/b2048_$v.log"
done
timeout 60 $G run $w --iters 2000 --batches 20 --quiet --no-bandwidth > "$W/b128.log" 2>&1
echo "== B=128 all variants rc $?"; tab "$W/b128.log"
timeout 150 ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats -k regex:"smallk|rowdot|interaction" -c 3 -o "$W/new" $G run $w $X3 --iters 3 --batches 1 --no-cpu-ref --no-bandwidth --quiet > "$W/ncu.log" 2>&1
echo "== ncu rc $?"
ncu -i "$W/new.ncu-rep" --page details --print-details all > "$W/details.txt" 2>&1
grep -E "^  void|Duration|Instructions Executed|SM Active Cycles|Elapsed Cycles|Issue Active|Achieved Occupancy  |Registers Per Thread  " "$W/details.txt" | head -40
rm -f "$W/new.ncu-rep"
for s in gpu_dlrm_kernels gpu_dlrm; do
  timeout 280 .gpu/b/tests/gr_tests --suite $s > "$W/$s.log" 2>&1; echo "== $s rc $?"
  grep -E "^ +(tests|asserts) |Elapsed|SKIPPED" "$W/$s.log" | head -8; grep -E "failed|FAILED" "$W/$s.log" | head -20
done
tar -C "$OUT" -czf "$OUT/results.tgz" work
