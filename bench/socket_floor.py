"""The replay service's socket round trip without any GPU work (issue 25): the floor a served
replay cannot go under, which lanes (replay/PROTOCOL.md) take off the serving path. Starts a
foreground service with test hooks in a private directory, then from Python on one connection:
`status` (answered by the I/O thread) and `debug_sleep` 0 ms (queued to the worker and back),
N requests each after a warm-up; prints median [p10, p90] and writes JSON. No GPU needed.
  python3 bench/socket_floor.py --graphrun build/graphrun [--n 2000] [--json out.json]"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphrun", default="build/graphrun")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--json")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="gr_socket_floor.")
    sock = os.path.join(d, "s.sock")
    env = dict(os.environ, GRAPHRUN_SERVICE_TEST_HOOKS="1")
    log = open(os.path.join(d, "service.log"), "w")
    svc = subprocess.Popen([a.graphrun, "serve", "--foreground", "--socket", sock], env=env,
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)
        f = s.makefile("rb")
        res = {"n": a.n, "warmup": a.warmup, "cpus": os.cpu_count(),
               "method": "one Python client, one connection, time.perf_counter around send + "
                         "readline (JSON dumps/loads included), median [p10, p90]"}
        for name, req in (("status", {"cmd": "status"}),
                          ("debug_sleep_0", {"cmd": "debug_sleep", "ms": 0})):
            xs = []
            for i in range(a.warmup + a.n):
                line = json.dumps(dict(req, schema_version=1, id=i)) + "\n"
                t0 = time.perf_counter()
                s.sendall(line.encode())
                reply = json.loads(f.readline())
                t1 = time.perf_counter()
                if not reply.get("ok"):
                    sys.exit(f"socket_floor: {name}: {reply}")
                if i >= a.warmup:
                    xs.append((t1 - t0) * 1e6)
            xs.sort()
            r = {"median": xs[len(xs) // 2], "p10": xs[len(xs) // 10], "p90": xs[9 * len(xs) // 10]}
            res[name + "_us"] = r
            print(f"{name:14s} median {r['median']:7.1f} us [p10 {r['p10']:.1f}, p90 {r['p90']:.1f}]"
                  f" over {a.n} requests")
        s.close()
        if a.json:
            with open(a.json, "w") as out:
                json.dump(res, out, indent=2)
    finally:
        subprocess.run([a.graphrun, "stop", "--socket", sock], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        svc.wait(timeout=10)
        log.close()


if __name__ == "__main__":
    main()
