# Why graphrun's graph node costs more than the bare probe's (issue #26). Run 88 (H100) found
# where: 0.762 us per empty node, the probe's, with graphrun's bandwidth probe and capture
# checker both off; 0.940 with either one run before the capture. Runs 82-85 had ruled out the
# SM clock, the kernel binary, the runtime linkage and eager steps first. This suite looks for
# what the two stages share: the bare probe after one step of each kind before its capture
# (gr_launch_probe_full --before STEP: graphrun's own bwprobe and capcheck, then their parts:
# a D2D memcpy, a copy kernel, a large malloc, a stream, events, another graph, a sync), beside
# graphrun with both stages on and off. Empty kernels, K = 1000, plain graphs, the SM clock
# sampled by nvidia-smi every 50 ms; two rounds in alternating order, each run its own log.
# Sourced by bench/run.sh.
bench_launch_gap() {
    local P="${GR_BUILD_DIR:-build}/gr_launch_probe" PF="${GR_BUILD_DIR:-build}/gr_launch_probe_full"
    local d="$O/launch_gap"
    mkdir -p "$d"
    clocked() { # label, command...: run it with the SM clock sampled; one log each
        local label="$1"
        shift
        nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
            --format=csv,noheader -lms 50 > "$d/$label.clocks.csv" 2>/dev/null &
        local smi=$!
        "$@" > "$d/$label.out" 2>&1
        local rc=$?
        kill $smi 2>/dev/null
        wait $smi 2>/dev/null
        [ $rc -ne 0 ] && { status=1; echo "   $label: exit $rc"; tail -3 "$d/$label.out"; }
    }
    local rows=(probe before_bwprobe before_capcheck before_memcpy before_kernel before_malloc
        before_stream before_events before_graph before_sync graphrun graphrun_nobw_nocc)
    local r what
    for r in 1 2; do
        local order=("${rows[@]}")
        [ $r -eq 2 ] && order=($(printf '%s\n' "${rows[@]}" | tac))
        for what in "${order[@]}"; do
            local l="${what}_r$r" g=(--kernel empty --k 1000 --mode graph)
            case $what in
            probe) clocked "$l" "$P" "${g[@]}" ;;
            before_bwprobe) clocked "$l" "$PF" "${g[@]}" --before bwprobe ;;
            before_capcheck) clocked "$l" "$PF" "${g[@]}" --before capcheck ;;
            before_memcpy) clocked "$l" "$PF" "${g[@]}" --before memcpy:1024 ;;
            before_kernel) clocked "$l" "$PF" "${g[@]}" --before kernel:1024 ;;
            before_malloc) clocked "$l" "$PF" "${g[@]}" --before malloc:4096 ;;
            before_stream) clocked "$l" "$PF" "${g[@]}" --before stream ;;
            before_events) clocked "$l" "$PF" "${g[@]}" --before events:81 ;;
            before_graph) clocked "$l" "$PF" "${g[@]}" --before graph:10 ;;
            before_sync) clocked "$l" "$PF" "${g[@]}" --before sync ;;
            graphrun) clocked "$l" "$B" run workloads/launch_bound.json --variant empty \
                --no-pdl --iters 300 --quiet --json "$d/$l.json" ;;
            graphrun_nobw_nocc) clocked "$l" "$B" run workloads/launch_bound.json --variant empty \
                --no-pdl --no-bandwidth --no-capture-check --iters 300 --quiet --json "$d/$l.json" ;;
            esac
        done
    done
    python3 - "$d" <<'PY' || status=1
import csv, glob, json, os, statistics, sys
d = sys.argv[1]
def per_node(label):
    out = os.path.join(d, label + ".out")
    js = os.path.join(d, label + ".json")
    try:
        if os.path.exists(js):
            r = json.load(open(js))
            v = r["variants"][0]
            return v["graph_replay"]["step_us"]["median"] / max(v["kernels_per_step"], 1)
        line = [l for l in open(out) if l.startswith("{")][-1]
        return json.loads(line)["us_per_kernel"]
    except Exception as e:
        return None
def clocks(label):
    sm = []
    try:
        for row in csv.reader(open(os.path.join(d, label + ".clocks.csv"))):
            try:
                sm.append(float(row[1].strip().split()[0]))
            except (IndexError, ValueError):
                pass
    except OSError:
        pass
    return (min(sm), statistics.median(sm), max(sm)) if sm else None
print("   us per empty node (graph, --no-pdl), SM clock MHz min/median/max while it ran")
for what in ("probe", "before_bwprobe", "before_capcheck", "before_memcpy", "before_kernel",
             "before_malloc", "before_stream", "before_events", "before_graph", "before_sync",
             "graphrun", "graphrun_nobw_nocc"):
    cells = []
    for r in (1, 2):
        lab = f"{what}_r{r}"
        pn, ck = per_node(lab), clocks(lab)
        cells.append((f"{pn:.3f}" if pn else "-") + (f" @{ck[0]:.0f}/{ck[1]:.0f}/{ck[2]:.0f}" if ck else ""))
    print(f"   {what:<20} r1 {cells[0]:<24} r2 {cells[1]}")
PY
}
