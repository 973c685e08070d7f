#!/usr/bin/env python3
"""attack_http.py: the hostile-client HTTP attacks, each bounded in time and bytes, on loopback.

    attack_http.py PORT PID ATTACK

PID is the daemon's (for its RSS).  Each attack asserts the fixed behaviour and
that a normal client is served while it runs; exit 0 pass, 1 fail.  The daemon
must run with the limits test_attacks.sh gives it (small ones, so that the
attacks are quick).
"""
import json
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

PORT = int(sys.argv[1])
PID = int(sys.argv[2])
ROW = [0.5] * 784
GOOD = json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32",
                               "data": ROW}]}).encode()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, flush=True)
    return cond


def rss_kib():
    with open("/proc/%d/status" % PID) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def dial(timeout=10.0):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    return s


def normal(path="/v2/models/fashion-mlp/infer", body=GOOD, timeout=20.0):
    """One well-behaved request; returns (status, seconds) or (repr(error), seconds)."""
    t = time.monotonic()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (PORT, path), data=body)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status, time.monotonic() - t
    except urllib.error.HTTPError as e:
        return e.code, time.monotonic() - t
    except OSError as e:
        return repr(e), time.monotonic() - t


def served_during(what, bound=10.0, path="/v2/models/fashion-mlp/infer", body=GOOD, ok=(200,)):
    """A normal client must be answered (status in ok) within bound seconds, retrying a refused connect."""
    deadline = time.monotonic() + bound
    while True:
        status, took = normal(path, body, timeout=bound)
        if status in ok:
            print("ok: %s: a normal client was served in %.2f s" % (what, took), flush=True)
            return True
        if time.monotonic() > deadline:
            return check(False, "%s: a normal client got %r within %.0f s" % (what, status, bound))
        time.sleep(0.2)


def read_answer(s, timeout=5.0):
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError:
        pass
    return data


