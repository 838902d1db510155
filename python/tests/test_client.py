"""The Python client without a GPU: against a scripted fake service (request encoding, progress,
typed errors, serving numpy arrays through shared memory) and against the real `graphrun serve`
on a machine without a device (status, a capture refused with no_device after validation, request
errors the service names by field), and lanes: the doorbell against a fake service side of the
control block in a thread. GPU tests are in test_gpu.py."""

import json
import os
import socket
import tempfile
import threading
import time

import pytest

import graphrun
from graphrun import client as gc
from graphrun import lane as gl

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FakeService:
    """A UNIX-socket server answering each request line with handler(request) -> list of reply
    objects (progress lines first, the final reply last), or None to close the connection."""

    def __init__(self, handler):
        self.dir = tempfile.mkdtemp(prefix="gr-fake-")
        self.path = os.path.join(self.dir, "s.sock")
        self.handler = handler
        self.requests = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            conn, _ = self.srv.accept()
        except OSError:
            return
        buf = b""
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    req = json.loads(line)
                    self.requests.append(req)
                    replies = self.handler(req)
                    if replies is None:
                        conn.shutdown(socket.SHUT_RDWR)
                        return
                    for r in replies:
                        r.setdefault("schema_version", 1)
                        r.setdefault("id", req.get("id"))
                        conn.sendall(json.dumps(r).encode() + b"\n")

    def close(self):
        self.srv.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.rmdir(self.dir)


def ok(cmd, **body):
    r = {"ok": True, "cmd": cmd}
    r.update(body)
    return r


def fail(code, field, message):
    return {"ok": False, "error": {"code": code, "field": field, "message": message,
                                   "exit_code": 2}}


@pytest.fixture
def fake():
    services = []

    def make(handler):
        s = FakeService(handler)
        services.append(s)
        return s

    yield make
    for s in services:
        s.close()


def test_request_encoding(fake):
    svc = fake(lambda req: [ok(req["cmd"], name="w", buffers=[])])
    c = graphrun.Client(svc.path, autostart=False)
    c.capture("workloads/launch_bound.json", sets={"K": 50}, pdl=True, unroll=4)
    c.replay(iters=100, batches=5)
    c.close()
    cap, rep = svc.requests
    assert cap["schema_version"] == 1 and cap["cmd"] == "capture"
    assert os.path.isabs(cap["workload"]) and cap["workload"].endswith("workloads/launch_bound.json")
    assert cap["sets"] == ["K=50"] and cap["pdl"] is True and cap["unroll"] == 4
    assert "name" not in cap  # None fields are not sent
    assert rep["cmd"] == "replay" and rep["iters"] == 100 and rep["batches"] == 5
    assert cap["id"] != rep["id"]


def test_progress_lines_and_callback(fake):
    def handler(req):
        return [{"progress": {"phase": "graph", "done": 1, "total": 2}},
                {"progress": {"phase": "graph", "done": 2, "total": 2}},
                ok("replay", iters=2)]

    svc = fake(handler)
    seen = []
    c = graphrun.Client(svc.path, autostart=False, on_progress=lambda *p: seen.append(p))
    assert c.replay(iters=2)["iters"] == 2
    assert seen == [("graph", 1, 2), ("graph", 2, 2)]
    assert svc.requests[0]["progress"] is True


@pytest.mark.parametrize("code,cls", [("bad_input", graphrun.BadInputError),
                                      ("no_device", graphrun.NoDeviceError),
                                      ("protocol", graphrun.ProtocolError),
                                      ("service", graphrun.ServiceError),
                                      ("verify", graphrun.RunError),
                                      ("something_new", graphrun.GraphrunError)])
def test_typed_errors(fake, code, cls):
    svc = fake(lambda req: [fail(code, "sets[0]", "B=0 is below the minimum 1")])
    c = graphrun.Client(svc.path, autostart=False)
    with pytest.raises(cls) as ei:
        c.capture("w.json", sets=["B=0"])
    assert ei.value.code == code and ei.value.field == "sets[0]"
    assert "B=0 is below the minimum 1" in str(ei.value)


