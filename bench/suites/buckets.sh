# Issue 25's bucket and update targets on decode_step (fused, bf16 by default): the seven
# buckets B = 1..64 captured over one set of device buffers (memory against one copy of the
# weights: `graphrun list`), each bucket's replay against `graphrun run` at that B (untraced,
# CUDA events, PDL as run's default), and capture --update of the unfused (353-node) and fused
# (33-node) graphs from B = 1 to B = 2 (cudaGraphExecUpdate vs cudaGraphInstantiate, host clock).
# --no-cpu-ref throughout: graph == eager is still checked; the CPU reference of decode at
# B = 64 alone takes minutes and is not what these targets measure. Sourced by bench/run.sh.
bench_buckets() {
    local wl=workloads/decode_step.json dir sock b
    dir="$(mktemp -d /tmp/gr_bench_buckets.XXXXXX)"
    sock="$dir/graphrun.sock"
    one buckets_capture capture "$wl" --variant fused --name dec --buckets B=1,2,4,8,16,32,64 \
        --no-cpu-ref --socket "$sock" --quiet
    "$B" list --socket "$sock" > "$O/buckets_list.txt" 2>&1 || status=1
    "$B" list --socket "$sock" --json "$O/buckets_list.json" > /dev/null 2>&1 || status=1
    cat "$O/buckets_list.txt"
    for b in 1 2 4 8 16 32 64; do
        one "buckets_replay_B$b" replay "dec.B$b" --iters 2000 --socket "$sock" --quiet
        one "buckets_run_B$b" run "$wl" --variant fused --set "B=$b" --iters 2000 --no-cpu-ref --quiet
    done
    # where the per-bucket device memory goes (run 81: ~130 MB a bucket beyond the shared
    # buffers): the same group captured without the capture checker (CUPTI enabled around each
    # capture) and a fresh service's single B = 64 capture, each listed on its own
    one buckets_capture_nocc capture "$wl" --variant fused --name decnc --buckets B=1,2,4,8,16,32,64 \
        --no-cpu-ref --no-capture-check --socket "$sock" --quiet
    "$B" list --socket "$sock" --json "$O/buckets_list_nocc.json" > "$O/buckets_list_nocc.txt" 2>&1 || status=1
    python3 - "$O/buckets_list.json" "$O/buckets_list_nocc.json" <<'PY' || true
import json, sys
for path in sys.argv[1:]:
    try:
        gs = json.load(open(path))["graphs"]
    except Exception as e:
        print(f"   {path}: {e}")
        continue
    print(f"   {path.rsplit('/', 1)[-1]}: per graph own / measured / device MB")
    for g in gs:
        print(f"     {g['name']:<12} {g.get('own_bytes', 0) / 1e6:9.1f} {g.get('measured_bytes', 0) / 1e6:9.1f}"
              f" {g['device_bytes'] / 1e6:9.1f}  capture_checked={g.get('capture_checked')}")
PY
    local v
    for v in unfused fused; do
        "$B" capture "$wl" --variant "$v" --name "up_$v" --no-cpu-ref --socket "$sock" --quiet \
            > "$O/update_${v}_B1.txt" 2>&1 || status=1
        "$B" capture "$wl" --variant "$v" --set B=2 --name "up_$v" --update --no-cpu-ref \
            --socket "$sock" --quiet > "$O/update_${v}_B2.txt" 2>&1 || status=1
        echo "   update $v: $(grep -E 'cudaGraphExecUpdate' "$O/update_${v}_B2.txt")"
    done
    "$B" stop --socket "$sock" > "$O/buckets_stop.txt" 2>&1 || status=1
    cp "$sock.log" "$O/buckets_service.log" 2>/dev/null
    rm -rf "$dir"
}
