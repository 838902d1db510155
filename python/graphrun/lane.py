"""Lanes (replay/PROTOCOL.md, "Lanes: served steps without the socket"): a served step is a
doorbell in a POSIX shared-memory segment the client owns, not a request on the socket.

`Client.open_lane()` lays the graph's inputs and outputs out in one segment after the 4096-byte
control block, sends `lane_open` and returns a `Lane`: numpy views (`.inputs`, `.outputs`) on
the segment and `.step()`. `Doorbell` is the client's side of the control block
(`replay/lane.h`, `gr_lane_ctl`; `gr_lane_step` in `replay/lane.c` is the same algorithm in C):
it works on any mapping of a segment, so tests can play the service's side without one.

Memory order: Python has no fences. On x86-64 (TSO) a load is an acquire and a store a release,
so the inputs are in place before `req_seq` is seen and `done_seq` is read before the outputs;
the one reordering left (our store of `req_seq` passing our load of `server_waiting`, or of
`client_waiting` against `done_seq`) can lose a futex wake, which the 1 ms futex timeout on
either side bounds. Elsewhere (aarch64) a full barrier is made with a private FUTEX_WAKE (the
kernel's futex_wake runs smp_mb) before ringing and after the step is seen done."""

import ctypes
import itertools
import mmap
import os
import platform
import select
import socket
import sys
import time

from .client import (BadInputError, GraphrunError, ProtocolError, ServiceError, _numpy_dtype,
                     error_for)

MAGIC = 0x31454E414C5247  # "GRLANE1" as little-endian bytes
VERSION = 1
HEADER_BYTES = 4096  # data regions start at or after this offset
ALIGN = 64  # each region's offset (a cache line; the service registers the whole segment)
OPENING, OPEN, CLOSED = 0, 1, 2

# gr_status (core/error.h) in its enum order -> the protocol's code names (replay/protocol.c,
# gr_proto_code_name): a failed step's `status` is the number.
STATUS_CODES = ("ok", "usage", "bad_input", "io", "no_device", "cuda", "verify", "capture",
                "out_of_memory", "protocol", "service", "internal")


class _Ctl(ctypes.Structure):
    """gr_lane_ctl (replay/lane.h); the host is little-endian (checked at import of a lane)."""

    _fields_ = [("magic", ctypes.c_uint64),           # 0   S
                ("version", ctypes.c_uint32),         # 8   S
                ("state", ctypes.c_uint32),           # 12  S
                ("lane_id", ctypes.c_uint64),         # 16  S
                ("service_pid", ctypes.c_uint32),     # 24  S
                ("_pad0", ctypes.c_uint8 * 36),
                ("req_seq", ctypes.c_uint64),         # 64  C
                ("server_waiting", ctypes.c_uint32),  # 72  S
                ("rows", ctypes.c_uint32),            # 76  C
                ("_pad1", ctypes.c_uint8 * 48),
                ("done_seq", ctypes.c_uint64),        # 128 S
                ("status", ctypes.c_int32),           # 136 S
                ("client_waiting", ctypes.c_uint32),  # 140 C
                ("graph_us", ctypes.c_double),        # 144 S
                ("step_us", ctypes.c_double),         # 152 S
                ("lock_us", ctypes.c_double),         # 160 S
                ("steps", ctypes.c_uint64),           # 168 S
                ("_pad2", ctypes.c_uint8 * 80),
                ("message", ctypes.c_char * 512)]     # 256 S


for _f, _off in (("service_pid", 24), ("req_seq", 64), ("server_waiting", 72), ("rows", 76), ("done_seq", 128),
                 ("status", 136),
                 ("client_waiting", 140), ("graph_us", 144), ("step_us", 152),
                 ("lock_us", 160), ("steps", 168), ("message", 256)):
    assert getattr(_Ctl, _f).offset == _off, f"lane layout: {_f}"
assert ctypes.sizeof(_Ctl) <= HEADER_BYTES

# ---- futexes (Linux): shared (not FUTEX_PRIVATE) words, so they work across processes ----

FUTEX_WAIT, FUTEX_WAKE, FUTEX_PRIVATE_FLAG = 0, 1, 128
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}.get(
    platform.machine().lower())
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_syscall = None
if _SYS_FUTEX is not None and sys.platform.startswith("linux"):
    try:
        _syscall = ctypes.CDLL(None, use_errno=True).syscall
        _syscall.restype = ctypes.c_long
        _syscall.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                             ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        _syscall = None
