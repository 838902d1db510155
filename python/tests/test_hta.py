"""graphrun's Chrome trace export read by Holistic Trace Analysis (PyPI HolisticTraceAnalysis) as a
PyTorch-profiler (Kineto) trace, on recorded fixtures: `cupti-launchstat report FIXTURE --chrome
DIR/rank0.json --json REPORT`, then HTA's kernel breakdown, temporal breakdown and idle-time
breakdown on DIR, each compared with cupti-launchstat's own figures in REPORT (GPU span, busy and
idle time, idle share, kernel time per name, busy time per stream). Needs no GPU; skipped when
hta is not importable or no cupti-launchstat is built. docs/timelines.md says what is compared."""

import json
import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# HTA's own pandas deprecations are not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:::hta")
FIXTURES = ["pointwise_fusion_n4096", "launch_bound_k200", "torch_mlp_eager"]
US = 2e-3  # us: both sides add the same ns-exact durations, in a different order


def launchstat_bin():
    cands = [os.environ.get("CUPTI_LAUNCHSTAT_BIN")]
    if os.environ.get("GRAPHRUN_BIN"):
        cands.append(os.path.join(os.path.dirname(os.environ["GRAPHRUN_BIN"]), "cupti-launchstat"))
    cands.append(os.path.join(REPO, "build", "cupti-launchstat"))
    for b in cands:
        if b and os.access(b, os.X_OK):
            return b
    return None


@pytest.fixture(scope="module")
def hta():
    try:
        from hta.trace_analysis import TraceAnalysis
        from hta.utils.utils import merge_kernel_intervals
    except Exception as e:  # ImportError, or a dependency HTA does not declare (psutil)
        pytest.skip(f"Holistic Trace Analysis not importable ({e}): pip install HolisticTraceAnalysis psutil")
    return TraceAnalysis, merge_kernel_intervals


@pytest.fixture(scope="module", params=FIXTURES)
def loaded(request, hta, tmp_path_factory):
    exe = launchstat_bin()
    if not exe:
        pytest.skip("no cupti-launchstat (set CUPTI_LAUNCHSTAT_BIN or build into build/)")
    TraceAnalysis, _ = hta
    name = request.param
    d = tmp_path_factory.mktemp("hta-" + name)
    tdir = d / "traces"
    tdir.mkdir()
    chrome, report = tdir / "rank0.json", d / "report.json"
    p = subprocess.run([exe, "report", os.path.join(REPO, "tests", "data", name + ".jsonl"),
                        "--chrome", str(chrome), "--json", str(report)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # HTA rounds float (ns-precision) timestamps to whole us unless told not to: kernels of about
    # 1 us then get durations of 0 or -1 us (docs/timelines.md).
    old = os.environ.get("HTA_DISABLE_NS_ROUNDING")
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    try:
        analysis = TraceAnalysis(trace_dir=str(tdir))
    finally:
        if old is None:
            del os.environ["HTA_DISABLE_NS_ROUNDING"]
        else:
            os.environ["HTA_DISABLE_NS_ROUNDING"] = old
    with open(report) as f:
        rep = json.load(f)
    with open(chrome) as f:
        events = json.load(f)["traceEvents"]
    return name, analysis, rep, events, str(chrome)


def test_rank_and_device_from_the_header(loaded):
    _, analysis, rep, _, chrome = loaded
    # HTA's rank finder: the first line matching "rank":\s+N, read line by line
    with open(chrome) as f:
        first = next(m for m in (re.search(r'"rank":\s+(\d+)', line) for line in f) if m)
    assert first.group(1) == "0"
    assert analysis.t.get_ranks() == [0]
    meta = analysis.t.meta_data[0]
    assert meta["distributedInfo"]["rank"] == 0
    assert meta["deviceProperties"] and meta["deviceProperties"][0]["name"] == rep["trace"]["device"]


def test_temporal_breakdown_is_launchstats_span_busy_and_idle(loaded):
    _, analysis, rep, _, _ = loaded
    w = rep["whole_trace"]
    tb = analysis.get_temporal_breakdown(visualize=False)
    assert len(tb) == 1
    r = tb.iloc[0]
    assert r["kernel_time(us)"] == pytest.approx(w["gpu_span_us"], abs=US)
    assert r["idle_time(us)"] == pytest.approx(w["idle_us"], abs=US)
    # compute (kernels) + non-compute (memcpy/memset alone) = the union of all GPU work
    assert r["compute_time(us)"] + r["non_compute_time(us)"] == pytest.approx(w["busy_us"], abs=US)
    assert r["idle_time_pctg"] == pytest.approx(round(100 * w["idle_fraction"], 2), abs=0.011)


def test_kernel_breakdown_is_launchstats_kernels_by_name(loaded, hta):
    _, analysis, rep, events, _ = loaded
    # HTA groups by the event name (the demangled name, shortened for the timeline's tracks):
    # launch-stat's rows grouped by the same name
    short = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "").split(",")[0] == "kernel":
            short[e["args"].get("mangled", e["args"]["kernel"])] = e["name"]
    want = {}
    for k in rep["whole_trace"]["kernels_by_name"]:
        n = short[k["name"]]  # the name as the trace has it (mangled)
        s, lo, hi = want.get(n, (0.0, float("inf"), 0.0))
        want[n] = (s + k["total_us"], min(lo, k["duration_us"]["min"]), max(hi, k["duration_us"]["max"]))
    _, per_kernel = analysis.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=10**6,
                                                      include_memory_kernels=True)
    got = per_kernel[per_kernel["kernel_type"] == "COMPUTATION"]
    assert sorted(got["name"]) == sorted(want)
    for _, row in got.iterrows():
        s, lo, hi = want[row["name"]]
        assert row["sum (us)"] == pytest.approx(s, abs=US), row["name"]
        assert row["min (us)"] == pytest.approx(lo, abs=US), row["name"]
        assert row["max (us)"] == pytest.approx(hi, abs=US), row["name"]
    # memcpys and memsets are HTA's MEMORY kernels, not computation
    mem = per_kernel[per_kernel["kernel_type"] == "MEMORY"]
    assert all(n.startswith(("Memcpy", "Memset")) for n in mem["name"])
    assert (len(mem) > 0) == (rep["whole_trace"]["memcpys"] + rep["whole_trace"]["memsets"] > 0)


