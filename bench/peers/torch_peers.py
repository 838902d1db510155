#!/usr/bin/env python3
"""PyTorch peers of graphrun's bundled workloads, timed the way graphrun times them.

    python3 bench/peers/torch_peers.py [--only NAME[,NAME...]] [--json FILE] [--modes M[,M...]]
                                       [--device cuda|cpu] [--size default|small]

NAME: pointwise, launch_bound, decode_step, dlrm_small (default: all four). Modes, in this
order: eager, cuda_graph (the eager kernels captured in one torch.cuda.graph), compile
(torch.compile, dynamic=False), compile_reduce_overhead (torch.compile(mode="reduce-overhead"):
Inductor's kernels in CUDA-graph trees, every input and weight marked as a static address so the
trees do not copy them into their own buffers each call).

pointwise: y = relu((a + b) * c), fp32, n = 1e8 and n = 4096 (eager: three kernels; compile:
one Triton kernel). At n = 4096 also cuda_graph_unroll20: 20 steps in one torch.cuda.graph,
graphrun's --unroll 20 / --device-loop 20 peer (per step = replay / 20).
launch_bound: K = 1000 dependent x.add_(1) on 256 floats, eager and in torch.cuda.graph
(torch.compile would fuse the chain into one kernel, which is not a launch-cost peer).
decode_step: workloads/decode_step.json's function (docs/decode_step.md): L layers of RMSNorm
(Hugging Face's LlamaRMSNorm: statistics in fp32, the normalised x back in the dtype, times
w_norm), gate and up projections with LoRA, silu(g) * u, the down projection with LoRA and the
residual; weights [out, in] like torch.nn.Linear; fp32 accumulation (cuBLAS). Sizes: the default
(bf16 L16 d2048 f8192 r16 alpha32 B1) and fp32 L8 d1024 f4096 r16 B4 (issue #26's second size).
dlrm_small: workloads/dlrm_small.json (docs/dlrm_small.md) at B = 128 and 2048: bottom MLP
13-512-256-64-16 (ReLU), 26 tables of min(card_t, rows_cap = 1e6) rows x 16 pooled by sum
(F.embedding per table, the fast path in eager and under Inductor; --dlrm-emb bag:
nn.EmbeddingBag), Zipf(1.05) indices as graphrun draws them, pairwise dots of the 27 vectors (strict lower triangle, row by row), top MLP 367-512-256-1
(ReLU, ReLU, sigmoid); fp32 with TF32 off (graphrun's fused_tf32x3 claims fp32-level accuracy),
plus rows with TF32 on, labelled tf32 (cuda_graph and compile_reduce_overhead only: --tf32-modes).

Every figure: CUDA events around batches of steps after warm-up; median [p10, p90] over the
batches, untraced (host clock with --device cpu). Every mode's output is checked before it is
timed: pointwise against float64 on the host, launch_bound against the count of adds,
decode_step against the same model in fp32 (bf16 model) or float64 (fp32 model) with graphrun's
derived tolerance for x (docs/verification.md), dlrm_small against the same model in float64 at
the workload's tolerances (1e-4; tf32 rows 1e-2, 1e-2, 5e-3 for bot, R, y). A mode that raises is
recorded with its error and the run goes on. Progress goes to stderr (compiles take a while).
Exit codes: 0 ok, 1 a check or a mode failed, 2 bad arguments, 3 no PyTorch or no CUDA device.
--device cpu --size small runs the model code on the CPU (modes that need CUDA are skipped): a
debug aid for machines without a GPU, not a benchmark.
"""
import argparse
import copy
import json
import math
import sys
import time
import traceback

WORKLOADS = ("pointwise", "launch_bound", "decode_step", "dlrm_small")
MODES = ("eager", "cuda_graph", "compile", "compile_reduce_overhead")
CUDA_ONLY = {"cuda_graph", "compile_reduce_overhead", "cuda_graph_unroll20"}
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:7.1f} s] torch_peers: {msg}", file=sys.stderr, flush=True)