def test_connection_closed_before_reply(fake):
    svc = fake(lambda req: None)
    c = graphrun.Client(svc.path, autostart=False)
    with pytest.raises(graphrun.ServiceError, match="closed the connection"):
        c.status()


def test_no_service_without_autostart():
    with pytest.raises(graphrun.ServiceError, match="no replay service answers"):
        graphrun.Client("/tmp/gr-no-such-dir/none.sock", autostart=False)


def test_default_socket(monkeypatch):
    monkeypatch.setenv("GRAPHRUN_SOCKET", "rel.sock")
    assert gc.default_socket() == os.path.abspath("rel.sock")
    monkeypatch.delenv("GRAPHRUN_SOCKET")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/7")
    assert gc.default_socket() == "/run/user/7/graphrun/graphrun.sock"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert gc.default_socket() == f"/tmp/graphrun-{os.geteuid()}/graphrun.sock"


def test_serve_numpy_through_shared_memory(fake):
    np = pytest.importorskip("numpy")
    from multiprocessing import shared_memory

    buffers = [{"name": "x", "dtype": "fp32", "shape": [4, 8], "bytes": 128, "output": False},
               {"name": "y", "dtype": "fp32", "shape": [4, 8], "bytes": 128, "output": True}]

    def handler(req):
        if req["cmd"] == "list":
            return [ok("list", graphs=[{"name": "g", "buffers": buffers}], latest="g")]
        # the service's side: read x from its segment, "run" y = 2 x + 1, write y to its segment
        (inp,), (out,) = req["inputs"], req["outputs"]
        assert inp["buffer"] == "x" and inp["shm"].startswith("/")
        sx = shared_memory.SharedMemory(name=inp["shm"][1:])
        sy = shared_memory.SharedMemory(name=out["shm"][1:])
        x = np.ndarray((4, 8), np.float32, buffer=sx.buf)
        np.ndarray((4, 8), np.float32, buffer=sy.buf)[...] = 2 * x + 1
        del x
        sx.close()
        sy.close()
        e = {"dtype": "fp32", "shape": [4, 8], "bytes": 128}
        return [ok("replay", served={"steps": 1, "graph_us": 3.0, "request_us": 20.0,
                                     "inputs": [dict(e, buffer="x", shm=inp["shm"])],
                                     "outputs": [dict(e, buffer="y", shm=out["shm"])]})]

    svc = fake(handler)
    c = graphrun.Client(svc.path, autostart=False)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    outs, served = c.serve("g", inputs={"x": x}, outputs=["y"])
    np.testing.assert_array_equal(outs["y"], 2 * x + 1)
    assert served["graph_us"] == 3.0
    # a second step reuses the same segments, with fresh data
    seg = svc.requests[-1]["inputs"][0]["shm"]
    outs, _ = c.serve("g", inputs={"x": x + 1}, outputs=["y"])
    np.testing.assert_array_equal(outs["y"], 2 * (x + 1) + 1)
    assert svc.requests[-1]["inputs"][0]["shm"] == seg
    assert os.path.exists("/dev/shm" + seg)
    with pytest.raises(graphrun.BadInputError, match="no buffer \"z\""):
        c.serve("g", inputs={"x": x}, outputs=["z"])
    # close() unlinks them
    c.close()
    assert not os.path.exists("/dev/shm" + seg)


# ---- the real service, on a machine without a GPU ----

def graphrun_bin():
    b = os.environ.get("GRAPHRUN_BIN") or os.path.join(REPO, "build", "graphrun")
    return b if os.access(b, os.X_OK) else None


