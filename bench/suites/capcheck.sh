# Capture checking and piecewise capture (issue #6). Sourced by bench/run.sh, which sets B
# (graphrun), O (the output folder) and status. bench_capcheck:
#   1. workloads/capture_breakers.json, every variant, global mode: each pattern's findings (op,
#      API, stream, error, fix), then full eager vs piecewise vs the fixed plan's full graph, all
#      verified (untraced, CUDA events)
#   2. the same in thread-local and relaxed mode (fewer timing steps): the matrix's other columns
#   3. the clean workloads (launch_bound, pointwise_fusion n=4096, decode_step, dlrm_small): zero
#      findings, and step times as in earlier results (the checker detaches before timing)
#   4. PyTorch through the injected checker (cupti-launchstat --capture-check):
#      bench/torch_capture_break.py --break item | alloc | pinned | none
#   5. a summary checked against the expectations (exit status 1 when one is not met)
capcheck_run() { # label, expected exit code, command... (output to $O/label.txt)
    local label="$1" want="$2"
    shift 2
    echo "== $label: $*"
    "$@" > "$O/$label.txt" 2>&1
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        status=1
        echo "   exit $rc (expected $want)"
        tail -8 "$O/$label.txt"
    fi
    return 0
}

bench_capcheck() {
    local L m b want
    L="$(dirname "$B")/cupti-launchstat"
    capcheck_run capcheck_breakers_global 0 "$B" run workloads/capture_breakers.json --iters 1000 --no-bandwidth --quiet \
        --json "$O/capcheck_breakers_global.json"
    for m in thread-local relaxed; do
        capcheck_run "capcheck_breakers_$m" 0 "$B" run workloads/capture_breakers.json --capture-mode "$m" --iters 200 \
            --no-bandwidth --quiet --json "$O/capcheck_breakers_$m.json"
    done
    capcheck_run capcheck_clean_launch_bound 0 "$B" run workloads/launch_bound.json --iters 2000 --no-bandwidth --quiet \
        --json "$O/capcheck_clean_launch_bound.json"
    capcheck_run capcheck_clean_pointwise 0 "$B" run workloads/pointwise_fusion.json --set n=4096 --iters 5000 \
        --no-bandwidth --quiet --json "$O/capcheck_clean_pointwise.json"
    capcheck_run capcheck_clean_decode 0 "$B" run workloads/decode_step.json --iters 500 --no-bandwidth --quiet \
        --json "$O/capcheck_clean_decode.json"
    capcheck_run capcheck_clean_dlrm 0 "$B" run workloads/dlrm_small.json --iters 500 --no-bandwidth --quiet \
        --json "$O/capcheck_clean_dlrm.json"
    if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
        for b in item alloc pinned none; do
            want=1
            [ "$b" = none ] && want=0
            capcheck_run "capcheck_torch_$b" "$want" "$L" --capture-check -o "$O/capcheck_torch_$b.jsonl" \
                --json "$O/capcheck_torch_$b.json" -- python3 bench/torch_capture_break.py --break "$b"
        done
    else
        echo "== capcheck torch: skipped (python3 with torch and a CUDA device not found)"
    fi
    python3 - "$O" <<'PY' || status=1
import json, os, sys
o = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(o, name)))
    except Exception as e:
        print(f"   (no {name}: {e})")
        return None
# the finding kind each pattern must produce in global mode (tests/capcheck_expect.h)
want = {"stream_sync": {"sync"}, "device_sync": {"sync"}, "event_sync": {"sync", "captured_event"},
        "stream_query": {"query"}, "event_query": {"query", "captured_event"}, "alloc": {"alloc"},
        "alloc_host": {"host_alloc"}, "alloc_thread": {"alloc"}, "legacy_copy": {"legacy_stream"},
        "sync_copy": {"sync_copy"}, "other_stream": {"other_stream"}, "pageable_copy": {"pageable_copy"},
        "fork": {"unjoined"}, "item": {"readback"}, "lazy_init": None}
ok = True
def med(t):
    return t["step_us"]["median"] if t else float("nan")