_TS_1MS = _Timespec(0, 1000000)
_TS_1MS_PTR = ctypes.addressof(_TS_1MS)
_FENCE_WORD = ctypes.c_uint32(0)
_FENCE_ADDR = ctypes.addressof(_FENCE_WORD)


def futex_wait(addr, expect, timeout_ptr=_TS_1MS_PTR):
    """Sleep while the u32 at addr equals expect, at most 1 ms (the GIL is released). 0 when
    woken, -1 otherwise (timeout, EAGAIN: the word had changed, EINTR)."""
    if _syscall is None:
        time.sleep(0.0002)
        return -1
    return _syscall(_SYS_FUTEX, addr, FUTEX_WAIT, expect & 0xFFFFFFFF, timeout_ptr, None, 0)


def futex_wake(addr):
    """Wake every sleeper on the u32 at addr; the number woken."""
    if _syscall is None:
        return 0
    return _syscall(_SYS_FUTEX, addr, FUTEX_WAKE, 0x7FFFFFFF, None, None, 0)


def _fence():
    """A full memory barrier where the hardware needs one (not on x86-64: see the module doc)."""
    if not _X86 and _syscall is not None:
        _syscall(_SYS_FUTEX, _FENCE_ADDR, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, None, None, 0)


def buffer_address(buf, offset=0):
    """The address of byte `offset` of a writable buffer (an mmap). The ctypes object that finds
    it is dropped at once, so it holds no export of the buffer (an mmap with exports cannot be
    closed); the address is valid while the mapping is."""
    c = ctypes.c_char.from_buffer(buf, offset)
    addr = ctypes.addressof(c)
    del c
    return addr


# ---- the doorbell ----

class Doorbell:
    """The client's side of a lane's control block at the start of `buf` (a writable mapping of
    the segment, at least 4096 bytes, kept mapped while this is in use). lane_id names the lane
    in messages (default: the block's own lane_id)."""

    def __init__(self, buf, lane_id=None):
        if sys.byteorder != "little":
            raise ProtocolError("protocol", "", "lanes wait on the low 32 bits of a 64-bit "
                                "sequence number: little-endian hosts only")
        if len(buf) < HEADER_BYTES:
            raise ProtocolError("protocol", "", f"a lane's segment holds the {HEADER_BYTES}-byte "
                                f"control block: this one has {len(buf)} bytes")
        self._base = buffer_address(buf)
        self._ctl = _Ctl.from_address(self._base)
        self._lane_id = lane_id

    @property
    def lane_id(self):
        if self._lane_id is not None:
            return self._lane_id
        return self._ctl.lane_id if self._ctl is not None else 0

    @property
    def state(self):
        return self._ctl.state if self._ctl is not None else CLOSED

    @property
    def steps(self):
        """Steps served on the lane (the block's `steps`)."""
        return self._ctl.steps if self._ctl is not None else 0

    def message(self):
        return self._ctl.message.decode("utf-8", "replace") if self._ctl is not None else ""

    def release(self):
        """Forget the mapping (call before unmapping it); a later step raises ServiceError."""
        self._ctl = None
        self._base = None

    def set_rows(self, rows):
        """The next steps' batch rows on a bucket's graph (0: the lane's default)."""
        if self._ctl is not None:
            self._ctl.rows = int(rows) & 0xFFFFFFFF

    def _service_alive(self):
        """False once the service process that opened the lane is gone (offset 24: its pid)."""
        pid = self._ctl.service_pid if self._ctl is not None else 0
        if pid <= 0:
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _wait(self, seq, t0, spin_s, timeout, alive):
        """Until done_seq is seq: spin, then sleep on the futex (1 ms at a time), looking at the
        lane's state, the deadline and (every 50 ms) the service."""
        c = self._ctl
        base = self._base
        spin_until = t0 + (spin_s if spin_s and spin_s > 0 else 0)
        deadline = t0 + timeout if timeout is not None else None
        next_alive = t0 + 0.05
        while True:
            if c.done_seq == seq:
                return
            if c.state != OPEN:
                raise ServiceError("service", "", f"lane {self.lane_id} closed during the step: "
                                   f"{self.message()}")
            now = time.perf_counter()
            if deadline is not None and now > deadline:
                raise ServiceError(
                    "service", "", f"lane {self.lane_id}: step {seq} not answered within "
                    f"{timeout * 1e3:.0f} ms (the service's lane thread is gone or the GPU is held "
                    "by a long request: `graphrun status` shows what runs)")
            if now < spin_until:
                continue
            if now >= next_alive:
                next_alive = now + 0.05
                if (alive is not None and not alive()) or not self._service_alive():
                    raise ServiceError("service", "", f"lane {self.lane_id}: step {seq}: the "
                                       "service is gone (see its log next to the socket)")
            c.client_waiting = 1
            try:
                d = c.done_seq
                if d != seq and c.state == OPEN:
                    futex_wait(base + 128, d)
            finally:  # (a KeyboardInterrupt lands here: the flag must not stay set)
                c.client_waiting = 0

    def step(self, timeout=None, spin_s=0.05, alive=None):
        """Ring for one step and wait for it (the inputs already written in their regions): spin
        for spin_s seconds, then sleep on the futex of done_seq (1 ms at a time). timeout:
        seconds (None: no limit) before ServiceError. alive(): called about every 50 ms while
        sleeping, False when the service is known to be gone (ServiceError). A step that failed
        in the service raises the error class of its status with its message; a closed lane is
        ServiceError with the reason. Returns the step's timings: {"seq", "graph_us", "step_us",
        "lock_us"} (the service's: CUDA events around the launch, doorbell seen -> outputs in
        the segment, of which waiting for the GPU)."""
        c = self._ctl
        if c is None:
            raise ServiceError("service", "", f"lane {self.lane_id} is closed (its segment is "
                               "unmapped)")
        if c.magic != MAGIC or c.version != VERSION:
            raise ProtocolError("protocol", "", "not a lane's control block (magic/version): "
                                "open the lane with `lane_open` before stepping")
        if c.state != OPEN:
            raise ServiceError("service", "", f"lane {self.lane_id} is closed: "
                               f"{self.message() or 'not open'}")
        base = self._base
        t0 = time.perf_counter()
        pending = c.req_seq
        if pending != c.done_seq:  # an earlier call gave up on that step: let it end first
            self._wait(pending, t0, spin_s, timeout, alive)
        seq = c.done_seq + 1
        _fence()  # the inputs before req_seq
        c.req_seq = seq
        _fence()
        if c.server_waiting:
            futex_wake(base + 64)
        self._wait(seq, t0, spin_s, timeout, alive)
        _fence()  # done_seq before the outputs
        status = c.status
        if status != 0:
            code = STATUS_CODES[status] if 0 <= status < len(STATUS_CODES) else "internal"
            msg = f"lane {self.lane_id} step {seq}: {self.message()}"
            raise error_for({"ok": False, "error": {"code": code, "field": "", "message": msg,
                                                    "status": status}})
        return {"seq": seq, "graph_us": c.graph_us, "step_us": c.step_us, "lock_us": c.lock_us}