@pytest.fixture
def service():
    exe = graphrun_bin()
    if not exe:
        pytest.skip("no graphrun executable (set GRAPHRUN_BIN or build into build/)")
    d = tempfile.mkdtemp(prefix="gr-py-")
    path = os.path.join(d, "s.sock")
    c = graphrun.Client(path, autostart=True, graphrun=exe, timeout=120)
    yield c
    try:
        c.stop()
    except graphrun.GraphrunError:
        pass
    c.close()


def test_real_service_status_and_request_errors(service):
    st = service.status()
    assert st["protocol"] == 1 and st["pid"] > 0
    assert service.list() == []
    # the service names the field at fault
    with pytest.raises(graphrun.ProtocolError) as ei:
        service.request("replay", inputs=[{"buffer": "x", "file": "relative.npy"}])
    assert ei.value.field == "inputs[0].file" and "absolute path" in ei.value.message
    with pytest.raises(graphrun.ProtocolError) as ei:
        service.request("replay", iters=10, outputs=[{"buffer": "y", "shm": "/seg"}])
    assert ei.value.field == "iters" and "serves one step" in ei.value.message
    with pytest.raises(graphrun.ProtocolError) as ei:
        service.request("capture", workload="/w.json", unroll=0)
    assert ei.value.field == "unroll"
    # nothing held: a served step names the problem
    if st["device"]["state"] != "ready":
        with pytest.raises(graphrun.NoDeviceError):
            service.serve_files(inputs={"x": "/tmp/x.npy"})


def test_real_service_capture_without_device_validates_first(service):
    st = service.status()
    if st["device"]["state"] == "ready":
        pytest.skip("a GPU is present: test_gpu.py covers captures")
    with pytest.raises(graphrun.BadInputError) as ei:
        service.capture(os.path.join(REPO, "workloads", "launch_bound.json"), sets={"K": 0})
    assert "K" in ei.value.message
    with pytest.raises(graphrun.NoDeviceError) as ei:
        service.capture(os.path.join(REPO, "workloads", "launch_bound.json"), sets={"K": 20})
    assert "the workload is valid" in ei.value.message


def test_buckets_and_update_encoding(fake):
    np = pytest.importorskip("numpy")
    from multiprocessing import shared_memory

    bufs = lambda b: [{"name": "x", "dtype": "fp32", "shape": [b, 4], "bytes": 16 * b,
                       "output": True}]
    graphs = [{"name": f"g.B{b}", "buffers": bufs(b), "bucket": {"group": "g", "value": b}}
              for b in (1, 8)]

    def handler(req):
        if req["cmd"] == "capture":
            return [ok("capture", name="g", buckets=graphs, shared_bytes=128, separate_bytes=144)]
        if req["cmd"] == "list":
            return [ok("list", graphs=graphs)]
        # a served step of 3 rows through bucket 8: the output segment must hold 3 rows
        out = req["outputs"][0]
        seg = shared_memory.SharedMemory(name=out["shm"][1:])
        assert seg.size >= 3 * 16
        np.ndarray((3, 4), np.float32, buffer=seg.buf)[...] = 7
        seg.close()
        e = {"buffer": "x", "dtype": "fp32", "shape": [3, 4], "bytes": 48, "shm": out["shm"]}
        return [ok("replay", served={"steps": 1, "graph_us": 1.0, "outputs": [e], "inputs": []},
                   bucket_run={"param": "B", "value": 8, "asked": 3})]

    svc = fake(handler)
    c = graphrun.Client(svc.path, autostart=False)
    c.capture("w.json", buckets=("B", [1, 8]), name="g")
    assert svc.requests[0]["buckets"] == "B=1,8" and "update" not in svc.requests[0]
    out, _ = c.serve("g", outputs=["x"], batch=3)
    assert out["x"].shape == (3, 4) and (out["x"] == 7).all()
    assert svc.requests[-1]["batch"] == 3


# ---- lanes: the doorbell against a fake service's side of the control block ----