def timed(torch, step, steps, batches=20, warmup=None, cuda=True, per_launch=1):
    """Per-step time of step() (which runs per_launch steps): median [p10, p90] over batches."""
    warmup = warmup if warmup is not None else max(3, steps)
    for _ in range(warmup):
        step()
    per = []
    if cuda:
        torch.cuda.synchronize()
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        for _ in range(batches):
            e0.record()
            for _ in range(steps):
                step()
            e1.record()
            e1.synchronize()
            per.append(e0.elapsed_time(e1) * 1e3 / steps / per_launch)
    else:
        for _ in range(batches):
            t = time.perf_counter()
            for _ in range(steps):
                step()
            per.append((time.perf_counter() - t) * 1e6 / steps / per_launch)
    per.sort()

    def q(f):
        return per[int(f * (len(per) - 1) + 0.5)]

    return {"median": q(0.5), "p10": q(0.1), "p90": q(0.9), "batches": batches, "steps_per_batch": steps,
            "clock": "CUDA events" if cuda else "host perf_counter"}


def compare(torch, out, ref, rtol, u_store=0.0):
    """graphrun's check (docs/verification.md): finite, rel L2 <= rtol, and every element within
    6 rtol rms(ref) + max(rtol, 2 u) |ref|. Returns (ok, rel_l2, elements over the bound)."""
    o = out.detach().to(torch.float64).flatten()
    r = ref.detach().to(torch.float64).flatten()
    if not bool(torch.isfinite(o).all()) or not bool(torch.isfinite(r).all()):
        return False, float("nan"), -1
    rn = r.norm().item()
    err = (o - r).norm().item() / rn if rn > 0 else (o - r).norm().item()
    rms = rn / math.sqrt(max(1, r.numel()))
    bound = 6.0 * rtol * rms + max(rtol, 2.0 * u_store) * r.abs()
    over = int(((o - r).abs() > bound).sum().item())
    return err <= rtol and over == 0, err, over


def clone_out(o):
    if isinstance(o, (tuple, list)):
        return type(o)(clone_out(x) for x in o)
    return o.clone()


