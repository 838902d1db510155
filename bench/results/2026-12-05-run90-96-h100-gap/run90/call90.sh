#!/usr/bin/env bash
# run 90 (session 19): bench/run.sh launch_gap with run 89's new rows (steps before the probe's setup,
# a checked capture, graphrun under CUDA_DEVICE_MAX_CONNECTIONS 1 / 32), then the A/B of the io graph's
# own timing events (head) against 5924bbc's graphrun, three alternating repeats each, one log each
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-560}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
R=run90; L=$OUT/$R; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/$R.tgz.part $R 2>/dev/null && mv $OUT/$R.tgz.part $OUT/$R.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
BENCH_OUT=$L/bench timeout $(left 200) bench/run.sh launch_gap > $L/launch_gap.log 2>&1; step "launch_gap rc=$? $(grep -E '^   [a-z]' $L/launch_gap.log | tr -s ' ' | tr '\n' ';')"
for r in 1 2 3; do
  for who in head base; do
    d=$L/serve_${who}_r$r; mkdir -p $d
    g=.gpu/b/graphrun; [ $who = base ] && g=.gpu/b/baseline/graphrun
    timeout $(left 60) python3 bench/serve_overhead.py --graphrun $g --out $d > $d/serve_overhead.log 2>&1
    step "serve $who r$r rc=$? $(grep -E 'lane - replay alone' $d/serve_overhead.log | tr -s ' ')"
  done
done
tar -C $OUT -czf $OUT/$R.tgz $R
rm -rf $L $OUT/$R.tgz.part