class FakeLaneServer:
    """The service's side of a lane (replay/lane.c: gr_lane_ctl_init, gr_lane_await_request,
    gr_lane_publish, gr_lane_mark_closed) in a thread, on its own mapping of the segment (as
    another process would have), written with struct at the protocol's offsets: a step computes
    each output region = its input region + 1 (fp32). It spins spin_s after a step, then sleeps
    on req_seq's futex; hooks: fail {seq: (status, message)}, close_at (a seq: mark the lane
    closed instead of answering), delay_s (before publishing: the client goes to sleep)."""

    def __init__(self, shm, pairs, lane_id=7, spin_s=0.002, delay_s=0.0, fail=None, close_at=None):
        import mmap
        import struct

        self.struct = struct
        fd = os.open("/dev/shm" + shm, os.O_RDWR)
        self.mm = mmap.mmap(fd, os.fstat(fd).st_size)
        os.close(fd)
        self.addr = gl.buffer_address(self.mm)
        self.pairs = pairs  # [(in_offset, out_offset, nbytes)]
        self.spin_s, self.delay_s = spin_s, delay_s
        self.fail, self.close_at = fail or {}, close_at
        self.woken = 0  # futex sleeps ended by the client's wake (not the 1 ms timeout)
        self.client_wakes = 0  # publishes that found client_waiting and woke it
        self.stop = False
        mm = self.mm
        mm[0:gl.HEADER_BYTES] = bytes(gl.HEADER_BYTES)
        struct.pack_into("<QIIQ", mm, 0, gl.MAGIC, gl.VERSION, 0, lane_id)
        struct.pack_into("<I", mm, 12, gl.OPEN)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _get(self, fmt, off):
        return self.struct.unpack_from(fmt, self.mm, off)[0]

    def _put(self, fmt, off, v):
        self.struct.pack_into(fmt, self.mm, off, v)

    def _await(self, done):
        until = time.perf_counter() + self.spin_s
        while not self.stop:
            s = self._get("<Q", 64)
            if s != done:
                return s
            if time.perf_counter() < until:
                continue
            self._put("<I", 72, 1)
            if self._get("<Q", 64) == done and not self.stop:
                if gl.futex_wait(self.addr + 64, done) == 0:
                    self.woken += 1
            self._put("<I", 72, 0)
            until = 0
        return None

    def _run(self):
        done = 0
        while True:
            seq = self._await(done)
            if seq is None:
                return
            t0 = time.perf_counter()
            if seq == self.close_at:
                msg = b"graph \"g\" was dropped"
                self.mm[256:256 + len(msg) + 1] = msg + b"\0"
                self._put("<I", 12, gl.CLOSED)
                gl.futex_wake(self.addr + 128)
                return
            if self.delay_s:
                time.sleep(self.delay_s)
            status, msg = self.fail.get(seq, (0, ""))
            if status == 0:
                for i, o, n in self.pairs:
                    fmt = f"<{n // 4}f"
                    x = self.struct.unpack_from(fmt, self.mm, i)
                    self.struct.pack_into(fmt, self.mm, o, *(v + 1 for v in x))
            self._put("<i", 136, status)
            self._put("<d", 144, 1.5)
            self._put("<d", 152, (time.perf_counter() - t0) * 1e6)
            self._put("<d", 160, 0.0)
            if status == 0:
                self._put("<Q", 168, self._get("<Q", 168) + 1)
            m = msg.encode()
            self.mm[256:256 + len(m) + 1] = m + b"\0"
            self._put("<Q", 128, seq)
            done = seq
            if self._get("<I", 140):
                self.client_wakes += 1
                gl.futex_wake(self.addr + 128)

    def close(self):
        self.stop = True
        gl.futex_wake(self.addr + 64)
        self.thread.join(5)
        self.mm.close()


LANE_ENTRY = {"dtype": "fp32", "shape": [4, 8], "bytes": 128}