def test_busy_per_stream_is_launchstats(loaded, hta):
    _, analysis, rep, _, _ = loaded
    _, merge_kernel_intervals = hta
    df = analysis.t.get_trace(0)
    gpu = df[df["stream"].ne(-1)]
    got = {}
    for stream, g in gpu.groupby("stream"):
        m = merge_kernel_intervals(g[["ts", "dur"]].copy())
        got[int(stream)] = float(m["end"].sum() - m["ts"].sum())
    want = {s["stream"]: s["busy_us"] for s in rep["whole_trace"]["streams"]}
    assert sorted(got) == sorted(want)
    for s in want:
        assert got[s] == pytest.approx(want[s], abs=US), f"stream {s}"


def test_idle_time_breakdown_per_stream(loaded):
    _, analysis, rep, events, _ = loaded
    w = rep["whole_trace"]
    idle, _ = analysis.get_idle_time_breakdown(visualize=False)
    per_stream = idle.groupby("stream")["idle_time"].sum()
    streams = {s["stream"]: s for s in w["streams"]}
    assert set(int(s) for s in per_stream.index) <= set(streams)
    # host_wait needs each kernel tied to its launch call ("correlation"): a traced program
    # that waits on the host shows it
    assert idle[idle["idle_category"] == "host_wait"]["idle_time"].sum() > 0
    if w["graph_kernels"] > 0:
        return  # graph-node kernels are cat "kernel,graph": HTA's idle breakdown leaves them out
    # HTA: the holes between a stream's consecutive ops; launch-stat: the stream's idle over the
    # whole GPU span, so also before its first op and after its last
    t0 = min(e["ts"] for e in events if e.get("ph") == "X" and "stream" in e.get("args", {}))
    t1 = max(e["ts"] + e["dur"] for e in events if e.get("ph") == "X" and "stream" in e.get("args", {}))
    for s, v in per_stream.items():
        ops = [e for e in events if e.get("ph") == "X" and e.get("args", {}).get("stream") == int(s)]
        lead = min(e["ts"] for e in ops) - t0
        trail = t1 - max(e["ts"] + e["dur"] for e in ops)
        # the breakdown rounds to 0.01 us per category
        assert v + lead + trail == pytest.approx(streams[int(s)]["idle_us"], abs=0.02), f"stream {s}"