# ---- the segment ----

_counter = itertools.count(1)


def _create_segment(nbytes):
    """A new POSIX shared-memory segment "/graphrun-lane-PID-N" of nbytes, mapped: (name, mmap)."""
    try:
        import _posixshmem
    except ImportError:
        _posixshmem = None
    flags = os.O_CREAT | os.O_EXCL | os.O_RDWR
    for _ in range(100):
        name = f"/graphrun-lane-{os.getpid()}-{next(_counter)}"
        try:
            if _posixshmem is not None:
                fd = _posixshmem.shm_open(name, flags, mode=0o600)
            else:
                fd = os.open("/dev/shm" + name, flags, 0o600)
        except FileExistsError:
            continue  # left by an earlier process with our pid
        try:
            os.ftruncate(fd, nbytes)
            mm = mmap.mmap(fd, nbytes)
        except OSError:
            os.close(fd)
            _unlink_segment(name)
            raise
        os.close(fd)
        _track(name, True)
        return name, mm
    raise ServiceError("service", "", "cannot make a shared-memory segment for the lane: every "
                       "name tried exists")


def _unlink_segment(name):
    try:
        import _posixshmem

        _posixshmem.shm_unlink(name)
    except ImportError:
        try:
            os.unlink("/dev/shm" + name)
        except FileNotFoundError:
            pass
    except FileNotFoundError:
        pass


def _track(name, register):
    """The resource tracker unlinks the segment if this process dies first (as SharedMemory)."""
    try:
        from multiprocessing import resource_tracker

        (resource_tracker.register if register else resource_tracker.unregister)(
            name, "shared_memory")
    except Exception:  # no tracker (a frozen or restricted interpreter): unlinked at close only
        pass


def _align(n, a=ALIGN):
    return (n + a - 1) // a * a