@pytest.fixture
def lane_segment():
    """A segment the test makes (4096-byte header, x at 4096, y at 4224), a Lane attached to it
    without a service, and a maker of the fake server's side."""
    pytest.importorskip("numpy")
    if gl._syscall is None:
        pytest.skip("no futex syscall on this platform")
    import mmap
    import sys

    shm, mm = gl._create_segment(8192)
    lane = {"id": 7, "graph": "g", "shm": shm, "segment_bytes": 8192,
            "inputs": [dict(LANE_ENTRY, buffer="x", offset=4096)],
            "outputs": [dict(LANE_ENTRY, buffer="y", offset=4224)]}
    servers = []

    def serve(**kw):
        s = FakeLaneServer(shm, [(4096, 4224, 128)], **kw)
        servers.append(s)
        return s

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # two Python threads spinning: hand the GIL over quickly
    ln = gl.Lane._attach(mm, lane, shm=shm)
    assert isinstance(mm, mmap.mmap) and os.path.exists("/dev/shm" + shm)
    yield ln, serve
    sys.setswitchinterval(old)
    for s in servers:
        s.close()
    ln.close()
    assert not os.path.exists("/dev/shm" + shm)


def test_lane_without_numpy(monkeypatch):
    import struct
    import sys

    if gl._syscall is None:
        pytest.skip("no futex syscall on this platform")
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy fails: memoryview slices
    shm, mm = gl._create_segment(8192)
    srv = FakeLaneServer(shm, [(4096, 4224, 128)])
    lane = {"id": 8, "graph": "g", "inputs": [dict(LANE_ENTRY, buffer="x", offset=4096)],
            "outputs": [dict(LANE_ENTRY, buffer="y", offset=4224)]}
    with gl.Lane._attach(mm, lane, shm=shm) as ln:
        x, y = ln.inputs["x"], ln.outputs["y"]
        assert isinstance(x, memoryview) and x.nbytes == 128 and not x.readonly
        for k in range(3):
            x[:] = struct.pack("<32f", *range(k, k + 32))
            assert ln.step(timeout=5)["seq"] == k + 1
            assert struct.unpack("<32f", y) == tuple(float(v + 1) for v in range(k, k + 32))
    srv.close()
    with pytest.raises(ValueError):
        x.tobytes()  # released at close: an error, not a dangling pointer
    assert ln.closed and not os.path.exists("/dev/shm" + shm)


def test_lane_control_block_layout():
    assert gl._Ctl.req_seq.offset == 64 and gl._Ctl.done_seq.offset == 128
    assert gl._Ctl.client_waiting.offset == 140 and gl._Ctl.message.offset == 256
    assert gl.MAGIC.to_bytes(8, "little").rstrip(b"\0") == b"GRLANE1"
    assert gl.STATUS_CODES[2] == "bad_input" and gl.STATUS_CODES[10] == "service"
    ins, outs, size = gl.layout({"a": {"bytes": 10}, "b": {"bytes": 100}, "y": {"bytes": 64}},
                                ["a", "b"], ["y", "a"])
    assert ins == [("a", 4096, 10), ("b", 4160, 100)]
    assert outs == [("y", 4288, 64), ("a", 4352, 10)]  # an input can be an output too
    assert size % 4096 == 0 and size >= 4362
    with pytest.raises(graphrun.BadInputError, match="no buffer \"z\"") as ei:
        gl.layout({"a": {"bytes": 4}}, ["a"], ["z"])
    assert ei.value.field == "outputs[0].buffer"
    with pytest.raises(graphrun.BadInputError, match="named twice"):
        gl.layout({"a": {"bytes": 4}}, ["a", "a"], [])


def test_lane_rows_reach_the_control_block(lane_segment):
    """step(rows=n) writes the rows field (offset 76) the service reads for that step; a step
    without rows writes 0 (the lane's default)."""
    ln, serve = lane_segment
    seen = []
    srv = serve()
    orig = srv._put

    def spy(fmt, off, v):
        if off == 128:  # done_seq: the step is being published; record the rows it ran with
            seen.append(srv._get("<I", 76))
        orig(fmt, off, v)
    srv._put = spy
    ln.step(timeout=5, rows=3)
    ln.step(timeout=5)
    ln.step(timeout=5, rows=8)
    assert seen == [3, 0, 8]
    assert gl._Ctl.rows.offset == 76


