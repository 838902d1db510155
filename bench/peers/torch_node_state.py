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
Beside torch's own add, the bare probe's kernels (gr_launch_probe's `empty` and `tiny`: the same
bodies, griddepcontrol included on compute capability 9.0+, one block of 256), loaded into this
process from PTX through the driver API and launched on torch's capturing stream, are graphed
first thing ("bare_fresh") and after the history ("bare_fresh_after", "bare_captured_after").
Their figures compare directly with gr_launch_probe fresh and after graphrun's bandwidth probe
in the same device call (bench/run.sh launch_gap: 0.769 and 0.946 us per empty node on the
H100, run 97): which state a PyTorch process's graphs run in.
Per node: CUDA events around 20 batches of 20 replays after 20 warm-up, median [p10, p90] per
replay / K. x and the bare tiny kernel's buffer are checked against their counts of adds. One
JSON object on stdout (and --json).
Exit codes: 0 ok, 1 a check failed, 2 bad arguments, 3 no PyTorch or no CUDA device.
"""
import argparse
import ctypes
import json
import sys

# gr_launch_probe's empty_kernel and tiny_kernel (bench/peers/launch_probe.cu) as PTX, so a
# PyTorch process can graph kernels with the bare probe's bodies without building anything
PTX_HEAD = ".version 7.8\n.target {target}\n.address_size 64\n"
PTX_BODY = """
.visible .entry gr_empty()
{{
{pdl}    ret;
}}
.visible .entry gr_tiny(.param .u64 px, .param .u32 pn)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<5>;
{pdl}    ld.param.u64 %rd1, [px];
    ld.param.u32 %r1, [pn];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}}
"""


class Bare:
    """The bare probe's kernels through the driver API (libcuda), in torch's context."""

    def __init__(self, torch):
        cc = torch.cuda.get_device_capability()
        self.cu = ctypes.CDLL("libcuda.so.1")
        pdl = "    griddepcontrol.launch_dependents;\n    griddepcontrol.wait;\n" if cc >= (9, 0) else ""
        ptx = PTX_HEAD.format(target="sm_90" if cc >= (9, 0) else "sm_52") + PTX_BODY.format(pdl=pdl)
        self.mod = ctypes.c_void_p()
        self._ck(self.cu.cuModuleLoadData(ctypes.byref(self.mod), ctypes.c_char_p(ptx.encode())), "cuModuleLoadData")
        self.fn = {}
        for name in ("gr_empty", "gr_tiny"):
            f = ctypes.c_void_p()
            self._ck(self.cu.cuModuleGetFunction(ctypes.byref(f), self.mod, name.encode()), "cuModuleGetFunction")
            self.fn[name] = f

    def _ck(self, rc, what):
        if rc != 0:
            msg = "torch_node_state: %s failed: CUresult %d" % (what, rc)
            # printed first: raised inside a capture, torch's own capture error may replace it
            print(msg, file=sys.stderr, flush=True)
            raise RuntimeError(msg)

    def launch(self, tiny, stream, ptr=0, n=0):
        if tiny:
            p, m = ctypes.c_uint64(ptr), ctypes.c_uint32(n)
            args = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(p), ctypes.c_void_p),
                                         ctypes.cast(ctypes.byref(m), ctypes.c_void_p))
        else:
            args = None
        self._ck(self.cu.cuLaunchKernel(self.fn["gr_tiny" if tiny else "gr_empty"], 1, 1, 1, 256, 1, 1, 0,
                                        ctypes.c_void_p(stream), args, None), "cuLaunchKernel")


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
    xb = torch.zeros(256, device=dev)  # the bare tiny kernel's buffer
    adds = bare_adds = 0
    torch.cuda.synchronize()
    bare = Bare(torch)

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

    def capture_bare(tiny):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(s):
            with torch.cuda.graph(g, stream=s):
                for _ in range(a.k):
                    bare.launch(tiny, s.cuda_stream, xb.data_ptr(), xb.numel())
        torch.cuda.current_stream().wait_stream(s)
        return g

    out = {"tool": "torch_node_state", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "k": a.k, "method": "CUDA events around batches of graph replays, untraced; us per node"}
    # the bare kernels first: nothing but torch's initialisation and two zeros() before them
    gb = {kind: capture_bare(kind == "tiny") for kind in ("empty", "tiny")}
    out["bare_fresh"] = {kind: timed(torch, g, a.k) for kind, g in gb.items()}
    bare_adds += out["bare_fresh"]["tiny"]["replays"] * a.k
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
    out["bare_fresh_after"] = {kind: timed(torch, g, a.k) for kind, g in gb.items()}
    bare_adds += out["bare_fresh_after"]["tiny"]["replays"] * a.k
    gb_after = {kind: capture_bare(kind == "tiny") for kind in ("empty", "tiny")}
    out["bare_captured_after"] = {kind: timed(torch, g, a.k) for kind, g in gb_after.items()}
    bare_adds += out["bare_captured_after"]["tiny"]["replays"] * a.k

    def counted(t, n):  # fp32 counts exactly to 2^24; past that only "grew" can be checked
        got = t.cpu()
        return bool((got == float(n)).all()) if n < (1 << 24) else bool((got > 0).all())

    ok = counted(x, adds) and counted(xb, bare_adds)
    out["counts"] = {"torch_adds": adds, "bare_adds": bare_adds}
    out["verified"] = ok
    text = json.dumps(out)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