def attack_chunked():
    """1: a chunked body that never ends is refused with 413 at the limit (1 MiB), not read on."""
    s = dial()
    s.sendall(b"POST /v2/models/fashion-mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"4000\r\n" + b" " * 0x4000 + b"\r\n"
    sent, t, cut = 0, time.monotonic(), None
    while sent < 64 << 20 and time.monotonic() - t < 20:
        try:
            s.sendall(chunk)
            sent += 0x4000
        except OSError as e:
            cut = e
            break
    answer = read_answer(s)
    print("chunked: %d bytes sent before the cut (%r); answer %r" % (sent, cut, answer[:40]), flush=True)
    check(cut is not None, "the endless chunked body was read on (%d bytes, no cut)" % sent)
    check(sent < 8 << 20, "%d bytes were taken of a body limited to 1 MiB" % sent)
    if answer:
        check(answer.startswith(b"HTTP/1.1 413"), "the endless body's answer: %r" % answer[:60])
    served_during("after the endless body", 5.0)


def attack_budget():
    """2: connections holding big unfinished bodies cannot pass http_body_budget_bytes (4 MiB)."""
    before = rss_kib()
    conns, refused = [], 0
    for _ in range(40):
        s = dial()
        s.sendall(b"POST /v2/models/fashion-mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                  % (1 << 20))
        try:
            s.sendall(b" " * ((1 << 20) - 1))
        except OSError:
            pass
        conns.append(s)
    time.sleep(0.5)
    for s in conns:
        s.setblocking(False)
        try:
            d = s.recv(64)
            if d.startswith(b"HTTP/1.1 503"):
                refused += 1
        except OSError:
            pass
    grown = rss_kib() - before
    print("budget: %d of 40 refused with 503, RSS grew %d KiB" % (refused, grown), flush=True)
    check(refused >= 30, "only %d of 40 body holders were refused past a 4 MiB budget" % refused)
    check(grown < 24 * 1024, "RSS grew %d KiB with a 4 MiB body budget" % grown)
    served_during("bodies held to the budget", 5.0, path="/v2/health/live", body=None)
    for s in conns:
        s.close()
    served_during("after the body holders left", 10.0)


def attack_amplification():
    """3: a body past the model's largest sensible request is refused from its Content-Length,
    before a byte of it is read or parsed; a smaller body of empty objects is answered in bounded time."""
    n = 15 << 20     # under max_body_bytes (16M), over fashion-mlp's bound (784 x 256 x 64 + 1M)
    s = dial()
    t = time.monotonic()
    s.sendall(b"POST /v2/models/fashion-mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % n)
    answer = read_answer(s)
    took = time.monotonic() - t
    print("amplification: Content-Length %d: %r in %.2f s" % (n, answer[:32], took), flush=True)
    check(answer.startswith(b"HTTP/1.1 413") and b"this model can take" in answer,
          "a %d-byte body for a 784-input model: %r, not 413 naming the model's bound" % (n, answer[:200]))
    before = rss_kib()
    small = b'{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[' + b"{}," * (1 << 20) + b"{}]}]}"
    status, took = normal(body=small, timeout=60)
    grown = rss_kib() - before
    print("amplification: %d-byte body of {}: %r in %.2f s, RSS +%d KiB" % (len(small), status, took, grown),
          flush=True)
    check(status == 400, "a body of {} for FP32 data: %r, not 400" % (status,))
    check(took < 30, "the body of {} took %.1f s to refuse" % took)
    served_during("after the amplification bodies", 5.0)


def trickle(s, stop, data):
    for c in data:
        if stop.is_set():
            return
        try:
            s.send(bytes([c]))
        except OSError:
            return
        time.sleep(0.5)


def attack_slow():
    """4: 200 trickling connections (headers and bodies) are closed at the deadline; normal clients are served."""
    stop, socks, threads = threading.Event(), [], []
    head = b"GET /v2/health/live HTTP/1.1\r\nX-Slow: " + b"a" * 200
    body_head = (b"POST /v2/models/fashion-mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                 % len(GOOD))
    t0 = time.monotonic()
    for i in range(200):
        try:
            s = dial()
        except OSError as e:
            check(False, "trickler %d could not connect: %r" % (i, e))
            break
        if i % 2:
            s.sendall(body_head)
            data = GOOD
        else:
            data = head
        socks.append(s)
        t = threading.Thread(target=trickle, args=(s, stop, data), daemon=True)
        t.start()
        threads.append(t)
    served_during("200 trickling connections", 10.0)
    # Every trickler is closed by the daemon: header deadline 2 s, body grace 2 s + rate 1 KiB/s.
    closed = 0
    deadline = time.monotonic() + 15
    for s in socks:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            while s.recv(4096):
                pass
            closed += 1
        except OSError as e:
            if not isinstance(e, socket.timeout):
                closed += 1
    took = time.monotonic() - t0
    stop.set()
    print("slow: %d of %d trickling connections closed by the daemon in %.1f s" % (closed, len(socks), took),
          flush=True)
    check(closed == len(socks), "%d trickling connections were still open after %.0f s" % (len(socks) - closed, took))
    for s in socks:
        s.close()


def attack_connections():
    """4b: past http_max_connections_per_client (50) more connections are refused; normal clients still get in once they go."""
    socks = [dial() for _ in range(50)]
    time.sleep(0.3)
    extra = dial()
    answer = b""
    try:
        extra.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = read_answer(extra, 3)
    except OSError:
        pass
    check(not answer.startswith(b"HTTP/1.1 200"), "connection 51 from one address was served: %r" % answer[:40])
    print("connections: the 51st from one address was refused", flush=True)
    served_during("50 idle connections held (closed by the header deadline)", 10.0)
    for s in socks:
        s.close()


def attack_content_length():
    """7: two different Content-Length headers are refused with 400 (RFC 9112)."""
    s = dial()
    s.sendall(b"POST /v2/models/fashion-mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
              b"Content-Length: %d\r\n\r\n" % (len(GOOD), len(GOOD) + 1) + GOOD)
    answer = read_answer(s)
    check(answer.startswith(b"HTTP/1.1 400"), "two different Content-Length: %r" % answer[:60])
    print("content-length: two different values got %r" % answer[:12], flush=True)
    served_during("after the conflicting Content-Length", 5.0)


def attack_half_close():
    """8: a client that half-closes (FIN) right after its request is released at once, not held
    until the header deadline (2 s): more such clients than one address may hold (50) come and
    go in a second without locking anyone out.  A request the server can answer on the spot is
    answered; one that waits for inference is answered or dropped whole, as libmicrohttpd takes a
    FIN before the answer for a client that is gone (RFC 2616 8.1.4), never half an answer.
    Partial headers or a partial body followed by FIN are closed at once."""
    live = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    infer = (b"POST /v2/models/fashion-mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
             % len(GOOD)) + GOOD
    # What may come back: the whole answer, nothing, or either.
    cases = [("request then FIN", live, "answer"), ("inference then FIN", infer, "either"),
             ("partial headers then FIN", live[:20], "nothing"), ("partial body then FIN", infer[:-100], "nothing")]
    runs = 60
    inferences = sum(1 for i in range(runs) if cases[i % len(cases)][1] is infer)
    slowest, answered, t0 = 0.0, 0, time.monotonic()
    for i in range(runs):
        what, data, may = cases[i % len(cases)]
        s = dial()
        t = time.monotonic()
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        answer = read_answer(s, 5.0)
        took = time.monotonic() - t
        slowest = max(slowest, took)
        s.close()
        whole = answer.startswith(b"HTTP/1.1 200") and (data is live or b'"outputs"' in answer)
        ok = {"answer": whole, "nothing": answer == b"", "either": whole or answer == b""}[may]
        if not check(ok, "%s: answered %r" % (what, answer[:40])):
            break
        answered += data is infer and whole
        if not check(took < 1.0, "%s: the server kept the half-closed connection %.2f s" % (what, took)):
            break
    print("half-close: %d half-closed connections in %.2f s, the slowest released in %.3f s; "
          "%d of %d inferences answered" % (runs, time.monotonic() - t0, slowest, answered, inferences), flush=True)
    served_during("after %d half-closed connections" % runs, 1.0)


ATTACKS = {
    "chunked": attack_chunked,
    "budget": attack_budget,
    "amplification": attack_amplification,
    "slow": attack_slow,
    "connections": attack_connections,
    "content-length": attack_content_length,
    "half-close": attack_half_close,
}

if __name__ == "__main__":
    ATTACKS[sys.argv[3]]()
    sys.exit(1 if failures else 0)
