"""A client of graphrun's replay service (replay/PROTOCOL.md): newline-delimited JSON over a UNIX
socket. Standard library only; numpy is used when given arrays (inputs and outputs of a served
step travel through POSIX shared memory, not through the socket)."""

import json
import os
import socket
import subprocess
import time

SCHEMA_VERSION = 1


class GraphrunError(Exception):
    """A failed request: `code` is the service's error code name ("bad_input", "no_device", ...),
    `field` the request field at fault ("" for none), `message` the service's message, `reply`
    the whole reply object."""

    def __init__(self, code, field, message, reply=None):
        self.code = code
        self.field = field
        self.message = message
        self.reply = reply or {}
        where = f" [{field}]" if field else ""
        super().__init__(f"{code}{where}: {message}")


class BadInputError(GraphrunError):
    """bad_input / usage: the request names something wrong (workload, buffer, file, params)."""


class NoDeviceError(GraphrunError):
    """no_device: the service has no usable CUDA device."""


class ProtocolError(GraphrunError):
    """protocol: the request itself is malformed (a client bug)."""


class ServiceError(GraphrunError):
    """service: limits (graphs, memory, queue), cancellation, a service going away."""


class RunError(GraphrunError):
    """capture / verify / cuda: the GPU work failed or did not verify."""


_CLASSES = {
    "bad_input": BadInputError,
    "usage": BadInputError,
    "io": BadInputError,
    "no_device": NoDeviceError,
    "protocol": ProtocolError,
    "service": ServiceError,
    "capture": RunError,
    "verify": RunError,
    "cuda": RunError,
}


def error_for(reply):
    """The exception a failed reply raises (its class chosen by the error code)."""
    err = reply.get("error") or {}
    code = err.get("code", "internal")
    cls = _CLASSES.get(code, GraphrunError)
    return cls(code, err.get("field", ""), err.get("message", ""), reply)


def default_socket():
    """The socket path graphrun itself uses: $GRAPHRUN_SOCKET, else
    $XDG_RUNTIME_DIR/graphrun/graphrun.sock, else /tmp/graphrun-UID/graphrun.sock."""
    env = os.environ.get("GRAPHRUN_SOCKET")
    if env:
        return os.path.abspath(env)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and xdg.startswith("/"):
        return os.path.join(xdg, "graphrun", "graphrun.sock")
    return f"/tmp/graphrun-{os.geteuid()}/graphrun.sock"