def capture(torch, fn, warm=3):
    """fn's kernels in one torch.cuda.graph (warmed up on a side stream first, as PyTorch asks);
    returns the graph and fn's output tensors inside the graph's pool."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    torch.cuda.synchronize()
    return graph, out


def run_modes(torch, a, rows, base, fn, args, check, steps, statics=(), modes=None, unroll=()):
    """Time fn(*args) in each mode after checking its output; append one row per mode.
    base: the case's fields (workload, case, sizes, bytes_per_step); check(out) -> (ok, info);
    statics: tensors marked as static addresses before reduce-overhead; unroll: extra modes
    cuda_graph_unrollN (N steps in one graph) for the N given."""
    cuda = a.device == "cuda"
    ok_all = True
    todo = list(a.modes if modes is None else modes) + [f"cuda_graph_unroll{n}" for n in unroll]
    for mode in todo:
        if mode in CUDA_ONLY and not cuda:
            log(f"{base['case']} {mode}: skipped (needs CUDA)")
            continue
        per_launch = 1
        row = {**base, "mode": mode}
        t_setup = time.time()
        try:
            if mode == "eager":
                step = lambda: fn(*args)  # noqa: E731
                get = step
            elif mode == "cuda_graph":
                graph, out = capture(torch, lambda: fn(*args))
                step = graph.replay
                get = lambda: (graph.replay(), out)[1]  # noqa: E731
            elif mode.startswith("cuda_graph_unroll"):
                per_launch = int(mode[len("cuda_graph_unroll"):])
                graph, out = capture(torch, lambda: [fn(*args) for _ in range(per_launch)][-1])
                step = graph.replay
                get = lambda: (graph.replay(), out)[1]  # noqa: E731
            elif mode == "compile":
                fc = torch.compile(fn, dynamic=False)
                log(f"{base['case']} compile: compiling (may take a minute)")
                get = step = lambda: fc(*args)  # noqa: E731
                step()
            elif mode == "compile_reduce_overhead":
                # static inputs: otherwise CUDA-graph trees copy every input that is not a
                # parameter into the graph's own buffers on every call (extra traffic per step)
                for t in statics:
                    torch._dynamo.mark_static_address(t)
                fr = torch.compile(fn, mode="reduce-overhead", dynamic=False)
                log(f"{base['case']} compile_reduce_overhead: compiling (may take a minute)")
                for _ in range(3):  # CUDA-graph trees record on the second or third call
                    fr(*args)
                step = lambda: fr(*args)  # noqa: E731
                get = lambda: clone_out(fr(*args))  # noqa: E731
            else:
                raise ValueError(f"unknown mode {mode}")
            if cuda:
                torch.cuda.synchronize()
            row["setup_s"] = time.time() - t_setup
            ok, info = check(get())
            row.update(info)
            row["verified"] = ok
            if not ok:
                log(f"{base['case']} {mode}: CHECK FAILED {info}")
            t = timed(torch, step, steps, cuda=cuda, per_launch=per_launch)
            row["step_us"] = t
            row["steps_per_launch"] = per_launch
            if base.get("bytes_per_step"):
                row["gbps"] = base["bytes_per_step"] / (t["median"] * 1e-6) / 1e9
            ok_all &= ok
            log(f"{base['case']} {mode}: {t['median']:.2f} us/step [{t['p10']:.2f}, {t['p90']:.2f}]"
                f" verified={ok} (setup {row['setup_s']:.1f} s)")
        except Exception as e:  # a mode that fails is a row saying so, and the run goes on
            traceback.print_exc(file=sys.stderr)
            row.update({"verified": False, "error": f"{type(e).__name__}: {e}"[:600]})
            log(f"{base['case']} {mode}: FAILED {row['error'][:200]}")
            ok_all = False
        rows.append(row)
    return ok_all


def reset(torch, cuda):
    """Between cases: drop compiled code and CUDA-graph trees so memory and Dynamo's cache of
    recompilations start fresh."""
    try:
        torch._dynamo.reset()
    except Exception:
        pass
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ---------- pointwise ----------

def pointwise(torch, a, n, rows):
    dev = a.device
    g = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(n, generator=g).to(dev)
    y = torch.randn(n, generator=g).to(dev)
    z = (torch.rand(n, generator=g) * 4 - 2).to(dev)
    ref = torch.relu((x.double() + y.double()) * z.double())

    def f(a_, b_, c_):
        return torch.relu((a_ + b_) * c_)

    def check(out):
        ok, err, over = compare(torch, out, ref, 1e-6)
        return ok, {"rel_l2": err, "over_bound": over}

    base = {"workload": "pointwise_fusion", "case": f"pointwise_n{n}", "n": n, "dtype": "fp32",
            "bytes_per_step": 16.0 * n}
    steps = 20 if n >= 10**7 else 500
    ok = run_modes(torch, a, rows, base, f, (x, y, z), check, steps, statics=(x, y, z),
                   unroll=(20,) if n <= 65536 else ())
    reset(torch, dev == "cuda")
    return ok


# ---------- launch_bound ----------

def launch_bound(torch, a, rows, K=1000, n=256):
    if a.device != "cuda":
        log("launch_bound: skipped (needs CUDA)")
        return True
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

    mine = []
    for mode, step, steps in (("eager", eager_step, 5), ("cuda_graph", graph_step, 20)):
        t = timed(torch, step, steps)
        mine.append({"workload": "launch_bound", "case": f"launch_bound_tiny_K{K}", "variant": "tiny",
                     "k": K, "mode": mode, "step_us": t, "steps_per_launch": 1,
                     "us_per_kernel": t["median"] / K})
    torch.cuda.synchronize()
    want = start + float(count[0] * K + count_warm)
    good = bool(torch.equal(x, want))
    for r in mine:
        r["verified"] = good
    rows.extend(mine)
    if not good:
        print("torch_peers: launch_bound: x does not equal start + adds", file=sys.stderr)
    return good


# ---------- decode_step ----------

def decode_model(torch):
    F = torch.nn.functional

    class DecodeMLP(torch.nn.Module):
        """workloads/decode_step.json's step: x [B, d] -> x after L LoRA MLP layers."""

        def __init__(self, layers, scale, eps):
            super().__init__()
            self.scale, self.eps = scale, eps
            self.layers = torch.nn.ModuleList()
            for p in layers:
                m = torch.nn.Module()
                for k, v in p.items():
                    setattr(m, k, torch.nn.Parameter(v, requires_grad=False))
                self.layers.append(m)

        def forward(self, x):
            s = self.scale
            for p in self.layers:
                # LlamaRMSNorm: mean of squares and rsqrt in fp32, the normalised x in the dtype
                xf = x.float()
                xn = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)
                h = p.w_norm * xn
                # LoRA as PEFT computes it (base + scale * B(A h)); add(alpha=s) is one kernel
                g = torch.add(F.linear(h, p.W_gate), F.linear(F.linear(h, p.A_gate), p.B_gate), alpha=s)
                u = torch.add(F.linear(h, p.W_up), F.linear(F.linear(h, p.A_up), p.B_up), alpha=s)
                act = F.silu(g) * u
                x = x + torch.add(F.linear(act, p.W_down), F.linear(F.linear(act, p.A_down), p.B_down),
                                  alpha=s)
            return x

    return DecodeMLP


