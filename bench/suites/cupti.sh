# cupti-launchstat targets (issue #5). Sourced by bench/run.sh, which sets B (graphrun), O (the
# output folder) and status. bench_cupti:
#   1. graphrun --trace: traced vs untraced step time (the inflation tracing causes), launch_bound
#      K=1000 and pointwise_fusion n=4096
#   2. zero dropped records at 10,000 replays x 300 kernels through the injection, with the
#      traced process's peak RSS (memory stays bounded) and the writer's buffer counts; the big
#      trace is deleted once analysed (its report JSON is kept)
#   3. PyTorch: bench/torch_mlp.py eager and torch.cuda.graph, untraced and traced; the report
#      must show the launch counts and the gap collapse
#   4. the cross-check: per-kernel overhead the traced reports attribute ((eager - graph) step
#      time / kernels per step) against the untraced measurement, within the stated inflation
cupti_run() { # label, command... (output to $O/label.txt; a failure sets status)
    local label="$1"
    shift
    echo "== $label: $*"
    "$@" > "$O/$label.txt" 2>&1
    local rc=$?
    if [ $rc -ne 0 ]; then
        status=1
        echo "   exit $rc"
        tail -5 "$O/$label.txt"
    fi
    return $rc
}

bench_cupti() {
    local L
    L="$(dirname "$B")/cupti-launchstat"
    local t
    # 1. in-process: traced vs untraced
    cupti_run cupti_trace_launch_bound "$B" run workloads/launch_bound.json --iters 2000 --no-bandwidth --quiet \
        --trace "$O/cupti_launch_bound_k1000.jsonl" --trace-iters 200 --json "$O/cupti_trace_launch_bound.json"
    cupti_run cupti_trace_pointwise "$B" run workloads/pointwise_fusion.json --set n=4096 --iters 5000 --no-bandwidth \
        --quiet --trace "$O/cupti_pointwise_n4096.jsonl" --trace-iters 200 --json "$O/cupti_trace_pointwise.json"
    rm -f "$O/cupti_launch_bound_k1000.jsonl" # ~100 MB; the analysis is in the JSON

    # 2. 3 M kernel records through the injection: zero dropped, bounded memory
    t=$(date +%s)
    if command -v /usr/bin/time > /dev/null; then
        cupti_run cupti_3m /usr/bin/time -v "$L" -o "$O/cupti_3m.jsonl" --no-report -- "$B" run workloads/launch_bound.json \
            --variant tiny --set K=300 --iters 10000 --no-bandwidth --no-cpu-ref --quiet
    else
        cupti_run cupti_3m "$L" -o "$O/cupti_3m.jsonl" --no-report -- "$B" run workloads/launch_bound.json \
            --variant tiny --set K=300 --iters 10000 --no-bandwidth --no-cpu-ref --quiet
    fi
    echo "   traced run took $(($(date +%s) - t)) s; trace $(du -h "$O/cupti_3m.jsonl" 2>/dev/null | cut -f1)"
    cupti_run cupti_3m_report "$L" report "$O/cupti_3m.jsonl" --json "$O/cupti_3m.report.json"
    tail -2 "$O/cupti_3m.jsonl" > "$O/cupti_3m.tail.jsonl" 2>/dev/null
    rm -f "$O/cupti_3m.jsonl"

    # 3. PyTorch eager vs torch.cuda.graph
    if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
        local mode
        for mode in eager graph; do
            cupti_run "cupti_torch_${mode}_untraced" python3 bench/torch_mlp.py --mode $mode --iters 2000 --warmup 100 \
                --json "$O/cupti_torch_${mode}_untraced.json"
            cupti_run "cupti_torch_${mode}_traced" "$L" -o "$O/cupti_torch_$mode.jsonl" --steps 500 \
                --json "$O/cupti_torch_${mode}.report.json" -- python3 bench/torch_mlp.py --mode $mode --iters 500 \
                --warmup 50
        done
        cupti_run cupti_torch_compare "$L" report "$O/cupti_torch_eager.jsonl" --compare "$O/cupti_torch_graph.jsonl" \
            --json "$O/cupti_torch_compare.json"
    else
        echo "== cupti torch: skipped (python3 with torch and a CUDA device not found)"
    fi

    # 4. summary and cross-check
    python3 - "$O" <<'PY' || status=1
import json, os, sys
o = sys.argv[1]
def load(name):
    p = os.path.join(o, name)
    try:
        return json.load(open(p))
    except Exception as e:
        print(f"   (no {name}: {e})")
        return None
ok = True
print("   traced vs untraced (graphrun --trace; us/step, CUDA events):")
for name in ("cupti_trace_launch_bound.json", "cupti_trace_pointwise.json"):
    r = load(name)
    if not r or "trace" not in r:
        ok = False
        continue
    t = r["trace"]
    for v in t["variants"]:
        if v.get("status") != "ok":
            print(f"   {v['variant']}: {v.get('error', '')[:200]}")
            ok = False
            continue
        print(f"   {name[12:-5]:>13} {v['variant']:<10} k={v['kernels_per_step']:<5} eager {v['eager_untraced_us']:9.2f} -> "
              f"{v['eager_traced_us']:9.2f} (x{v['eager_inflation']:.2f})  graph {v['graph_untraced_us']:9.2f} -> "
              f"{v['graph_traced_us']:9.2f} (x{v['graph_inflation']:.2f}); dropped {t['dropped']}")
    for c in t.get("analysis", {}).get("eager_vs_graph", []):
        pk, upk = c.get("per_kernel_us"), c.get("untraced_per_kernel_us")
        if pk is None or upk is None or upk <= 0:
            continue
        infl = c["a"]["step_us"] / c["a"]["untraced_step_us"] if c["a"].get("untraced_step_us") else 0
        agree = 0.5 <= pk / upk <= max(infl, 1.0) * 1.5
        ok = ok and agree
        print(f"   cross-check {c['a']['label']:<22} per kernel: traced {pk:7.3f} us vs untraced {upk:7.3f} us "
              f"(x{pk / upk:.2f}; eager inflation x{infl:.2f}) {'agrees' if agree else 'DISAGREES'}")
r = load("cupti_3m.report.json")
if r:
    tr, w = r["trace"], r["whole_trace"]
    dropped = tr["dropped"]
    ok = ok and dropped == 0 and w["kernels"] >= 6_000_000
    print(f"   3M: {w['kernels']} kernels ({w['graph_kernels']} in graphs), {tr['api_records']} API records, "
          f"dropped {dropped} {'OK' if dropped == 0 else 'FAIL'}")
try:
    txt = open(os.path.join(o, "cupti_3m.txt")).read()
    for line in txt.splitlines():
        if "Maximum resident set size" in line:
            print(f"   3M: traced process peak RSS {int(line.split(':')[-1]) / 1024:.0f} MB (buffers bounded)")
    tail = open(os.path.join(o, "cupti_3m.tail.jsonl")).read().strip().splitlines()[-1]
    end = json.loads(tail)
    print(f"   3M: writer used {end.get('buffers')} buffers of {end.get('buffer_bytes', 0) >> 20} MiB, "
          f"{end.get('waits')} waits, {end.get('refused')} refused")
except Exception as e:
    print(f"   (3M details: {e})")
eu, gu = load("cupti_torch_eager_untraced.json"), load("cupti_torch_graph_untraced.json")
cmp = load("cupti_torch_compare.json")
if eu and gu and cmp and "compare" in cmp:
    c = cmp["compare"]
    a, b = c["a"], c["b"]
    kps = a["kernels_per_step"] or 0
    upk = (eu["step_us"] - gu["step_us"]) / kps if kps else 0
    pk = c.get("per_kernel_us", 0)
    print(f"   torch MLP untraced: eager {eu['step_us']:.2f} us/step, graph {gu['step_us']:.2f} us/step")
    print(f"   torch MLP traced:   eager {a['step_us']:.2f} us/step, {a['kernels_per_step']:.1f} kernels and "
          f"{a['launch_calls_per_step']:.1f} launch calls/step, median gap {a['gap_median_us']:.2f} us, idle "
          f"{100 * a['idle_fraction']:.0f}%")
    print(f"                       graph {b['step_us']:.2f} us/step, {b['kernels_per_step']:.1f} kernels and "
          f"{b['graph_launches_per_step']:.1f} graph launches/step, median gap {b['gap_median_us']:.2f} us, idle "
          f"{100 * b['idle_fraction']:.0f}%")
    infl = a["step_us"] / eu["step_us"] if eu["step_us"] else 0
    agree = upk > 0 and 0.5 <= pk / upk <= max(infl, 1.0) * 1.5
    collapse = b["gap_median_us"] < a["gap_median_us"] and b["launch_calls_per_step"] < a["launch_calls_per_step"]
    ok = ok and agree and collapse
    print(f"   cross-check torch per kernel: traced {pk:.3f} us vs untraced {upk:.3f} us (eager inflation x{infl:.2f}) "
          f"{'agrees' if agree else 'DISAGREES'}; gap collapse in graph mode {'yes' if collapse else 'NO'}")
sys.exit(0 if ok else 1)
PY
}
