#!/usr/bin/env bash
# run 97 (planned in session 19): launch_gap (the bandwidth probe bisected by kind, bwpart:KIND,
# then one eager step; the bare probe in both process states beside graphrun, empty/tiny,
# plain/PDL; N distinct kernels then one eager step), a PyTorch process's graph fresh and after its own
# kind of work (bench/peers/torch_node_state.py), gpu_service + the Python GPU tests (the lanes after the timing nodes' removal)
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-560}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
R=run97; L=$OUT/$R; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/$R.tgz.part $R 2>/dev/null && mv $OUT/$R.tgz.part $OUT/$R.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
BENCH_OUT=$L/bench timeout $(left 300) bench/run.sh launch_gap > $L/launch_gap.log 2>&1; step "launch_gap rc=$?"
cat $L/launch_gap.log | tee -a $S
for r in 1 2; do timeout $(left 60) python3 bench/peers/torch_node_state.py --json $L/torch_node_state_r$r.json > $L/torch_node_state_r$r.log 2>&1; step "torch_node_state r$r rc=$? $(cat $L/torch_node_state_r$r.json 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); print({k: j[k]["median"] for k in ("fresh", "fresh_after", "captured_after")}, j["verified"])' 2>/dev/null)"; done
timeout $(left 120) .gpu/b/tests/gr_tests --suite gpu_service > $L/gpu_service.log 2>&1; step "gpu_service rc=$? $(tail -1 $L/gpu_service.log)"
( OUT=$L/py timeout $(left 60) scripts/gpu-check python > $L/python.log 2>&1 ); step "python gpu rc=$?"
( OUT=$L/serve timeout $(left 90) scripts/gpu-check serve > $L/serve.log 2>&1 ); step "serve rc=$? $(grep -hE 'lane - replay alone|over the graph' $L/serve.log | tr -s ' ' | tr '\n' ' ')"
tar -C $OUT -czf $OUT/$R.tgz $R
rm -rf $L $OUT/$R.tgz.part
