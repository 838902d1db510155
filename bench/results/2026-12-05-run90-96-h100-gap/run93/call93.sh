#!/usr/bin/env bash
# run 93 (session 19): is the per-node gap about where/when the kernel's code is loaded
# (CUDA_MODULE_LOADING=EAGER vs the default lazy loading, run 91-92's gapped and clean orders),
# and does the per-node excess depend on the graph's size (K = 100, 1000, 4000)
set -u
cd "$(dirname "$0")/.."
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
R=run93; L=$OUT/$R; mkdir -p $L/gap
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
B=.gpu/b/graphrun PP=.gpu/b/gr_pipe_probe P=.gpu/b/gr_launch_probe
capfirst=session,capture,reference,eager_check,capture_check,graph_check,verdict,time_eager,time_graph
row() { # label, command...
  local l=$1; shift
  "$@" > $L/gap/$l.out 2>&1 || echo "$l: exit $?" >> $L/errors.txt
}
for r in 1 2; do
  for lm in LAZY EAGER; do
    export CUDA_MODULE_LOADING=$lm
    row probe_${lm}_r$r $P --kernel empty --k 1000 --mode graph
    row graphrun_${lm}_r$r $B run workloads/launch_bound.json --variant empty --no-pdl --iters 300 --quiet --json $L/gap/graphrun_${lm}_r$r.json
    row nobw_nocc_${lm}_r$r $B run workloads/launch_bound.json --variant empty --no-pdl --no-bandwidth --no-capture-check --iters 300 --quiet --json $L/gap/nobw_nocc_${lm}_r$r.json
    row bw_eager_${lm}_r$r $PP workloads/launch_bound.json empty --bandwidth --stages session,eager_check,capture,time_graph
    row cc_${lm}_r$r $PP workloads/launch_bound.json empty --stages session,capture_check,capture,time_graph
    row bw_all_capture_first_${lm}_r$r $PP workloads/launch_bound.json empty --bandwidth --stages $capfirst
    row all_capture_first_${lm}_r$r $PP workloads/launch_bound.json empty --stages $capfirst
  done
  unset CUDA_MODULE_LOADING
  for k in 100 4000; do
    row graphrun_k${k}_r$r $B run workloads/launch_bound.json --variant empty --no-pdl --set K=$k --iters 300 --quiet --json $L/gap/graphrun_k${k}_r$r.json
    row nobw_nocc_k${k}_r$r $B run workloads/launch_bound.json --variant empty --no-pdl --set K=$k --no-bandwidth --no-capture-check --iters 300 --quiet --json $L/gap/nobw_nocc_k${k}_r$r.json
    row probe_k${k}_r$r $P --kernel empty --k $k --mode graph
  done
done
python3 - $L/gap > $L/summary.txt <<'PY'
import json, os, sys, glob
d = sys.argv[1]
rows = {}
for f in sorted(glob.glob(d + "/*.out")):
    lab = os.path.basename(f)[:-4]
    js = f[:-4] + ".json"
    try:
        if os.path.exists(js):
            v = json.load(open(js))["variants"][0]
            pn = v["graph_replay"]["step_us"]["median"] / max(v["kernels_per_step"], 1)
        else:
            pn = json.loads([l for l in open(f) if l.startswith("{")][-1])["us_per_kernel"]
    except Exception as e:
        pn = None
    base, r = lab.rsplit("_r", 1)
    rows.setdefault(base, {})[r] = pn
for k, v in rows.items():
    print(f"{k:<32} " + "  ".join(f"r{r} {v[r]:.3f}" if v[r] else f"r{r} -" for r in sorted(v)))
PY
cat $L/summary.txt; cat $L/errors.txt 2>/dev/null
tar -C $OUT -czf $OUT/$R.tgz $R && rm -rf $L
