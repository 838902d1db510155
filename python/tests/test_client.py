"""The Python client without a GPU: against a scripted fake service (request encoding, progress,
typed errors, serving numpy arrays through shared memory) and against the real `graphrun serve`
on a machine without a device (status, a capture refused with no_device after validation, request
errors the service names by field). GPU tests are in test_gpu.py."""

import json
import os
import socket
import tempfile
import threading

import pytest

import graphrun
from graphrun import client as gc

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