UNIT = {"bf16": 2.0 ** -8, "fp16": 2.0 ** -11, "fp32": 2.0 ** -24}


def decode_step(torch, a, rows, dtype, L, d, f, r, B, alpha=None, eps=1e-5, seed=3):
    """One decode step from a fixed x: y = step(x). graphrun updates x in place step after step;
    the work per step is the same (x's 2 B d bytes aside)."""
    dev, cuda = a.device, a.device == "cuda"
    alpha = 2 * r if alpha is None else alpha
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
    case = f"decode_{dtype}_L{L}_d{d}_f{f}_r{r}_B{B}"
    log(f"{case}: building the model")
    g = torch.Generator(device=dev).manual_seed(seed)

    def normal(shape, std):
        return (torch.randn(shape, generator=g, device=dev, dtype=torch.float32) * std).to(tdt)

    layers = []
    for _ in range(L):
        layers.append({
            "w_norm": (torch.rand(d, generator=g, device=dev) + 0.5).to(tdt),
            "W_gate": normal((f, d), d ** -0.5), "W_up": normal((f, d), d ** -0.5),
            "W_down": normal((d, f), f ** -0.5),
            "A_gate": normal((r, d), d ** -0.5), "A_up": normal((r, d), d ** -0.5),
            "A_down": normal((r, f), f ** -0.5),
            "B_gate": normal((f, r), 0.25 * r ** -0.5), "B_up": normal((f, r), 0.25 * r ** -0.5),
            "B_down": normal((d, r), 0.25 * r ** -0.5)})
    DecodeMLP = decode_model(torch)
    model = DecodeMLP(layers, alpha / r, eps).eval()
    del layers
    x = normal((B, d), 1.0)
    # the same model one precision up: fp32 for a 2-byte model, float64 for fp32
    rdt = torch.float64 if dtype == "fp32" else torch.float32
    with torch.no_grad():
        ref_model = copy.deepcopy(model).to(rdt)
        ref = ref_model(x.to(rdt))
    del ref_model
    u = UNIT[dtype]
    # graphrun's derived tolerance for x (workloads/decode_step.json): 17 roundings per layer
    # to the dtype, L (d + f) fp32 additions
    rtol = 0.5 * math.sqrt(17 * L * u * u + L * (d + f) * UNIT["fp32"] ** 2)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    base = {"workload": "decode_step", "case": case, "dtype": dtype, "L": L, "d": d, "f": f, "r": r,
            "B": B, "alpha": alpha, "weight_bytes": weight_bytes,
            "bytes_per_step": float(weight_bytes + 2 * x.numel() * x.element_size()),
            "bytes_model": "every weight read once, x read and the new x written", "rtol": rtol}

    def check(out):
        ok, err, over = compare(torch, out, ref, rtol, u)
        return ok, {"rel_l2": err, "over_bound": over}

    def fn(x_):
        with torch.no_grad():
            return model(x_)

    steps = 20 if weight_bytes > 5e8 else 50
    if not cuda:
        steps = 3
    ok = run_modes(torch, a, rows, base, fn, (x,), check, steps,
                   statics=[x] + list(model.parameters()))
    del model
    reset(torch, cuda)
    return ok


