#!/usr/bin/env bash
# run 99 (session 20): the launch floor's two-graph fit on a GPU (gpu_workloads' run driver),
# torch_node_state with the bare probe's kernels inside a PyTorch process (which state a PyTorch
# process's graphs run in), and #26's "done when" folder: bench/peers/run.sh with the probe in both
# process states beside graphrun
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-560}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
R=run99; L=$OUT/$R; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/$R.tgz.part $R 2>/dev/null && mv $OUT/$R.tgz.part $OUT/$R.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
timeout $(left 120) .gpu/b/tests/gr_tests --suite gpu_workloads > $L/gpu_workloads.log 2>&1; step "gpu_workloads rc=$? $(tail -1 $L/gpu_workloads.log)"
for r in 1 2; do timeout $(left 60) python3 bench/peers/torch_node_state.py --json $L/torch_node_state_r$r.json > $L/torch_node_state_r$r.log 2>&1; step "torch_node_state r$r rc=$? $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print({k: j[k]["median"] for k in ("fresh", "fresh_after", "captured_after")}, {k: {kk: v["median"] for kk, v in j[k].items()} for k in ("bare_fresh", "bare_fresh_after", "bare_captured_after")}, j["verified"])' $L/torch_node_state_r$r.json 2>&1 | tail -1)"; done
timeout $(left 30) .gpu/b/graphrun run workloads/launch_bound.json --iters 300 > $L/lb_report.txt 2>&1; step "lb report rc=$?"
sed -n '/launch floor/,$p' $L/lb_report.txt | head -12 | tee -a $S
timeout $(left 400) bench/peers/run.sh $L/peers > $L/peers.log 2>&1; step "peers rc=$?"
cat $L/peers/ratio_table.md >> $S 2>/dev/null
tar -C $OUT -czf $OUT/$R.tgz $R
rm -rf $L $OUT/$R.tgz.part
