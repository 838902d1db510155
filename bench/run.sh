#!/usr/bin/env bash
# Benchmarks recorded in bench/results/: runs graphrun on the bundled workloads at the sizes the
# issues' targets name, writing each run's text report and JSON to $BENCH_OUT (default
# bench/out). Untraced; CUDA-event timing; see bench/README.md for what each target means.
#   bench/run.sh [NAME...]   a NAME is a suite in bench/suites/NAME.sh defining bench_NAME;
#                            default: every suite
# Nothing is overwritten: a suite whose outputs are already in the folder (bench/run.sh run
# again into the same BENCH_OUT, or a NAME given twice) writes to NAME.repeat-N/ beside them,
# and a label used twice in one folder gets _r2, _r3, ... Each suite's folder gets
# bench-NAME.started (date, commit, command) when it starts.
set -uo pipefail
cd "$(dirname "$0")/.."
B="${GR_BUILD_DIR:-build}/graphrun"
O_BASE="${BENCH_OUT:-bench/out}"
O="$O_BASE"
mkdir -p "$O"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for f in bench/suites/*.sh; do names+=("$(basename "$f" .sh)"); done
fi
status=0

fresh_label() { # label: itself, or with the first _rN whose outputs are not in $O yet
    local l="$1" n=2
    if [ -e "$O/$l.txt" ] || [ -e "$O/$l.json" ]; then
        while [ -e "$O/${l}_r$n.txt" ] || [ -e "$O/${l}_r$n.json" ]; do n=$((n + 1)); done
        l="${l}_r$n"
    fi
    echo "$l"
}

one() { # label, then graphrun args
    local label
    label="$(fresh_label "$1")"
    shift
    echo "== $label: graphrun $*"
    "$B" "$@" --json "$O/$label.json" > "$O/$label.txt" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && { status=1; echo "   exit $rc"; tail -5 "$O/$label.txt"; }
    python3 - "$O/$label.json" <<'PY' 2>/dev/null || true
import json, sys
r = json.load(open(sys.argv[1]))
cb = r.get("copy_bandwidth", {})
bw = cb.get("gbps", {}).get("median", 0)
rd = cb.get("read_gbps", {}).get("median", 0)
wr = cb.get("write_gbps", {}).get("median", 0)
print(f"   copy bw {bw:.0f} GB/s, read {rd:.0f}, write {wr:.0f}; {r['device']['name']}; {r['date']}")
for v in r["variants"]:
    if "eager" not in v:
        print(f"   {v['variant']}: {v['status']} {v.get('error','')[:200]}")
        continue
    e = v["eager"]["step_us"]; g = v["graph_replay"]["step_us"]
    k = v["kernels_per_step"]
    pct = v.get("graph_pct_of_copy_bw", 0)
    fl = v.get("graph_pct_of_floor", 0)
    print(f"   {v['variant']:<14} k={k:<5} eager {e['median']:10.2f} us [{e['p10']:.2f},{e['p90']:.2f}]"
          f"  graph {g['median']:10.2f} us [{g['p10']:.2f},{g['p90']:.2f}]  x{v['speedup']:.2f}"
          f"  {g['median']/max(k,1):.3f} us/kernel  {v['graph_gbps']:.0f} GB/s ({pct:.1f}% copy, {fl:.1f}% of floor)"
          f"  verified={v['verified']}")
PY
}

for f in bench/suites/*.sh; do . "$f"; done
for n in "${names[@]}"; do
    if declare -F "bench_$n" >/dev/null; then
        O="$O_BASE"
        if [ -e "$O/bench-$n.started" ]; then
            k=2
            while [ -e "$O_BASE/$n.repeat-$k" ]; do k=$((k + 1)); done
            O="$O_BASE/$n.repeat-$k"
            mkdir -p "$O"
            echo "== $n: earlier outputs are in $O_BASE; this repeat writes to $O"
        fi
        { date -u; git rev-parse HEAD 2>/dev/null; echo "bench/run.sh $n (${B})"; } > "$O/bench-$n.started"
        "bench_$n"
    else
        echo "bench/run.sh: unknown benchmark \"$n\" (suites: $(ls bench/suites | sed 's/\.sh$//' | tr '\n' ' '))"
        status=2
    fi
done
exit $status
