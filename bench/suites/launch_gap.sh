# Why graphrun's graph node costs more than the bare probe's (issue #26). Found so far (runs
# 88-96, bench/results/2026-12-05-run90-96-h100-gap, which keeps the scripts of the rows that
# found it): every node of every graph costs 0.178 us more once the process has done certain GPU
# work before: graphrun's bandwidth probe then an eager step before the capture (the bare probe
# too: gr_launch_probe_full --before-setup --before bwprobe --eager-first 1), a capture check
# before the capture, or a previous variant; not module loading, not the graph's size, not a
# malloc, a copy kernel, a memcpy, a stream, events or a sync before the eager step.
# These rows, each before the probe's setup and followed by one eager step:
#   bwpart_*      one kind of the bandwidth probe alone (bwpart:KIND): which of its parts
#   kernels*      N distinct kernels run once each (the bandwidth probe runs three)
#   graph_e1, capgraph_e1   a graph made, run and destroyed, with the capture checker open or not
#                 (what a previous variant and the capture check do)
# beside the reproductions (probe_bw_e1; graphrun's pipeline through gr_pipe_probe with the
# bandwidth probe and the eager check, or the capture check, first) and, for #26's per-node
# target, the bare probe in both states (fresh, and after the bandwidth probe and one eager
# step) beside graphrun run (every variant measured after such work), empty and tiny, plain and
# PDL. K = 1000 graphs, empty and plain unless named; the SM clock sampled by nvidia-smi every
# 50 ms; two rounds in alternating order, each run its own log. Sourced by bench/run.sh.
bench_launch_gap() {
    local P="${GR_BUILD_DIR:-build}/gr_launch_probe" PP="${GR_BUILD_DIR:-build}/gr_pipe_probe"
    local PF="${GR_BUILD_DIR:-build}/gr_launch_probe_full"
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
    local rows=(probe probe_bw_e1 bwpart_read_e1 bwpart_write_e1 bwpart_copy_e1 bwpart_memcpy_e1
        bwpart_shape_e1 bwpart_read64_e1 kernels128_e1 kernels3_e1 graph_e1 capgraph_e1 bw_eager cc graphrun graphrun_nobw_nocc
        probe_tiny probe_tiny_bw_e1 graphrun_tiny probe_pdl probe_pdl_bw_e1 graphrun_pdl
        probe_tiny_pdl probe_tiny_pdl_bw_e1 graphrun_tiny_pdl)
    local r what
    for r in 1 2; do
        local order=("${rows[@]}")
        [ $r -eq 2 ] && order=($(printf '%s\n' "${rows[@]}" | tac))
        for what in "${order[@]}"; do
            local l="${what}_r$r" g=(--kernel empty --k 1000 --mode graph)
            local w=(workloads/launch_bound.json empty --iters 300)
            case $what in
            probe) clocked "$l" "$P" "${g[@]}" ;;
            probe_bw_e1) clocked "$l" "$PF" "${g[@]}" --before-setup --before bwprobe --eager-first 1 ;;
            probe_tiny) clocked "$l" "$P" --kernel tiny --k 1000 --mode graph ;;
            probe_tiny_bw_e1) clocked "$l" "$PF" --kernel tiny --k 1000 --mode graph \
                --before-setup --before bwprobe --eager-first 1 ;;
            probe_pdl) clocked "$l" "$P" "${g[@]}" --pdl ;;
            probe_pdl_bw_e1) clocked "$l" "$PF" "${g[@]}" --pdl --before-setup --before bwprobe --eager-first 1 ;;
            probe_tiny_pdl) clocked "$l" "$P" --kernel tiny --k 1000 --mode graph --pdl ;;
            probe_tiny_pdl_bw_e1) clocked "$l" "$PF" --kernel tiny --k 1000 --mode graph --pdl \
                --before-setup --before bwprobe --eager-first 1 ;;
            graphrun_tiny) clocked "$l" "$B" run workloads/launch_bound.json --variant tiny \
                --no-pdl --iters 300 --quiet --json "$d/$l.json" ;;
            graphrun_pdl) clocked "$l" "$B" run workloads/launch_bound.json --variant empty \
                --iters 300 --quiet --json "$d/$l.json" ;;
            graphrun_tiny_pdl) clocked "$l" "$B" run workloads/launch_bound.json --variant tiny \
                --iters 300 --quiet --json "$d/$l.json" ;;
            kernels128_e1) clocked "$l" "$PF" "${g[@]}" --before-setup --before kernels:128 --eager-first 1 ;;
            graph_e1) clocked "$l" "$PF" "${g[@]}" --before-setup --before graph:1000 --eager-first 1 ;;
            capgraph_e1) clocked "$l" "$PF" "${g[@]}" --before-setup --before capgraph:1000 --eager-first 1 ;;
            kernels3_e1) clocked "$l" "$PF" "${g[@]}" --before-setup --before kernels:3 --eager-first 1 ;;
            bwpart_read64_e1) clocked "$l" "$PF" "${g[@]}" --before-setup --before bwpart:read:64 --eager-first 1 ;;
            bwpart_*_e1) local k="${what#bwpart_}"
                clocked "$l" "$PF" "${g[@]}" --before-setup --before "bwpart:${k%_e1}" --eager-first 1 ;;
            bw_eager) clocked "$l" "$PP" "${w[@]}" --bandwidth --stages session,eager_check,capture,time_graph ;;
            cc) clocked "$l" "$PP" "${w[@]}" --stages session,capture_check,capture,time_graph ;;
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
print("   us per node (K = 1000 graphs; empty and plain unless named), SM clock MHz min/median/max while it ran")
for what in ("probe", "probe_bw_e1", "bwpart_read_e1", "bwpart_write_e1", "bwpart_copy_e1",
             "bwpart_memcpy_e1", "bwpart_shape_e1", "bwpart_read64_e1", "kernels128_e1", "kernels3_e1",
             "graph_e1", "capgraph_e1",
             "bw_eager", "cc", "graphrun",
             "graphrun_nobw_nocc", "probe_tiny", "probe_tiny_bw_e1", "graphrun_tiny", "probe_pdl",
             "probe_pdl_bw_e1", "graphrun_pdl", "probe_tiny_pdl", "probe_tiny_pdl_bw_e1",
             "graphrun_tiny_pdl"):
    cells = []
    for r in (1, 2):
        lab = f"{what}_r{r}"
        pn, ck = per_node(lab), clocks(lab)
        cells.append((f"{pn:.3f}" if pn else "-") + (f" @{ck[0]:.0f}/{ck[1]:.0f}/{ck[2]:.0f}" if ck else ""))
    print(f"   {what:<20} r1 {cells[0]:<24} r2 {cells[1]}")
PY
}