class Client:
    """One connection to the replay service.

    socket: the service's socket (default: as graphrun finds it). autostart: when no service
    answers, start one (`graphrun serve --socket PATH`, in the background) with the `graphrun`
    executable (the GRAPHRUN environment variable or PATH). timeout: seconds to wait for a reply
    (None: no limit; captures and long replays take their time). on_progress(phase, done,
    total) is called for progress lines when given."""

    def __init__(self, socket_path=None, autostart=True, graphrun=None, timeout=None,
                 on_progress=None):
        self.socket_path = os.path.abspath(socket_path) if socket_path else default_socket()
        self.graphrun = graphrun or os.environ.get("GRAPHRUN", "graphrun")
        self.timeout = timeout
        self.on_progress = on_progress
        self._next_id = 1
        self._sock = None
        self._buf = b""
        self._graphs = {}  # name -> buffers (from capture/list replies), to size outputs
        self._segs = {}  # (role, buffer, bytes) -> SharedMemory reused by serve(), unlinked at close
        self._lanes = {}  # id -> Lane (open_lane), closed by close()
        self._connect(autostart)

    # ---- connection ----

    def _try_connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.socket_path)
        except OSError:
            s.close()
            return None
        s.settimeout(self.timeout)
        return s

    def _connect(self, autostart):
        self._sock = self._try_connect()
        if self._sock:
            return
        if not autostart:
            raise ServiceError("service", "", f"no replay service answers at {self.socket_path} "
                               "(start one with `graphrun serve`, or pass autostart=True)")
        try:
            proc = subprocess.run([self.graphrun, "serve", "--socket", self.socket_path],
                                  capture_output=True, text=True, timeout=60)
        except FileNotFoundError:
            raise ServiceError("service", "", f"cannot start a service: no executable "
                               f"\"{self.graphrun}\" (set GRAPHRUN or pass graphrun=)") from None
        if proc.returncode != 0:
            raise ServiceError("service", "", f"`{self.graphrun} serve` failed (exit "
                               f"{proc.returncode}): {proc.stderr.strip()}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self._sock = self._try_connect()
            if self._sock:
                return
            time.sleep(0.05)
        raise ServiceError("service", "", f"a service was started but does not answer at "
                           f"{self.socket_path}")

    def close(self):
        for lane in list(self._lanes.values()):
            lane.close(notify=False)  # the connection's end closes them in the service
        self._lanes = {}
        for seg in self._segs.values():
            try:
                seg.close()
                seg.unlink()
            except (OSError, FileNotFoundError):
                pass
        self._segs = {}
        if self._sock:
            self._sock.close()
            self._sock = None

    def _segment(self, role, buffer, nbytes):
        """A shared-memory segment of nbytes for buffer's role ("in"/"out"), made on first use
        and reused by later serve() calls (creating and unlinking one per request costs more
        than a small step's copies); close() unlinks them."""
        from multiprocessing import shared_memory

        key = (role, buffer, max(nbytes, 1))
        seg = self._segs.get(key)
        if seg is None:
            seg = shared_memory.SharedMemory(create=True, size=key[2])
            self._segs[key] = seg
        return seg

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- requests ----

    def _read_line(self):
        while b"\n" not in self._buf:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise ServiceError("service", "", "the service closed the connection before "
                                   "its reply (see its log next to the socket)")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def request(self, cmd, **fields):
        """Sends {"schema_version": 1, "cmd": cmd, "id": N, **fields} and returns the final
        reply (a dict) when it is ok, else raises the GraphrunError subclass of its code."""
        if self._sock is None:
            raise ServiceError("service", "", "the client is closed")
        rid = self._next_id
        self._next_id += 1
        msg = {"schema_version": SCHEMA_VERSION, "cmd": cmd, "id": rid}
        msg.update({k: v for k, v in fields.items() if v is not None})
        if self.on_progress:
            msg.setdefault("progress", True)
        self._sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = json.loads(self._read_line())
            if "progress" in reply:
                p = reply["progress"]
                if self.on_progress:
                    self.on_progress(p.get("phase"), p.get("done"), p.get("total"))
                continue
            if reply.get("ok"):
                return reply
            raise error_for(reply)

    # ---- commands ----

    def status(self):
        return self.request("status")

    def list(self):
        reply = self.request("list")
        for g in reply.get("graphs", []):
            self._graphs[g["name"]] = g.get("buffers", [])
        return reply.get("graphs", [])

    def capture(self, workload, name=None, sets=None, variant=None, capture_mode=None, force=False,
                cpu_reference=True, pdl=None, unroll=1, input=None, capture_check=True,
                buckets=None, update=False):
        """Captures WORKLOAD (a path) in the service; sets: {"B": 8} or ["B=8"]. buckets:
        "B=1,2,4,8" or ("B", [1, 2, 4, 8]): one graph per value over shared buffers. update: with
        name of a held graph, update it in place (cudaGraphExecUpdate) when the topology allows.
        pdl: None (programmatic dependent launch where the GPU has it), True (required), False.
        Returns the reply: name, hash, nodes, buffers, report_text, report (`graphrun run
        --json`), update; with buckets: name, buckets (their graph objects), shared_bytes. A
        capture whose content (workload, variant, params, options) a held graph already has is
        not captured again: the reply is that graph's, with its own name and "reused": true, so
        address the graph by the reply's name (force=True captures it again)."""
        if isinstance(sets, dict):
            sets = [f"{k}={v}" for k, v in sets.items()]
        if isinstance(buckets, (tuple, list)):
            buckets = f"{buckets[0]}=" + ",".join(str(v) for v in buckets[1])
        reply = self.request(
            "capture", workload=os.path.abspath(workload), name=name, sets=sets, variant=variant,
            capture_mode=capture_mode, force=force, cpu_reference=cpu_reference, pdl=pdl,
            unroll=unroll, input=os.path.abspath(input) if input else None,
            capture_check=capture_check, buckets=buckets, update=update or None)
        for g in reply.get("buckets", []):
            self._graphs[g["name"]] = g.get("buffers", [])
        if "buckets" not in reply:
            self._graphs[reply["name"]] = reply.get("buffers", [])
        return reply

    def replay(self, name=None, iters=1000, warmup=None, batches=20, compare_eager=False,
               batch=None):
        """Times replays of graph NAME (default: the latest capture); with batch, NAME is a
        --buckets group and its smallest bucket >= batch runs (the reply's "bucket_run"). Returns
        the reply, whose "report" has run's timing ("graph_replay", and "eager" with
        compare_eager)."""
        return self.request("replay", name=name, iters=iters, warmup=warmup, batches=batches,
                            compare_eager=compare_eager, batch=batch)

    def drop(self, name):
        self._graphs.pop(name, None)
        return self.request("drop", name=name)

    def stop(self):
        return self.request("stop")

    # ---- serving ----

    def _buffers(self, name):
        """The buffers of graph NAME, or of the largest bucket of the group NAME."""
        graphs = self.list() if name not in self._graphs else None
        if name in self._graphs:
            return {b["name"]: b for b in self._graphs[name]}
        group = [g for g in graphs or [] if (g.get("bucket") or {}).get("group") == name]
        if group:
            g = max(group, key=lambda g: g["bucket"]["value"])
            return {b["name"]: b for b in g.get("buffers", [])}
        raise BadInputError("usage", "name", f"no graph named \"{name}\" is held")

    def serve_files(self, name=None, inputs=None, outputs=None, batch=None):
        """One served step with files: inputs {buffer: path (.npy or raw)}, outputs {buffer:
        path}. Returns the reply's "served" object (timings, buffers)."""
        ins = [{"buffer": b, "file": os.path.abspath(p)} for b, p in (inputs or {}).items()]
        outs = [{"buffer": b, "file": os.path.abspath(p)} for b, p in (outputs or {}).items()]
        return self.request("replay", name=name, inputs=ins or None,
                            outputs=outs or None, batch=batch)["served"]

    def serve(self, name=None, inputs=None, outputs=(), batch=None):
        """One served step with numpy arrays: inputs {buffer: array} are copied into the graph's
        buffers (their dtype and shape must match the buffer's), the step is replayed once, and
        the buffers named in outputs come back as arrays. Data travels through POSIX shared
        memory. With batch (a --buckets group NAME), the smallest bucket >= batch runs: inputs
        carry `batch` rows (padded by the service), outputs come back with `batch` rows. Returns
        (outputs dict, the reply's "served" object)."""
        import numpy as np  # optional dependency, needed only here

        if name is None:
            st = self.status()
            name = st.get("latest") or ""
        bufs = self._buffers(name) if name else {}
        ins, outs = [], []
        for b, arr in (inputs or {}).items():
            a = np.ascontiguousarray(arr)
            seg = self._segment("in", b, a.nbytes)
            np.ndarray(a.shape, a.dtype, buffer=seg.buf)[...] = a
            ins.append({"buffer": b, "shm": "/" + seg.name})
        out_segs = {}
        for b in outputs:
            if b not in bufs:
                raise BadInputError("bad_input", "outputs", f"graph \"{name}\" has no buffer "
                                    f"\"{b}\" (buffers: {', '.join(sorted(bufs))})")
            seg = self._segment("out", b, bufs[b]["bytes"])
            out_segs[b] = seg
            outs.append({"buffer": b, "shm": "/" + seg.name})
        served = self.request("replay", name=name or None, inputs=ins or None,
                              outputs=outs or None, batch=batch)["served"]
        result = {}
        for e in served.get("outputs", []):
            seg = out_segs[e["buffer"]]
            dt = _numpy_dtype(np, e["dtype"])
            result[e["buffer"]] = np.ndarray(tuple(e["shape"]), dt, buffer=seg.buf).copy()
        return result, served

    def open_lane(self, name=None, inputs=(), outputs=(), batch=None, spin_us=None):
        """Opens a lane on graph NAME (default: the latest capture): served steps without the
        socket (replay/PROTOCOL.md, "Lanes"). inputs / outputs: buffer names. The client makes
        one POSIX shared-memory segment (the 4096-byte control block, then each buffer's region,
        64-byte aligned) and the service registers it; a step is then a doorbell in the segment.
        batch: NAME is a --buckets group, its smallest bucket >= batch runs (the views have
        `batch` rows). spin_us: how long the service's lane thread spins after a step before it
        sleeps (service default 2000). Returns a graphrun.Lane: write `lane.inputs[b][...]`,
        `lane.step()`, read `lane.outputs[b]`; `lane.close()` (or `with`), or close() of the
        client, closes it. Errors raise as for any request, the segment removed."""
        from .lane import open_lane

        return open_lane(self, name=name, inputs=inputs, outputs=outputs, batch=batch,
                         spin_us=spin_us)


def _numpy_dtype(np, name):
    """graphrun dtype name -> numpy dtype (bf16 comes back as its uint16 bit patterns)."""
    return {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16, "int32": np.int32,
            "int64": np.int64}[name]