# ---------- dlrm_small ----------

KAGGLE = (1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27,
          14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572)


def zipf_indices(torch, n, N, alpha, gen):
    """graphrun's synthetic indices (core/init.cu): a bounded continuous power law on [1, N + 1)
    by inverse CDF, rank k = floor(x) - 1, hot ranks scattered by k -> (k mul + add) mod N. Same
    distribution; the draws are torch's, not graphrun's counter-based ones."""
    uu = torch.rand(n, generator=gen, dtype=torch.float64)
    if abs(alpha - 1.0) < 1e-9:
        xx = torch.exp(uu * math.log(N + 1.0))
    else:
        xx = (((N + 1.0) ** (1.0 - alpha) - 1.0) * uu + 1.0) ** (1.0 / (1.0 - alpha))
    k = (torch.floor(xx).to(torch.int64) - 1).clamp(0, N - 1)
    mul = int(torch.randint(0, max(N, 1), (1,), generator=gen)) | 1
    while N > 1 and math.gcd(mul, N) != 1:
        mul += 2
    add = int(torch.randint(0, max(N, 1), (1,), generator=gen))
    return (k * (mul % max(N, 1)) + add) % max(N, 1)


def dlrm_model(torch):
    F = torch.nn.functional

    class DLRM(torch.nn.Module):
        """workloads/dlrm_small.json: returns (bot, R, y), the outputs graphrun checks."""

        def __init__(self, tables, D, bag, emb):
            super().__init__()
            self.D, self.bag, self.emb_form = D, bag, emb

            def mlp(sizes, last):
                layers = []
                for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:])):
                    lin = torch.nn.Linear(k, n)
                    layers += [lin, last if i == len(sizes) - 2 else torch.nn.ReLU()]
                return torch.nn.Sequential(*layers)

            self.bot = mlp([13, 512, 256, 64, D], torch.nn.ReLU())
            nt = len(tables)
            self.top = mlp([D + nt * (nt + 1) // 2, 512, 256, 1], torch.nn.Sigmoid())
            if emb == "bag":
                self.tables = torch.nn.ModuleList(torch.nn.EmbeddingBag(rows, D, mode="sum")
                                                  for rows in tables)
            else:
                self.tables = torch.nn.ParameterList(torch.nn.Parameter(torch.empty(rows, D))
                                                     for rows in tables)
            li, lj = torch.tril_indices(nt + 1, nt + 1, offset=-1)  # (i, j), j < i, row by row
            self.register_buffer("li", li)
            self.register_buffer("lj", lj)

        def lookup(self, t, idx, offsets):
            # The fast path: F.embedding per table (one gather kernel; bag = 1 needs no sum).
            # Inductor lowers aten.embedding into its own kernels (fused with the cat below),
            # while nn.EmbeddingBag's aten._embedding_bag is an Inductor fallback
            # (torch/_inductor/lowering.py make_fallback) that also launches its own helper
            # kernels; nn.EmbeddingBag (mode sum, 1-D indices and fixed offsets as in the
            # reference DLRM code) stays as --dlrm-emb bag.
            if self.emb_form == "bag":
                return self.tables[t](idx, offsets)
            e = F.embedding(idx, self.tables[t])
            return e if self.bag == 1 else e.view(-1, self.bag, self.D).sum(1)

        def forward(self, dense, idx, offsets):
            x = self.bot(dense)
            ly = [self.lookup(t, idx[t], offsets) for t in range(len(idx))]
            T = torch.cat([x] + ly, dim=1).view(x.shape[0], -1, self.D)
            Z = torch.bmm(T, T.transpose(1, 2))
            R = torch.cat([x, Z[:, self.li, self.lj]], dim=1)
            return x, R, self.top(R)

    return DLRM


def dlrm_small(torch, a, rows, B, rows_cap=1_000_000, D=16, bag=1, alpha=1.05, seed=4):
    dev, cuda = a.device, a.device == "cuda"
    tables = [min(c, rows_cap) for c in KAGGLE]
    log(f"dlrm B={B}: building the model ({sum(tables)} table rows, emb {a.dlrm_emb})")
    DLRM = dlrm_model(torch)
    model = DLRM(tables, D, bag, a.dlrm_emb).to(dev).eval()
    g = torch.Generator(device=dev).manual_seed(seed)
    with torch.no_grad():  # the workload's init: He-uniform weights, +-1/sqrt(in) biases, tables +-0.5
        for m in list(model.bot) + list(model.top):
            if isinstance(m, torch.nn.Linear):
                k = m.in_features
                m.weight.copy_((torch.rand(m.weight.shape, generator=g, device=dev) * 2 - 1) * math.sqrt(6 / k))
                m.bias.copy_((torch.rand(m.bias.shape, generator=g, device=dev) * 2 - 1) / math.sqrt(k))
        for t in range(len(tables)):
            w = model.tables[t].weight if a.dlrm_emb == "bag" else model.tables[t]
            w.copy_(torch.rand(w.shape, generator=g, device=dev) - 0.5)
    for p in model.parameters():
        p.requires_grad_(False)
    gc = torch.Generator(device="cpu").manual_seed(seed)
    dense = torch.randn(B, 13, generator=gc).to(dev)
    idx = [zipf_indices(torch, B * bag, n, alpha, gc).to(torch.int32).to(dev) for n in tables]
    offsets = torch.arange(0, B * bag, bag, dtype=torch.int32, device=dev)
    with torch.no_grad():
        ref_model = copy.deepcopy(model).to(torch.float64)
        ref = ref_model(dense.double(), idx, offsets)
    del ref_model
    mlp_bytes = sum(p.numel() * 4 for n_, p in model.named_parameters() if not n_.startswith("tables"))
    nbytes = float(mlp_bytes + B * bag * len(tables) * D * 4 + B * 13 * 4 + B * bag * len(tables) * 4 + B * 4)
    ok = True
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        tols = (1e-2, 1e-2, 5e-3) if tf32 else (1e-4, 1e-4, 1e-4)  # bot, R, y (the workload's)
        base = {"workload": "dlrm_small", "case": f"dlrm_B{B}_{'tf32' if tf32 else 'fp32'}", "B": B,
                "rows_cap": rows_cap, "D": D, "bag": bag, "math": "tf32" if tf32 else "fp32 (TF32 off)",
                "emb": a.dlrm_emb, "bytes_per_step": nbytes,
                "bytes_model": "MLP weights, gathered table rows, dense, indices and y; no activations"}

        def check(out, tols=tols):
            info, good = {}, True
            for name, o, r_, tol in zip(("bot", "R", "y"), out, ref, tols):
                okk, err, over = compare(torch, o, r_, tol)
                info[f"rel_l2_{name}"] = err
                info[f"over_bound_{name}"] = over
                good &= okk
            return good, info

        def fn(dense_, idx_, offsets_):
            with torch.no_grad():
                return model(dense_, idx_, offsets_)

        steps = 100 if cuda else 2
        modes = a.modes if not tf32 else [m for m in a.modes if m in a.tf32_modes]
        ok &= run_modes(torch, a, rows, base, fn, (dense, idx, offsets), check, steps,
                        statics=[dense, offsets] + idx + list(model.parameters()), modes=modes)
        reset(torch, cuda)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    del model
    reset(torch, cuda)
    return ok


def label(r):
    size = {"pointwise_fusion": lambda: f"n={r.get('n')}", "launch_bound": lambda: f"K={r.get('k')}",
            "decode_step": lambda: f"{r.get('dtype')} L{r.get('L')} d{r.get('d')} B{r.get('B')}",
            "dlrm_small": lambda: f"B={r.get('B')} {r.get('math', '').split()[0]}"}.get(r["workload"],
                                                                                       lambda: "")()
    return f"{r['workload']} {size} {r['mode']}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated: " + ", ".join(WORKLOADS) + " (default: all)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ", ".join(MODES))
    ap.add_argument("--tf32-modes", default="cuda_graph,compile_reduce_overhead",
                    help="dlrm_small modes also run with TF32 on (labelled tf32)")
    ap.add_argument("--dlrm-emb", choices=["gather", "bag"], default="gather",
                    help="dlrm lookups: F.embedding per table (default) or nn.EmbeddingBag(mode=sum)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="cpu: run the model code on the CPU (debug; CUDA-only modes skipped)")
    ap.add_argument("--size", choices=["default", "small"], default="default",
                    help="small: tiny sizes for a quick check of the code paths")
    ap.add_argument("--json", help="write the rows as JSON to FILE")
    a = ap.parse_args()
    only = WORKLOADS if not a.only else tuple(s.strip() for s in a.only.split(",") if s.strip())
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    a.tf32_modes = [m.strip() for m in a.tf32_modes.split(",") if m.strip()]
    bad = [w for w in only if w not in WORKLOADS] + [m for m in a.modes + a.tf32_modes if m not in MODES]
    if bad:
        ap.print_usage(sys.stderr)
        print(f"torch_peers: unknown workload or mode: {', '.join(bad)} (workloads: {', '.join(WORKLOADS)};"
              f" modes: {', '.join(MODES)})", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("torch_peers: PyTorch is not installed for this python3", file=sys.stderr)
        return 3
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_peers: no CUDA device (--device cpu runs the model code on the CPU)", file=sys.stderr)
        return 3
    # fp32 matmuls in fp32 unless a row says tf32 (PyTorch's default, made explicit), and fp32
    # accumulation for 2-byte matmuls as graphrun's kernels do (cuBLAS may otherwise reduce
    # split-K partial sums in the 2-byte type)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    small = a.size == "small"
    rows = []
    ok = True
    if "pointwise" in only:
        for n in ((4096, 1000) if small else (100_000_000, 4096)):
            ok &= pointwise(torch, a, n, rows)
    if "launch_bound" in only:
        ok &= launch_bound(torch, a, rows, K=50 if small else 1000)
    if "decode_step" in only:
        if small:
            ok &= decode_step(torch, a, rows, "bf16", L=2, d=64, f=256, r=8, B=1)
            ok &= decode_step(torch, a, rows, "fp32", L=2, d=32, f=128, r=8, B=4)
        else:
            ok &= decode_step(torch, a, rows, "bf16", L=16, d=2048, f=8192, r=16, B=1)
            ok &= decode_step(torch, a, rows, "fp32", L=8, d=1024, f=4096, r=16, B=4)
    if "dlrm_small" in only:
        for B in ((8, 32) if small else (128, 2048)):
            ok &= dlrm_small(torch, a, rows, B, rows_cap=1000 if small else 1_000_000)
    dev_name = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
    meta = {"tool": "torch_peers", "torch": torch.__version__, "device": dev_name, "size": a.size,
            "method": ("CUDA events per batch" if a.device == "cuda" else "host clock per batch")
            + ", median [p10, p90] over batches, untraced"}
    for r in rows:
        t = r.get("step_us")
        fig = f"{t['median']:10.2f} us [{t['p10']:.2f}, {t['p90']:.2f}]" if t else f"{'FAILED':>10} {r.get('error', '')[:60]}"
        print(f"{label(r):<58} {fig}  verified={r['verified']}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({**meta, "rows": rows}, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
