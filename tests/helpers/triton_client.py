#!/usr/bin/env python3
"""Drive inferd's Triton-compatible extras: shared-memory endpoints, gzip/deflate, keep-alive
and pipelining over plain HTTP ("http"), and Triton's own Python client ("tritonclient").

Results are checked against tests/data/fashion_ref.json (logits computed by PyTorch), never
against the daemon's own answers.  Exit 0 pass, 1 fail, 77 skip (a module missing).
"""
import argparse
import gzip
import http.client
import json
import mmap
import os
import socket
import sys
import zlib

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def close_to(got, want, tol=1e-4):
    scale = max(1.0, max(abs(w) for w in want))
    return len(got) == len(want) and all(abs(g - w) <= tol * scale for g, w in zip(got, want))


class Conn:
    """One keep-alive connection; request() returns (status, headers dict, body bytes)."""

    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def request(self, method, path, body=None, headers=None):
        self.c.request(method, path, body=body, headers=headers or {})
        r = self.c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def make_shm(name, size, mode=0o600):
    """A POSIX shm object /name of size bytes (as tritonclient.utils.shared_memory makes one)."""
    path = "/dev/shm/" + name
    if os.path.exists(path):
        os.unlink(path)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    os.ftruncate(fd, size)
    os.fchmod(fd, mode)
    m = mmap.mmap(fd, size)
    os.close(fd)
    return path, m


def infer_body(ref, i, ident):
    return json.dumps({"id": ident, "inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32",
                                               "data": ref["inputs"][i]}]}).encode()


def test_shm_endpoints(conn, pid):
    """Register, status, unregister; the errors; unregister-all leaves the object and its maps alone."""
    name = "inferd-tc-%d" % os.getpid()
    path, m = make_shm(name, 65536)
    m[0:4] = b"abcd"
    reg = lambda n, body: conn.request("POST", "/v2/systemsharedmemory/region/%s/register" % n,
                                       json.dumps(body).encode())
    st, _, _ = reg("in", {"key": "/" + name, "offset": 0, "byte_size": 4096})
    check(st == 200, "register: %d" % st)
    st, _, _ = reg("out", {"key": "/" + name, "offset": 4096 + 3, "byte_size": 100})
    check(st == 200, "register at an unaligned offset: %d" % st)
    st, _, body = conn.request("GET", "/v2/systemsharedmemory/status")
    regions = {r["name"]: r for r in json.loads(body)} if st == 200 else {}
    check(regions.get("out") == {"name": "out", "key": "/" + name, "offset": 4099, "byte_size": 100},
          "status lists out: %s" % body)
    for n, body, want, words in (
            ("in", {"key": "/" + name, "byte_size": 10}, 409, "already registered"),
            ("big", {"key": "/" + name, "offset": 65000, "byte_size": 1000}, 400, "exceeds"),
            ("none", {"key": "/inferd-no-such-object", "byte_size": 10}, 404, "No such file"),
            ("nokey", {"byte_size": 10}, 400, "key"),
            ("neg", {"key": "/" + name, "byte_size": -1}, 400, "byte_size")):
        st, _, got = reg(n, body)
        check(st == want and words in got.decode(), "register %s: %d %s" % (n, st, got))
    st, _, got = conn.request("POST", "/v2/systemsharedmemory/region/x/register", b"{not json")
    check(st == 400 and b"malformed JSON" in got, "malformed register body: %d %s" % (st, got))
    st, hdr, _ = conn.request("GET", "/v2/systemsharedmemory/region/in/register")
    check(st == 405 and hdr.get("allow") == "POST", "GET on register: %d %s" % (st, hdr))
    st, _, got = conn.request("GET", "/v2/systemsharedmemory/region/nosuch/status")
    check(st == 404, "status of an unknown region: %d %s" % (st, got))
    st, _, got = conn.request("POST", "/v2/cudasharedmemory/region/c/register", json.dumps(
        {"raw_handle": {"b64": "A" * 86 + "=="}, "device_id": 0, "byte_size": 64}).encode())
    check(st == 400 and (b"needs a GPU backend" in got or b"cudaIpcOpenMemHandle" in got),
          "CUDA register on this backend: %d %s" % (st, got))
    # Triton's C++ client (libb64) breaks base64 into lines of 72 characters: accepted as the same handle.
    wrapped = "A" * 72 + "\n" + "A" * 14 + "==\n"
    st, _, got = conn.request("POST", "/v2/cudasharedmemory/region/c/register", json.dumps(
        {"raw_handle": {"b64": wrapped}, "device_id": 0, "byte_size": 64}).encode())
    check(st == 400 and b"not base64" not in got, "line-broken base64 handle: %d %s" % (st, got))
    for bad in ("A" * 85 + "!==", "A" * 88 + "====", "A" * 200):
        st, _, got = conn.request("POST", "/v2/cudasharedmemory/region/c/register", json.dumps(
            {"raw_handle": {"b64": bad}, "device_id": 0, "byte_size": 64}).encode())
        check(st == 400 and b"not base64" in got, "bad base64 %r: %d %s" % (bad[-6:], st, got))
    st, _, got = conn.request("GET", "/v2/cudasharedmemory/status")
    check(st == 200 and json.loads(got) == [], "CUDA status: %d %s" % (st, got))
    maps = lambda: open("/proc/%d/maps" % pid).read().count(name)
    check(maps() == 2, "the daemon maps each region once (%d)" % maps())
    st, _, _ = conn.request("POST", "/v2/systemsharedmemory/region/in/unregister")
    check(st == 200 and maps() == 1, "unregister one: %d, %d maps left" % (st, maps()))
    st, _, _ = conn.request("POST", "/v2/systemsharedmemory/unregister")
    st2, _, got = conn.request("GET", "/v2/systemsharedmemory/status")
    check(st == 200 and json.loads(got) == [] and maps() == 0, "unregister all: %s" % got)
    check(os.path.exists(path) and m[0:4] == b"abcd", "the object and the client's mapping are untouched")
    os.fchmod(os.open(path, os.O_RDWR), 0o666)
    st, _, got = reg("w", {"key": "/" + name, "byte_size": 10})
    check(st == 403 and b"writable by others" in got, "world-writable object: %d %s" % (st, got))
    m.close()
    os.unlink(path)