def test_lane_steps_round_trip(lane_segment):
    np = pytest.importorskip("numpy")
    ln, serve = lane_segment
    srv = serve(spin_s=0.002)
    x, y = ln.inputs["x"], ln.outputs["y"]
    assert x.shape == (4, 8) and x.dtype == np.float32 and y.shape == (4, 8)
    base = np.arange(32, dtype=np.float32).reshape(4, 8)
    t0 = time.perf_counter()
    n = 300
    for i in range(n):
        x[...] = base * i
        t = ln.step(timeout=5, spin_s=0.05)
        np.testing.assert_array_equal(y, base * i + 1)
        assert t["seq"] == i + 1 and t["graph_us"] == 1.5 and t["step_us"] >= 0
    per_step = (time.perf_counter() - t0) / n * 1e6
    print(f"\n    lane round trip against a fake server thread: {per_step:.1f} us per step")
    assert ln.steps == n
    # pauses longer than the server's spin: it sleeps on req_seq's futex and the ring wakes it
    for i in range(20):
        time.sleep(0.005)
        x[...] = -i
        ln.step(timeout=5, spin_s=0.05)
        assert (y == 1 - i).all()
    assert srv.woken > 0
    # no spinning on the client's side: it sleeps on done_seq's futex, the publish wakes it
    srv.delay_s = 0.003
    for i in range(20):
        x[...] = i
        ln.step(timeout=5, spin_s=0)
        assert (y == i + 1).all()
    assert srv.client_wakes > 0
    assert ln.state == gl.OPEN and ln.steps == n + 40


def test_lane_step_failure_raises_typed_error_and_lane_stays_open(lane_segment):
    ln, serve = lane_segment
    serve(fail={2: (2, "inputs[0]: row 3 is not finite"), 3: (5, "an illegal address")})
    ln.step(timeout=5)
    with pytest.raises(graphrun.BadInputError) as ei:
        ln.step(timeout=5)
    assert ei.value.code == "bad_input" and "lane 7 step 2: inputs[0]: row 3 is not finite" in \
        ei.value.message
    with pytest.raises(graphrun.RunError) as ei:
        ln.step(timeout=5)
    assert ei.value.code == "cuda" and "an illegal address" in ei.value.message
    ln.step(timeout=5)
    assert ln.steps == 2


def test_lane_closed_by_service(lane_segment):
    ln, serve = lane_segment
    serve(close_at=3, delay_s=0.0)
    ln.step(timeout=5)
    ln.step(timeout=5)
    with pytest.raises(graphrun.ServiceError, match="closed during the step: graph \"g\" was "
                       "dropped"):
        ln.step(timeout=5, spin_s=0)
    assert ln.state == gl.CLOSED
    with pytest.raises(graphrun.ServiceError, match="lane 7 is closed: graph \"g\" was dropped"):
        ln.step(timeout=5)


def test_lane_step_timeout_without_server(lane_segment):
    import struct

    ln, _ = lane_segment
    with pytest.raises(graphrun.ProtocolError, match="not a lane's control block"):
        ln.step(timeout=0.05)  # nobody initialised the block
    struct.pack_into("<QII", ln._mm, 0, gl.MAGIC, gl.VERSION, gl.OPEN)
    t0 = time.perf_counter()
    with pytest.raises(graphrun.ServiceError, match="step 1 not answered within 50 ms"):
        ln.step(timeout=0.05, spin_s=0.01)
    assert 0.05 <= time.perf_counter() - t0 < 1


