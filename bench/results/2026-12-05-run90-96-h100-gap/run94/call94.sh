#!/usr/bin/env bash
# run 94 (session 19): two variants in one process (tiny then empty, empty then tiny) with graphrun's
# stage order and with the capture moved before the capture check: does one variant's capture
# check gap the next variant's graph
set -u
cd "$(dirname "$0")/.."
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
R=run94; L=$OUT/$R; mkdir -p $L/gap
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
B=.gpu/b/graphrun PP=.gpu/b/gr_pipe_probe P=.gpu/b/gr_launch_probe
capfirst=session,capture,reference,eager_check,capture_check,graph_check,verdict,time_eager,time_graph
row() { # label, command...
  local l=$1; shift
  "$@" > $L/gap/$l.out 2>&1 || echo "$l: exit $?" >> $L/errors.txt
}
order=session,reference,eager_check,capture_check,capture,graph_check,verdict,time_eager,time_graph
for r in 1 2; do
  row probe_r$r $P --kernel empty --k 1000 --mode graph
  row te_order_r$r $PP workloads/launch_bound.json tiny,empty --stages $order
  row te_capfirst_r$r $PP workloads/launch_bound.json tiny,empty --stages $capfirst
  row et_capfirst_r$r $PP workloads/launch_bound.json empty,tiny --stages $capfirst
  row et_order_nocc_r$r $PP workloads/launch_bound.json empty,tiny --stages ${order/capture_check,/}
  row graphrun_both_r$r $B run workloads/launch_bound.json --no-pdl --iters 300 --quiet --json $L/gap/graphrun_both_r$r.json
done
python3 - $L/gap > $L/summary.txt <<'PY'
import json, os, sys, glob
d = sys.argv[1]
rows = {}
for f in sorted(glob.glob(d + "/*.out")):
    lab = os.path.basename(f)[:-4]
    js = f[:-4] + ".json"
    base, r = lab.rsplit("_r", 1)
    try:
        if os.path.exists(js):
            for v in json.load(open(js))["variants"]:
                pn = v["graph_replay"]["step_us"]["median"] / max(v["kernels_per_step"], 1)
                rows.setdefault(base + "." + v["variant"], {})[r] = pn
        else:
            for l in open(f):
                if l.startswith("{"):
                    j = json.loads(l)
                    rows.setdefault(base + "." + j.get("variant", "probe"), {})[r] = j["us_per_kernel"]
    except Exception as e:
        rows.setdefault(base, {})[r] = None
for k, v in rows.items():
    print(f"{k:<32} " + "  ".join(f"r{r} {v[r]:.3f}" if v[r] else f"r{r} -" for r in sorted(v)))
PY
cat $L/summary.txt; cat $L/errors.txt 2>/dev/null
tar -C $OUT -czf $OUT/$R.tgz $R && rm -rf $L