def test_encodings(conn, ref):
    """gzip and deflate (zlib and raw) request bodies; compressed answers; bombs and unknown codings."""
    body = infer_body(ref, 0, "z")
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    for coding, data in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body)),
                         ("deflate", raw_deflate.compress(body) + raw_deflate.flush())):
        st, _, got = conn.request("POST", "/v2/models/fashion-mlp/infer", data, {"Content-Encoding": coding})
        ok = st == 200 and close_to(json.loads(got)["outputs"][0]["data"], ref["logits"][0])
        check(ok, "%s request body: %d %s" % (coding, st, got[:200]))
    for accept, decode in (("gzip", gzip.decompress), ("deflate", zlib.decompress),
                           ("br;q=1, gzip;q=0.5", gzip.decompress), ("gzip;q=0, deflate", zlib.decompress)):
        st, hdr, got = conn.request("POST", "/v2/models/fashion-mlp/infer", body, {"Accept-Encoding": accept})
        coding = hdr.get("content-encoding")
        ok = st == 200 and coding in ("gzip", "deflate")
        ok = ok and close_to(json.loads(decode(got))["outputs"][0]["data"], ref["logits"][0])
        check(ok, "Accept-Encoding %s: %d %s" % (accept, st, coding))
    st, hdr, _ = conn.request("GET", "/v2", None, {"Accept-Encoding": "gzip;q=0"})
    check(st == 200 and "content-encoding" not in hdr, "q=0 refuses gzip")
    bomb = gzip.compress(b" " * (64 * 1024 * 1024), 9)
    st, _, got = conn.request("POST", "/v2/models/fashion-mlp/infer", bomb, {"Content-Encoding": "gzip"})
    check(st == 413 and len(bomb) < 1024 * 1024, "gzip bomb (%d bytes): %d %s" % (len(bomb), st, got))
    for coding, data, want in (("br", body, 415), ("gzip, gzip", body, 415), ("gzip", body, 400),
                               ("gzip", gzip.compress(body)[:-20], 400)):
        st, _, got = conn.request("POST", "/v2/models/fashion-mlp/infer", data, {"Content-Encoding": coding})
        check(st == want, "Content-Encoding %s: %d (want %d) %s" % (coding, st, want, got))


def read_response(f):
    """One HTTP/1.1 response from a buffered socket file: (status, headers, body)."""
    line = f.readline()
    if not line:
        return None
    status = int(line.split()[1])
    headers = {}
    while True:
        h = f.readline().strip()
        if not h:
            break
        k, v = h.decode().split(":", 1)
        headers[k.strip().lower()] = v.strip()
    return status, headers, f.read(int(headers.get("content-length", "0")))