def test_open_lane_through_the_service(fake):
    np = pytest.importorskip("numpy")
    if gl._syscall is None:
        pytest.skip("no futex syscall on this platform")
    buffers = [{"name": "x", "dtype": "fp32", "shape": [3, 5], "bytes": 60, "output": False},
               {"name": "y", "dtype": "fp32", "shape": [3, 5], "bytes": 60, "output": True}]
    servers = []

    def handler(req):
        if req["cmd"] == "list":
            return [ok("list", graphs=[{"name": "g", "buffers": buffers}], latest="g")]
        if req["cmd"] == "status":
            return [ok("status", latest="g")]
        if req["cmd"] == "lane_close":
            servers.pop().close()
            return [ok("lane_close", lane={"id": req["lane"], "steps": 2})]
        assert req["cmd"] == "lane_open"
        if req.get("spin_us") == 0:
            return [fail("bad_input", "inputs[0].offset", "offset 12 lies in the control block")]
        (i,), (o,) = req["inputs"], req["outputs"]
        servers.append(FakeLaneServer(req["shm"], [(i["offset"], o["offset"], 60)], lane_id=3))
        e = {"dtype": "fp32", "shape": [3, 5], "bytes": 60}
        return [ok("lane_open", lane={"id": 3, "graph": "g", "shm": req["shm"],
                                      "segment_bytes": 8192, "spin_us": 2000,
                                      "inputs": [dict(e, buffer="x", offset=i["offset"])],
                                      "outputs": [dict(e, buffer="y", offset=o["offset"])]})]

    svc = fake(handler)
    c = graphrun.Client(svc.path, autostart=False)
    with c.open_lane(inputs=["x"], outputs=["y"]) as ln:
        req = svc.requests[-1]
        assert req["name"] == "g" and req["shm"].startswith(f"/graphrun-lane-{os.getpid()}-")
        assert req["inputs"] == [{"buffer": "x", "offset": 4096}]
        assert req["outputs"] == [{"buffer": "y", "offset": 4160}]  # 64-byte aligned
        assert "batch" not in req and "spin_us" not in req
        assert os.path.getsize("/dev/shm" + req["shm"]) == 8192
        assert ln.id == 3 and ln.graph == "g" and c._lanes == {3: ln}
        for k in range(2):
            ln.inputs["x"][...] = np.full((3, 5), k, np.float32)
            ln.step(timeout=5)
            assert (ln.outputs["y"] == k + 1).all()
        y = ln.outputs["y"]  # a view kept past close: the mapping stays until it goes
    assert svc.requests[-1]["cmd"] == "lane_close" and svc.requests[-1]["lane"] == 3
    assert not os.path.exists("/dev/shm" + req["shm"]) and ln.closed and c._lanes == {}
    assert (y == 2).all()
    with pytest.raises(graphrun.ServiceError, match="lane 3 is closed"):
        ln.step()
    # a refused lane_open removes its segment and raises the typed error with the field
    with pytest.raises(graphrun.BadInputError) as ei:
        c.open_lane("g", inputs=["x"], outputs=["y"], spin_us=0)
    assert ei.value.field == "inputs[0].offset"
    shm = svc.requests[-1]["shm"]
    assert svc.requests[-1]["spin_us"] == 0 and not os.path.exists("/dev/shm" + shm)
    # an unknown buffer is refused before anything is made (only the fresh `list` that sizes
    # the buffers goes out: no lane_open, no segment)
    n = len(svc.requests)
    with pytest.raises(graphrun.BadInputError, match="no buffer \"q\""):
        c.open_lane("g", outputs=["q"])
    assert [r["cmd"] for r in svc.requests[n:]] == ["list"]
    # close() of the client closes the lanes still open (the service closes its side when the
    # connection ends: no lane_close)
    ln2 = c.open_lane("g", inputs="x", outputs="y")
    shm2 = ln2.shm
    c.close()
    assert ln2.closed and not os.path.exists("/dev/shm" + shm2)
    assert svc.requests[-1]["cmd"] == "lane_open"
    servers.pop().close()