def layout(buffers, inputs, outputs):
    """Regions for the lane: ([(buffer, offset, bytes)] for inputs, the same for outputs,
    segment bytes). buffers: {name: {"bytes": ...}} (the graph's, or the largest bucket's: with
    batch the full size is an upper bound); each region 64-byte aligned after the header."""
    off = HEADER_BYTES
    placed = ([], [])
    for role, names, out in (("inputs", inputs, placed[0]), ("outputs", outputs, placed[1])):
        seen = set()
        for i, b in enumerate(names):
            if b not in buffers:
                raise BadInputError("bad_input", f"{role}[{i}].buffer", f"the graph has no "
                                    f"buffer \"{b}\" (buffers: {', '.join(sorted(buffers))})")
            if b in seen:
                raise BadInputError("bad_input", f"{role}[{i}].buffer", f"buffer \"{b}\" is "
                                    f"named twice in {role}")
            seen.add(b)
            nbytes = int(buffers[b]["bytes"])
            off = _align(off)
            out.append((b, off, nbytes))
            off += nbytes
    return placed[0], placed[1], _align(max(off, HEADER_BYTES), mmap.PAGESIZE)


# ---- the lane ----

class Lane:
    """A lane open on a held graph (Client.open_lane): write the inputs into `.inputs[name]`
    (numpy views on the segment, the reply's dtype and shape: bf16 as uint16 bit patterns; on a
    bucket's graph the bucket's rows, of which a step serves `rows`: the first ones), call
    `.step()` (or `.step(rows=n)`), read `.outputs[name]` (views: copy what you keep, the next
    step overwrites them; on a bucket, the first rows of the step are its output). Without numpy the views are memoryview slices. `.info` is the
    `lane_open` reply's lane object, `.bucket_run` its bucket_run (with batch). close() (or a
    `with` block) closes the lane in the service, unmaps and unlinks the segment."""

    def __init__(self, mm, lane, client=None, shm=None, bucket_run=None):
        self.info = lane
        self.id = lane.get("id")
        self.graph = lane.get("graph")
        self.shm = shm or lane.get("shm")
        self.bucket_run = bucket_run
        self.bucket = lane.get("bucket", 0)  # the bucket's rows, 0: not a bucket's graph
        self.rows = lane.get("rows", 0)  # the rows a step serves by default
        self.spin_s = 0.05  # default for step()
        self._mm = mm
        self._client = client
        self._owned = shm is not None  # unlink the segment at close
        self._views = []
        self._bell = Doorbell(mm, lane_id=self.id)
        self.inputs = self._map(lane.get("inputs", []), "inputs")
        self.outputs = self._map(lane.get("outputs", []), "outputs")

    @classmethod
    def _attach(cls, mm, lane, client=None, shm=None, bucket_run=None):
        """A Lane on an already mapped segment and a lane object as `lane_open` answers it
        (tests play the service's side this way). shm: the segment's name, unlinked at close."""
        return cls(mm, lane, client=client, shm=shm, bucket_run=bucket_run)

    def _map(self, entries, role):
        try:
            import numpy as np
        except ImportError:
            np = None
        views = {}
        for i, e in enumerate(entries):
            off, nbytes = int(e["offset"]), int(e["bytes"])
            if off < HEADER_BYTES or off + nbytes > len(self._mm):
                raise ProtocolError("protocol", f"lane.{role}[{i}]", f"region [{off}, "
                                    f"{off + nbytes}) of buffer \"{e.get('buffer')}\" is not in "
                                    f"the segment's data ({HEADER_BYTES}..{len(self._mm)})")
            if np is not None:
                dt = np.dtype(_numpy_dtype(np, e["dtype"]))
                shape = tuple(e.get("shape", [nbytes // dt.itemsize]))
                count = int(np.prod(shape, dtype=np.int64))
                if count * dt.itemsize > nbytes:
                    raise ProtocolError("protocol", f"lane.{role}[{i}].shape", f"shape {shape} of "
                                        f"{e['dtype']} needs more than its {nbytes} bytes")
                # frombuffer holds an export of the mapping (np.ndarray(buffer=) does not):
                # the mapping cannot be closed under a view that is still alive
                v = np.frombuffer(self._mm, dt, count, off).reshape(shape)
            else:
                whole = memoryview(self._mm)
                v = whole[off:off + nbytes]
                self._views.append(whole)
            self._views.append(v)
            views[e["buffer"]] = v
        return views

    def _alive(self):
        """False once the service has closed our connection (it died: no lane can answer)."""
        c = self._client
        if c is None:
            return True
        sock = c._sock
        if sock is None:
            return False
        try:
            r, _, _ = select.select([sock], [], [], 0)
            if not r:
                return True
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except (BlockingIOError, InterruptedError):
            return True
        except (OSError, ValueError):
            return False

    @property
    def closed(self):
        return self._mm is None

    @property
    def state(self):
        """The control block's state: 0 opening, 1 open, 2 closed (by the service)."""
        return self._bell.state

    @property
    def steps(self):
        return self._bell.steps

    def step(self, timeout=None, spin_s=None, rows=None):
        """One step: the doorbell (Doorbell.step; spin_s default self.spin_s, 0.05 s). rows: on
        a bucket's graph, the rows this step serves (1 to .bucket; None: the lane's default,
        .rows): the inputs' first rows go in, the rest of each buffer is zeroed, the outputs'
        first rows come back. timeout:
        seconds (None: no limit; a service that exits is noticed through the connection).
        Returns {"seq", "graph_us", "step_us", "lock_us"}. The spin holds the GIL (other Python
        threads of the process run at the interpreter's switch interval): spin_s=0 sleeps on
        the futex at once, for a few microseconds more per step."""
        self._bell.set_rows(0 if rows is None else rows)
        return self._bell.step(timeout=timeout, spin_s=self.spin_s if spin_s is None else spin_s,
                               alive=self._alive if self._client is not None else None)

    def close(self, notify=True):
        """Closes the lane in the service (lane_close; errors ignored when the connection or the
        lane is already gone), then unmaps and unlinks the segment. Returns the lane_close
        reply's lane object ({"id", "steps"}) or None. Views still held elsewhere keep the
        mapping (not the segment's name) alive until they go. notify=False skips lane_close
        (Client.close: closing the connection closes its lanes in the service)."""
        if self._mm is None:
            return None
        reply = None
        c = self._client
        if c is not None:
            c._lanes.pop(self.id, None)
            if notify and c._sock is not None:
                try:
                    reply = c.request("lane_close", lane=self.id).get("lane")
                except (GraphrunError, OSError, ValueError):
                    pass  # the lane or the connection is gone already
        self._bell.release()
        self.inputs, self.outputs = {}, {}
        for v in reversed(self._views):
            if isinstance(v, memoryview):
                try:
                    v.release()
                except BufferError:
                    pass  # exported further (by the caller): the mapping waits for it
        self._views = []
        mm, self._mm = self._mm, None
        try:
            mm.close()
        except BufferError:
            pass  # arrays from .inputs/.outputs still referenced: unmapped when they go
        if self._owned:
            _unlink_segment(self.shm)
            _track(self.shm, False)
        return reply

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        st = "closed" if self._mm is None else ("open" if self.state == OPEN else "closed by the "
                                                "service")
        return (f"<graphrun.Lane {self.id} on {self.graph!r} ({st}): inputs "
                f"{list(self.inputs)}, outputs {list(self.outputs)}>")


def open_lane(client, name=None, inputs=(), outputs=(), batch=None, spin_us=None):
    """Client.open_lane (see there)."""
    if isinstance(inputs, str):
        inputs = [inputs]
    if isinstance(outputs, str):
        outputs = [outputs]
    inputs, outputs = list(inputs), list(outputs)
    if name is None:
        name = client.status().get("latest") or ""
    if not name:
        raise BadInputError("bad_input", "name", "no graph is held: capture one first (or pass "
                            "name=)")
    client._graphs.pop(name, None)  # fresh sizes: another client may have re-captured the name
    bufs = client._buffers(name)
    ins, outs, nbytes = layout(bufs, inputs, outputs)
    shm, mm = _create_segment(nbytes)
    try:
        reply = client.request(
            "lane_open", shm=shm, name=name, batch=batch, spin_us=spin_us,
            inputs=[{"buffer": b, "offset": off} for b, off, _ in ins],
            outputs=[{"buffer": b, "offset": off} for b, off, _ in outs])
        lane = reply["lane"]
        try:
            ln = Lane(mm, lane, client=client, shm=shm, bucket_run=reply.get("bucket_run"))
        except BaseException:  # a reply we cannot use: the service's lane must not stay open
            try:
                client.request("lane_close", lane=lane.get("id"))
            except (GraphrunError, OSError, ValueError):
                pass
            raise
    except BaseException:
        try:
            mm.close()
        except BufferError:
            pass
        _unlink_segment(shm)
        _track(shm, False)
        raise
    client._lanes[ln.id] = ln
    return ln