def test_pipelining(port, ref):
    """Requests written back to back on one connection are answered in order."""
    n = 8
    reqs = b""
    for i in range(n):
        body = infer_body(ref, i, "p%d" % i)
        reqs += (b"POST /v2/models/fashion-mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body)) + body
    reqs += b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(reqs)
    f = s.makefile("rb")
    for i in range(n):
        r = read_response(f)
        ok = r is not None and r[0] == 200
        doc = json.loads(r[2]) if ok else {}
        ok = ok and doc.get("id") == "p%d" % i and close_to(doc["outputs"][0]["data"], ref["logits"][i])
        check(ok, "pipelined answer %d: %s" % (i, r and (r[0], r[2][:100])))
    r = read_response(f)
    check(r is not None and r[0] == 200 and b"live" in r[2], "pipelined GET after the inferences")
    s.close()


def test_keepalive(port, ref):
    """Many requests on one connection (HTTP/1.1 keep-alive), mixed kinds."""
    c = Conn(port)
    sock = None
    for i in range(40):
        st, _, got = c.request("POST", "/v2/models/fashion-mlp/infer", infer_body(ref, i % 32, "k%d" % i))
        check(st == 200 and json.loads(got)["id"] == "k%d" % i, "keep-alive request %d: %d" % (i, st))
        st, _, _ = c.request("GET", "/v2/health/ready")
        check(st == 200, "keep-alive ready %d" % i)
        if sock is None:
            sock = c.c.sock
        check(c.c.sock is sock, "the connection was kept (request %d)" % i)


def cmd_http(a):
    ref = json.load(open(a.ref))
    conn = Conn(a.port)
    test_shm_endpoints(conn, a.pid)
    test_encodings(conn, ref)
    test_pipelining(a.port, ref)
    test_keepalive(a.port, ref)


def tc_infer(client, tc, ref, binary):
    """Infer row 0..3 with JSON or binary data through tritonclient."""
    x = __import__("numpy").array(ref["inputs"][0:4], dtype="float32")
    inp = tc.InferInput("input", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    out = tc.InferRequestedOutput("logits", binary_data=binary)
    r = client.infer("fashion-mlp", [inp], outputs=[out], request_id="tc")
    y = r.as_numpy("logits")
    ok = y is not None and y.shape == (4, 10)
    ok = ok and all(close_to(list(map(float, y[i])), ref["logits"][i]) for i in range(4))
    check(ok, "tritonclient infer (binary=%s): %s" % (binary, y))
    return r


def tc_shm(client, tc, ref, infer):
    """tritonclient.utils.shared_memory: create, register, status, (infer), unregister, destroy."""
    import numpy as np
    import tritonclient.utils.shared_memory as shm
    x = np.array(ref["inputs"][0:2], dtype=np.float32)
    key = "/inferd-tc-shm-%d" % os.getpid()
    h_in = shm.create_shared_memory_region("tc_in", key, x.nbytes + 80)
    shm.set_shared_memory_region(h_in, [x])
    client.register_system_shared_memory("tc_in", key, x.nbytes + 80)
    st = client.get_system_shared_memory_status()
    check(any(r["name"] == "tc_in" and int(r["byte_size"]) == x.nbytes + 80 for r in st),
          "tritonclient shm status: %s" % st)
    if infer:
        key_out = key + "-out"
        h_out = shm.create_shared_memory_region("tc_out", key_out, 2 * 10 * 4)
        client.register_system_shared_memory("tc_out", key_out, 2 * 10 * 4)
        inp = tc.InferInput("input", list(x.shape), "FP32")
        inp.set_shared_memory("tc_in", x.nbytes)
        out = tc.InferRequestedOutput("logits")
        out.set_shared_memory("tc_out", 2 * 10 * 4)
        r = client.infer("fashion-mlp", [inp], outputs=[out])
        o = r.get_output("logits")
        y = shm.get_contents_as_numpy(h_out, np.float32, [2, 10])
        check(o is not None and all(close_to(list(map(float, y[i])), ref["logits"][i]) for i in range(2)),
              "tritonclient shm infer: %s %s" % (o, y))
        client.unregister_system_shared_memory("tc_out")
        shm.destroy_shared_memory_region(h_out)
    client.unregister_system_shared_memory()
    check(client.get_system_shared_memory_status() == [], "tritonclient unregister all")
    shm.destroy_shared_memory_region(h_in)


def tc_statistics(client, tc, ref):
    """Triton's statistics from real counters: a batch of 3 rows and one of 1 show in batch_stats."""
    import numpy as np
    before = client.get_inference_statistics("fashion-mlp")["model_stats"][0]
    for rows in (3, 1):
        x = np.array(ref["inputs"][0:rows], dtype=np.float32)
        inp = tc.InferInput("input", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        client.infer("fashion-mlp", [inp])
    st = client.get_inference_statistics("fashion-mlp")["model_stats"]
    check(len(st) == 1 and st[0]["name"] == "fashion-mlp" and st[0]["version"] == "1", "stats: %s" % st)
    s = st[0]
    inf = s["inference_stats"]
    check(inf["success"]["count"] == before["inference_stats"]["success"]["count"] + 2
          and inf["success"]["ns"] > before["inference_stats"]["success"]["ns"], "success counter: %s" % inf)
    check(inf["compute_infer"]["count"] == s["execution_count"] and inf["queue"]["count"] == inf["success"]["count"],
          "compute_infer/queue counts: %s" % s)
    check(s["inference_count"] == before["inference_count"] + 4, "inference_count: %s" % s)
    check(s["last_inference"] > 1.6e12, "last_inference is ms since the epoch: %s" % s["last_inference"])
    sizes = {b["batch_size"]: b for b in s["batch_stats"]}
    old = {b["batch_size"]: b["compute_infer"]["count"] for b in before["batch_stats"]}
    grew = [n for n, b in sizes.items() if b["compute_infer"]["count"] > old.get(n, 0)]
    # Sequential requests run one batch each, of their rows (or more, where a batch is padded).
    check(max(grew, default=0) >= 3 and min(grew, default=0) >= 1
          and sum(b["compute_infer"]["count"] for b in s["batch_stats"]) - sum(old.values()) == 2
          and sum(b["compute_infer"]["count"] for b in s["batch_stats"]) == s["execution_count"]
          and [b["batch_size"] for b in s["batch_stats"]] == sorted(sizes), "batch_stats: %s" % s["batch_stats"])
    every = client.get_inference_statistics()["model_stats"]
    check("fashion-mlp" in [e["name"] for e in every], "stats of every model: %s" % [e["name"] for e in every])


def tc_errors(client, tc):
    """The messages Triton's clients test for, as tritonclient raises them."""
    from tritonclient.utils import InferenceServerException
    for call, want in ((lambda: client.get_model_metadata("foo"), "Request for unknown model: 'foo' is not found"),
                       (lambda: client.get_model_metadata("fashion-mlp", model_version="99"),
                        "Request for unknown model: 'fashion-mlp' version 99 is not found")):
        try:
            call()
            check(False, "no error for %s" % want)
        except InferenceServerException as e:
            check(e.message().startswith(want), "error text %r, want %r" % (e.message(), want))


def cmd_tritonclient(a):
    try:
        import numpy  # noqa: F401
        import tritonclient.http as tc
    except ImportError as e:
        print("SKIP: tritonclient[http] is not importable (%s); pip install 'tritonclient[http]'" % e)
        sys.exit(77)
    ref = json.load(open(a.ref))
    client = tc.InferenceServerClient("127.0.0.1:%d" % a.port)
    check(client.is_server_live() and client.is_server_ready(), "live and ready")
    meta = client.get_server_metadata()
    check({"binary_tensor_data", "system_shared_memory", "statistics", "model_repository",
           "model_configuration"} <= set(meta["extensions"]), "extensions: %s" % meta)
    mm = client.get_model_metadata("fashion-mlp")
    check(mm["inputs"][0]["name"] == "input" and mm["outputs"][0]["datatype"] == "FP32", "metadata: %s" % mm)
    check(client.is_model_ready("fashion-mlp"), "model ready")
    tc_infer(client, tc, ref, False)
    tc_infer(client, tc, ref, True)
    x = numpy.array(ref["inputs"][0:1], dtype="float32")
    inp = tc.InferInput("input", [1, 784], "FP32")
    inp.set_data_from_numpy(x, binary_data=False)
    r = client.infer("fashion-mlp", [inp], request_compression_algorithm="gzip",
                     response_compression_algorithm="gzip")
    check(close_to(list(map(float, r.as_numpy("logits")[0])), ref["logits"][0]), "tritonclient with gzip both ways")
    tc_shm(client, tc, ref, a.shm_infer)
    tc_statistics(client, tc, ref)
    tc_errors(client, tc)
    client.close()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("http", "tritonclient"):
        s = sub.add_parser(name)
        s.add_argument("--port", type=int, required=True)
        s.add_argument("--ref", required=True)
        s.add_argument("--pid", type=int, default=0)
        s.add_argument("--shm-infer", action="store_true", help="infer through shm regions too")
    a = p.parse_args()
    {"http": cmd_http, "tritonclient": cmd_tritonclient}[a.cmd](a)
    if FAILURES:
        print("%d checks failed" % len(FAILURES))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
