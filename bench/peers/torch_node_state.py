#!/usr/bin/env python3
"""Does a PyTorch process's CUDA graph pay issue 26's per-node cost after earlier GPU work?

    python3 bench/peers/torch_node_state.py [--k 1000] [--json FILE]

graphrun's graphs cost 0.178 us more per node once its process has done certain GPU work
before (bench/results/2026-12-05-run90-96-h100-gap: its bandwidth probe and an eager step, a
capture check, a previous variant); the bare probe shows it too after graphrun's bandwidth probe
and one eager step. This asks whether a PyTorch process gets it from its own kind of work. One
process, in order:
  fresh      a torch.cuda.graph of K dependent x.add_(1) on 256 floats, captured first thing
  history    then large-tensor work (1 GiB copies, a reduction, a fill, a matmul) and one eager
             step of the K adds; the fresh graph timed again ("fresh_after"), and a graph of the
             same K adds captured now ("captured_after")
Per node: CUDA events around 20 batches of 20 replays after 20 warm-up, median [p10, p90] per
replay / K. x is checked against the count of adds. One JSON object on stdout (and --json).
Exit codes: 0 ok, 1 a check failed, 2 bad arguments, 3 no PyTorch or no CUDA device.
"""
import argparse
import json
import sys


def timed(torch, g, k, batches=20, per=20, warm=20):
    for _ in range(warm):
        g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    v = []
    for _ in range(batches):
        e0.record()
        for _ in range(per):
            g.replay()
        e1.record()
        e1.synchronize()
        v.append(e0.elapsed_time(e1) * 1e3 / per / k)
    v.sort()
    q = lambda f: v[int(f * (len(v) - 1) + 0.5)]
    return {"median": round(q(0.5), 4), "p10": round(q(0.1), 4), "p90": round(q(0.9), 4),
            "replays": warm + batches * per}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=1000, help="adds per graph (default 1000)")
    ap.add_argument("--json", help="also write the result here")
    a = ap.parse_args()
    if a.k < 1:
        print("torch_node_state: --k needs a positive count", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("torch_node_state: no PyTorch", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_node_state: no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    x = torch.zeros(256, device=dev)
    adds = 0

    def capture():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(s):
            with torch.cuda.graph(g, stream=s):
                for _ in range(a.k):
                    x.add_(1)
        torch.cuda.current_stream().wait_stream(s)
        return g

    out = {"tool": "torch_node_state", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "k": a.k, "method": "CUDA events around batches of graph replays, untraced; us per node"}
    g_fresh = capture()
    out["fresh"] = timed(torch, g_fresh, a.k)
    adds += out["fresh"]["replays"] * a.k
    # the history: large-tensor work of the kinds a model process does, then one eager step
    n = (1 << 30) // 4
    big = torch.rand(n, device=dev)
    other = torch.empty_like(big)
    for _ in range(4):
        other.copy_(big)
    s = float(other.sum())
    other.fill_(0.5)
    m = torch.randn(2048, 2048, device=dev)
    m = m @ m
    for _ in range(a.k):
        x.add_(1)
    adds += a.k
    torch.cuda.synchronize()
    del big, other, m
    out["history"] = {"copies_gib": 4, "sum": s > 0, "matmul": 2048, "eager_steps": 1}
    out["fresh_after"] = timed(torch, g_fresh, a.k)
    adds += out["fresh_after"]["replays"] * a.k
    g_after = capture()
    out["captured_after"] = timed(torch, g_after, a.k)
    adds += out["captured_after"]["replays"] * a.k
    got = x.cpu()
    ok = bool((got == float(adds)).all()) if adds < (1 << 24) else bool((got > 0).all())
    out["verified"] = ok
    text = json.dumps(out)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
