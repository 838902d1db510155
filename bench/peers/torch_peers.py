#!/usr/bin/env python3
"""PyTorch peers of graphrun's bundled workloads, timed the way graphrun times them.

    python3 bench/peers/torch_peers.py [--only pointwise|launch_bound] [--json FILE]

pointwise: y = relu((a + b) * c), fp32, n = 1e8 and n = 4096, as eager PyTorch (three kernels),
the same in torch.cuda.graph, torch.compile (one Triton kernel) and
torch.compile(mode="reduce-overhead") (that kernel in a CUDA graph).
launch_bound: K = 1000 dependent x.add_(1) on 256 floats, eager and in torch.cuda.graph
(torch.compile would fuse the chain into one kernel, which is not a launch-cost peer).

Every figure: CUDA events around batches of steps after warm-up; median [p10, p90] over the
batches, untraced. Every mode's output is checked against a float64 reference computed on the
host (pointwise) or against the count of adds (launch_bound). Exit codes: 0 ok, 1 a check failed,
2 bad arguments, 3 no PyTorch or no CUDA device.
"""
import argparse
import json
import sys


def timed(torch, step, steps, batches=20, warmup=None):
    warmup = warmup if warmup is not None else max(3, steps)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    per = []
    for _ in range(batches):
        e0.record()
        for _ in range(steps):
            step()
        e1.record()
        e1.synchronize()
        per.append(e0.elapsed_time(e1) * 1e3 / steps)
    per.sort()

    def q(f):
        return per[int(f * (len(per) - 1) + 0.5)]

    return {"median": q(0.5), "p10": q(0.1), "p90": q(0.9), "batches": batches, "steps_per_batch": steps}


def pointwise(torch, n, rows):
    g = torch.Generator(device="cpu").manual_seed(1)
    a = torch.randn(n, generator=g).cuda()
    b = torch.randn(n, generator=g).cuda()
    c = (torch.rand(n, generator=g) * 4 - 2).cuda()
    ref = torch.relu((a.double().cpu() + b.double().cpu()) * c.double().cpu())

    def f(a, b, c):
        return torch.relu((a + b) * c)

    steps = 20 if n >= 10**7 else 500

    def check(y, label):
        err = (y.double().cpu() - ref).norm() / ref.norm()
        ok = bool(torch.isfinite(y).all()) and err.item() < 1e-6
        if not ok:
            print(f"torch_peers: pointwise n={n} {label}: rel L2 {err.item():.2e}", file=sys.stderr)
        return ok, err.item()

    def record(mode, step, y):
        ok, err = check(y(), mode)
        t = timed(torch, step, steps)
        bytes_ = 16.0 * n
        rows.append({"workload": "pointwise_fusion", "n": n, "mode": mode, "step_us": t,
                     "bytes_per_step": bytes_, "gbps": bytes_ / (t["median"] * 1e-6) / 1e9,
                     "verified": ok, "rel_l2": err})
        return ok

    ok = record("eager", lambda: f(a, b, c), lambda: f(a, b, c))
    # the same three kernels (add, mul, relu) in one CUDA graph
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y_static = f(a, b, c)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y_static = f(a, b, c)
    ok &= record("cuda_graph", graph.replay, lambda: (graph.replay(), y_static)[1])
    fc = torch.compile(f, dynamic=False)
    ok &= record("compile", lambda: fc(a, b, c), lambda: fc(a, b, c))
    # static inputs: otherwise CUDA-graph trees copy a, b and c into the graph's own input
    # buffers on every call (3 x 4n bytes more traffic than the step itself)
    for t in (a, b, c):
        torch._dynamo.mark_static_address(t)
    fr = torch.compile(f, mode="reduce-overhead", dynamic=False)
    for _ in range(3):
        fr(a, b, c)
    ok &= record("compile_reduce_overhead", lambda: fr(a, b, c), lambda: fr(a, b, c).clone())
    return ok


def launch_bound(torch, rows, K=1000, n=256):
    x = torch.arange(n, dtype=torch.float32, device="cuda") * 0.25 + 0.5
    start = x.clone()
    count = [0]

    def eager_step():
        for _ in range(K):
            x.add_(1.0)
        count[0] += 1

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x.add_(1.0)
        count_warm = 1
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(K):
            x.add_(1.0)

    def graph_step():
        graph.replay()
        count[0] += 1

    ok = True
    for mode, step, steps in (("eager", eager_step, 5), ("cuda_graph", graph_step, 20)):
        t = timed(torch, step, steps)
        rows.append({"workload": "launch_bound", "variant": "tiny", "k": K, "mode": mode, "step_us": t,
                     "us_per_kernel": t["median"] / K})
    torch.cuda.synchronize()
    want = start + float(count[0] * K + count_warm)
    good = bool(torch.equal(x, want))
    for r in rows:
        if r["workload"] == "launch_bound":
            r["verified"] = good
    if not good:
        print("torch_peers: launch_bound: x does not equal start + adds", file=sys.stderr)
    return ok and good


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["pointwise", "launch_bound"])
    ap.add_argument("--json", help="write the rows as JSON to FILE")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_peers: PyTorch is not installed for this python3", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_peers: no CUDA device", file=sys.stderr)
        return 3
    rows = []
    ok = True
    if a.only in (None, "pointwise"):
        ok &= pointwise(torch, 100_000_000, rows)
        ok &= pointwise(torch, 4096, rows)
    if a.only in (None, "launch_bound"):
        ok &= launch_bound(torch, rows)
    meta = {"tool": "torch_peers", "torch": torch.__version__, "device": torch.cuda.get_device_name(),
            "method": "CUDA events per batch, median [p10, p90] over batches, untraced"}
    for r in rows:
        t = r["step_us"]
        label = f"{r['workload']} {'n=' + str(r['n']) if 'n' in r else 'K=' + str(r['k'])} {r['mode']}"
        print(f"{label:<48} {t['median']:10.2f} us [{t['p10']:.2f}, {t['p90']:.2f}]"
              f"  verified={r['verified']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({**meta, "rows": rows}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
