#!/usr/bin/env python3
"""Large-tensor ingest through Triton's system shared memory over HTTP.

    http_shm_ingest.py URL [--model ingest] [--rows 256] [--width 65536] [--requests 20]
                       [--limits LIMITS.json] [--json]

Creates a POSIX shared-memory object holding ROWS x WIDTH floats (64 MiB with the defaults,
the "ingest" model of make_models.py --ingest), registers it with
POST /v2/systemsharedmemory/region/NAME/register, and sends REQUESTS infer requests whose input
refers to the region (shared_memory_region/offset/byte_size), one at a time, so that only the
request's JSON (a few hundred bytes) crosses the socket and the daemon copies the tensor
straight from the mapping.  The answer (ROWS sums) is checked against numpy.  Prints the input
bandwidth at the median request time and, with --limits (an inferd-bench-engine --limits JSON
of the same GPU, measured at the same size), its ratio to pinned cudaMemcpyAsync.
Exit 0 when it ran and the answers were right, 1 otherwise.  No third-party HTTP client: http.client on one kept-alive connection.
"""

import argparse
import json
import os
import statistics
import sys
import time
import http.client
import urllib.parse
from multiprocessing import shared_memory

import numpy as np


class Conn:
    """One kept-alive HTTP/1.1 connection (a new TCP connection per request would be timed too)."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)

    def post(self, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.c.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        r = self.c.getresponse()
        return r.status, json.loads(r.read() or b"{}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("url")
    ap.add_argument("--model", default="ingest")
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--width", type=int, default=65536)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--limits")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    nbytes = a.rows * a.width * 4
    conn = Conn(a.url)
    name = "inferd-ingest-%d" % os.getpid()
    shm = shared_memory.SharedMemory(name=name, create=True, size=nbytes)
    try:
        x = np.ndarray((a.rows, a.width), dtype=np.float32, buffer=shm.buf)
        x[:] = np.random.default_rng(1).standard_normal((a.rows, a.width), dtype=np.float32)
        st, body = conn.post("/v2/systemsharedmemory/region/ingest/register",
                        {"key": "/" + name, "offset": 0, "byte_size": nbytes})
        if st != 200:
            sys.exit("register: %d %s" % (st, body))
        req = {"inputs": [{"name": "input", "shape": [a.rows, a.width], "datatype": "FP32",
                           "parameters": {"shared_memory_region": "ingest",
                                          "shared_memory_offset": 0,
                                          "shared_memory_byte_size": nbytes}}]}
        want = x.astype(np.float64).sum(axis=1) / a.width
        times, ok = [], True
        for i in range(a.requests + 2):		# two warm-up requests
            t0 = time.perf_counter()
            st, body = conn.post("/v2/models/%s/infer" % a.model, req)
            dt = time.perf_counter() - t0
            if st != 200:
                sys.exit("infer: %d %s" % (st, body))
            got = np.array(body["outputs"][0]["data"], dtype=np.float64)
            ok = ok and got.shape == (a.rows,) and np.allclose(got, want, rtol=1e-3, atol=1e-5)
            if i >= 2:
                times.append(dt)
        conn.post("/v2/systemsharedmemory/region/ingest/unregister")
    finally:
        del x
        shm.close()
        shm.unlink()
    p50 = statistics.median(times)
    res = {"bytes": nbytes, "requests": a.requests, "p50_s": p50, "min_s": min(times),
           "gb_per_s": nbytes / p50 / 1e9, "answers_ok": bool(ok)}
    if a.limits:
        lim = json.load(open(a.limits))["limits"]
        res["pinned_h2d_gbps"] = lim["pinned_h2d_gbps"]
        res["over_pinned_h2d"] = res["gb_per_s"] / lim["pinned_h2d_gbps"]
    if a.json:
        print(json.dumps(res))
    else:
        print("system shm over HTTP, %d MiB in: p50 %.2f ms = %.2f GB/s%s, answers %s" % (
            nbytes >> 20, p50 * 1e3, res["gb_per_s"],
            " = %.3f x pinned h2d (%.2f GB/s)" % (res["over_pinned_h2d"], res["pinned_h2d_gbps"])
            if a.limits else "", "ok" if ok else "WRONG"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
