#!/usr/bin/env python3
"""What a served step costs on top of the graph (issue 25's target: copy in + replay + copy out
within the replay alone + 10 us at B = 1): captures decode_step (fused, by default bf16 at B = 1)
in the replay service, times graph replays the usual way (CUDA events, `replay`), then sends N
served steps with fresh input x from Python through shared memory and reports, per request: the
client's wall time, the service's host time for the request, its copies, and the graph launch
(CUDA events) - median and p10/p90 after warm-up. Then the same N steps through a lane
(replay/PROTOCOL.md, "Lanes": a doorbell in a shared-memory segment, no socket): the client's
wall time per step (writing x, the doorbell, copying the output out) and the control block's
graph_us / step_us / lock_us. Writes OUT/serve_overhead.json and prints a table. Needs a GPU;
run from the repository root:

    python3 bench/serve_overhead.py --out bench/out [--set B=1 --set dtype=bf16] [--n 2000]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import graphrun  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summary(xs):
    return {"median": statistics.median(xs), "p10": pct(xs, 0.1), "p90": pct(xs, 0.9), "n": len(xs)}


def measure_lane(c, a, fresh_x, graph_alone):
    """N steps (after warm-up) through a lane on "served" with input x and output x."""
    try:
        lane = c.open_lane("served", inputs=["x"], outputs=["x"], spin_us=a.lane_spin_us)
    except graphrun.GraphrunError as e:
        return {"error": str(e)}
    wall, call, graph, step, lock = [], [], [], [], []
    with lane:
        xin_view, xout_view = lane.inputs["x"], lane.outputs["x"]
        for i in range(a.warmup + a.n):
            xin = fresh_x()
            t0 = time.perf_counter()
            xin_view[...] = xin
            t1 = time.perf_counter()
            t = lane.step(timeout=60)
            t2 = time.perf_counter()
            xout_view.copy()
            t3 = time.perf_counter()
            if i >= a.warmup:
                wall.append((t3 - t0) * 1e6)
                call.append((t2 - t1) * 1e6)
                graph.append(t["graph_us"])
                step.append(t["step_us"])
                lock.append(t["lock_us"])
        spin_us = lane.info.get("spin_us")
    return {"client_wall_us": summary(wall), "step_call_us": summary(call),
            "graph_us": summary(graph), "service_step_us": summary(step),
            "lock_us": summary(lock), "spin_us": spin_us, "io_graph": lane.info.get("io_graph"),
            "overhead_us": statistics.median(wall) - graph_alone["median"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="workloads/decode_step.json")
    ap.add_argument("--variant", default="fused")
    ap.add_argument("--set", action="append", default=[], help="NAME=VALUE (default B=1)")
    ap.add_argument("--n", type=int, default=2000, help="served requests timed")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--graphrun", default=os.environ.get("GRAPHRUN", "build/graphrun"))
    ap.add_argument("--lane-spin-us", type=int, default=None,
                    help="the lane thread's spin after a step (default: the service's, 2000)")
    ap.add_argument("--no-lane", action="store_true", help="skip the lane measurement")
    a = ap.parse_args()
    import numpy as np

    sets = a.set or ["B=1"]
    os.makedirs(a.out, exist_ok=True)
    sock = os.path.join(tempfile.mkdtemp(prefix="gr-serve-"), "s.sock")
    c = graphrun.Client(sock, autostart=True, graphrun=a.graphrun, timeout=600)
    try:
        cap = c.capture(a.workload, name="served", sets=sets, variant=a.variant)
        bufs = {b["name"]: b for b in cap["buffers"]}
        x = bufs["x"]
        dt = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}[x["dtype"]]
        rng = np.random.default_rng(1)
        rep = c.replay("served", iters=10000, batches=20)
        graph_alone = rep["report"]["variants"][0]["graph_replay"]["step_us"]

        def fresh_x():
            xin = rng.standard_normal(x["shape"]).astype(np.float32)
            if dt is np.uint16:  # bf16 bit patterns: the top half of fp32
                return (xin.view(np.uint32) >> 16).astype(np.uint16)
            return xin.astype(dt)

        wall, req, cin, cout, graph, queue, job, prep, outside = [], [], [], [], [], [], [], [], []
        lookup, body = [], []
        way_in, way_out = [], []
        for i in range(a.warmup + a.n):
            xin = fresh_x()
            m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC) / 1e3  # the service's clock too
            t0 = time.perf_counter()
            _, s = c.serve("served", inputs={"x": xin}, outputs=["x"])
            t1 = time.perf_counter()
            m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC) / 1e3
            if i >= a.warmup:
                wall.append((t1 - t0) * 1e6)
                req.append(s["request_us"])
                cin.append(s["copy_in_us"])
                cout.append(s["copy_out_us"])
                graph.append(s["graph_us"])
                queue.append(s.get("queue_us", 0))
                job.append(s.get("job_us", 0))
                prep.append(s.get("prepare_us", 0))
                lookup.append(s.get("lookup_us", 0))
                body.append(s.get("reply_body_us", 0))
                outside.append(wall[-1] - queue[-1] - job[-1])
                if "received_mono_us" in s:
                    way_in.append(s["received_mono_us"] - m0)
                    way_out.append(m1 - s["replied_mono_us"])
        lane = None if a.no_lane else measure_lane(c, a, fresh_x, graph_alone)
        res = {
            "workload": a.workload, "variant": a.variant, "sets": sets, "device": c.status()["device"],
            "graph_replay_us": graph_alone,
            "served": {"client_wall_us": summary(wall), "service_request_us": summary(req),
                       "copy_in_us": summary(cin), "copy_out_us": summary(cout),
                       "graph_us": summary(graph), "prepare_us": summary(prep),
                       "lookup_us": summary(lookup), "reply_body_us": summary(body),
                       "queue_us": summary(queue), "job_us": summary(job),
                       "outside_service_us": summary(outside),
                       **({"way_in_us": summary(way_in), "way_out_us": summary(way_out)} if way_in else {})},
            "overhead_us": statistics.median(wall) - graph_alone["median"],
            "method": "graph_replay_us: `replay` (CUDA events per batch, 10000 steps); served: one "
                      "request per step from Python (shared memory in and out), client wall clock "
                      "(time.perf_counter) and the service's own figures; lane: one doorbell step "
                      "per step through a lane on the same graph (x in, x out), client wall clock "
                      "around writing x, the step and copying x out (step_call_us: the step "
                      "alone), and the control block's graph_us / step_us / lock_us",
        }
        if lane is not None:
            res["lane"] = lane
        with open(os.path.join(a.out, "serve_overhead.json"), "w") as f:
            json.dump(res, f, indent=2)
        print(f"{a.workload} {a.variant} {' '.join(sets)}: graph replay {graph_alone['median']:.2f} us/step")
        for k, v in res["served"].items():
            print(f"  {k:22s} median {v['median']:9.2f} us  [p10 {v['p10']:.2f}, p90 {v['p90']:.2f}]")
        print(f"  served - replay alone: {res['overhead_us']:.2f} us per request (target: <= 10)")
        if lane is not None and "error" in lane:
            print(f"  lane: not measured: {lane['error']}")
        elif lane is not None:
            print(f"  lane (spin_us {lane['spin_us']}, copies "
                  f"{'inside the graph' if lane.get('io_graph') else 'around the graph'}):")
            for k, v in lane.items():
                if isinstance(v, dict) and "median" in v:
                    print(f"    {k:20s} median {v['median']:9.2f} us  [p10 {v['p10']:.2f}, "
                          f"p90 {v['p90']:.2f}]")
            print(f"  lane - replay alone: {lane['overhead_us']:.2f} us per step")
    finally:
        try:
            c.stop()
        except graphrun.GraphrunError:
            pass
        c.close()


if __name__ == "__main__":
    main()