for mode in ("global", "thread-local", "relaxed"):
    r = load(f"capcheck_breakers_{mode}.json")
    if not r:
        ok = False
        continue
    print(f"   capture_breakers, {mode} mode (us/step, CUDA events, untraced):")
    print(f"   {'variant':<14} {'capture':<8} {'err':>3} {'esc':>3} {'haz':>3} {'full eager':>11} {'piecewise':>10} "
          f"{'x':>6} {'fixed graph':>11} {'x':>6}  verified  first finding")
    for v in r["variants"]:
        cc = v.get("capture_check", {})
        name = v["variant"]
        counts = cc.get("counts", {})
        kinds = {f["kind"] for f in cc.get("findings", [])}
        first = next((f["text"] for f in cc.get("findings", []) if f.get("blocks_capture")),
                     cc.get("findings", [{}])[0].get("text", "") if cc.get("findings") else "")
        pw = cc.get("piecewise")
        if pw:
            fx = pw.get("fixed", {})
            e, p, g = med(pw.get("eager")), med(pw.get("piecewise")), med(fx.get("graph"))
            verified = pw.get("verified") and fx.get("verified", False)
            line = f"{e:11.2f} {p:10.2f} {e / p if p else 0:5.2f}x {g:11.2f} {e / g if g else 0:5.2f}x"
        elif "graph_replay" in v:
            e, g = v["eager"]["step_us"]["median"], v["graph_replay"]["step_us"]["median"]
            verified = v["verified"]
            line = f"{e:11.2f} {'(full)':>10} {'':>6} {g:11.2f} {e / g if g else 0:5.2f}x"
        else:
            verified, line = False, f"{v.get('status')}: {v.get('error', '')[:80]}"
        print(f"   {name:<14} {cc.get('full_capture', '?'):<8} {counts.get('error', 0):>3} {counts.get('escape', 0):>3} "
              f"{counts.get('hazard', 0):>3} {line}  {'yes' if verified else 'NO'}  {first[:110]}")
        good = v.get("status") == "ok" and verified
        if name == "clean":
            good = good and cc.get("total") == 0
        elif mode == "global" and name in want:
            good = good and (want[name] is None and cc.get("total", 0) > 0 or want[name] is not None and bool(kinds & want[name]))
        ok = ok and good
        if not good:
            print(f"   ^ {name}: expected {want.get(name)}; got {sorted(kinds)}")
for name in ("launch_bound", "pointwise", "decode", "dlrm"):
    r = load(f"capcheck_clean_{name}.json")
    if not r:
        ok = False
        continue
    for v in r["variants"]:
        cc = v.get("capture_check", {})
        clean = cc.get("checked") and cc.get("total") == 0
        ok = ok and clean and v.get("status") == "ok"
        g = v.get("graph_replay", {}).get("step_us", {}).get("median", 0)
        e = v.get("eager", {}).get("step_us", {}).get("median", 0)
        print(f"   clean {name:<12} {v['variant']:<14} findings {cc.get('total')} ({'ok' if clean else 'FALSE POSITIVE'}); "
              f"eager {e:.2f} graph {g:.2f} us/step")
torch_want = {"item": {"readback", "sync", "pageable_copy"}, "alloc": {"alloc"}, "pinned": {"host_alloc"}, "none": set()}
for b, kinds_wanted in torch_want.items():
    r = load(f"capcheck_torch_{b}.json")
    if not r:
        continue
    kinds = {f["kind"] for f in r.get("findings", [])}
    blocking = r.get("blocking", 0)
    good = (blocking == 0) if b == "none" else bool(kinds & kinds_wanted)
    ok = ok and good
    print(f"   torch --break {b:<6} exit {r.get('command_exit_code')}: {r.get('total')} findings {sorted(kinds)}, "
          f"{blocking} blocking ({'as expected' if good else 'NOT as expected'})")
    for f in r.get("findings", [])[:4]:
        print(f"      [{f['severity']}] {f['text'][:160]}")
sys.exit(0 if ok else 1)
PY
}
