#!/usr/bin/env python3
"""python_client_bench.py: the Python shared-memory client beside tritonclient's HTTP client, same run.

    python_client_bench.py [--inferd BUILD/inferd | --socket PATH --url URL]
                           [--model NAME] [--requests N] [--rounds R] [--depth D] [--json]

1-row requests of the demo model.  Each client sends the same input; the rounds
alternate between the clients, so a busy machine slows both alike.  Rows:

  shm sync          inferd.connect(): infer() on an array inside the region, one at a time
  tritonclient      tritonclient.http, binary tensors (its default), one at a time
  inferd.http       this package's HTTP client, binary tensors, one at a time
  shm depth D       inferd.connect(): submit() with D requests in flight (for information:
                    tritonclient's own pipelined path, async_infer on gevent, is not compared:
                    driven from plain threads it ran at under 100 req/s here, a harness artefact)

Without tritonclient (pip install 'tritonclient[http]') its rows are left out and
the ratio is taken against inferd.http.  With --inferd the script starts a private
CPU daemon on a repository from make_models.py and uses fashion-mlp-nodelay (no
batching window, so a lone request runs at once); the daemon's answers are checked
against each other before timing.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import inferd  # noqa: E402


def percentile(sorted_s, q):
    """The q-quantile of sorted samples (nearest rank)."""
    return sorted_s[min(len(sorted_s) - 1, int(q * len(sorted_s)))]


def time_sync(fn, n):
    """Latencies (s) of n calls of fn, and the wall time they took."""
    lat = []
    t0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        fn()
        lat.append(time.perf_counter() - t)
    return lat, time.perf_counter() - t0


def time_pipelined(submit, n, depth):
    """Wall time of n requests with depth in flight; submit() returns something with .result()."""
    t0 = time.perf_counter()
    inflight = []
    for _ in range(n):
        if len(inflight) >= depth:
            inflight.pop(0).result()
        inflight.append(submit())
    for f in inflight:
        f.result()
    return time.perf_counter() - t0


class Row:
    """One client's samples over all rounds."""

    def __init__(self, name):
        self.name, self.lat, self.wall, self.count = name, [], 0.0, 0

    def add(self, lat, wall, count):
        self.lat += lat
        self.wall += wall
        self.count += count

    def summary(self):
        s = sorted(self.lat)
        out = {"name": self.name, "requests": self.count, "req_per_s": self.count / self.wall}
        if s:
            out.update(p50_us=percentile(s, 0.5) * 1e6, p99_us=percentile(s, 0.99) * 1e6)
        return out


def start_daemon(binary, tmp):
    """A private CPU daemon on make_models.py's repository; (process, socket, url)."""
    repo = os.path.join(tmp, "models")
    subprocess.run([sys.executable, os.path.join(HERE, "make_models.py"), repo], check=True,
                   stdout=subprocess.DEVNULL)
    sock, port_file = os.path.join(tmp, "inferd.sock"), os.path.join(tmp, "port")
    log = open(os.path.join(tmp, "inferd.log"), "w")
    p = subprocess.Popen([binary, "--device=cpu", "--model_repository=" + repo, "--http_port=0",
                          "--port-file=" + port_file, "--shm_socket=" + sock, "--log_level=warn"],
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        if os.path.exists(port_file) and os.path.getsize(port_file) > 0 and os.path.exists(sock):
            return p, sock, "http://127.0.0.1:" + open(port_file).read().strip()
        if p.poll() is not None:
            sys.exit("inferd exited at start-up; see " + log.name)
        time.sleep(0.1)
    p.kill()
    sys.exit("inferd did not start within 60 s")


def triton_client(url):
    """tritonclient.http and its client, or None without the package."""
    try:
        import tritonclient.http as th
    except ImportError:
        return None
    cl = th.InferenceServerClient(url.split("://", 1)[1])
    return th, cl


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inferd", help="the daemon binary: start a private CPU daemon")
    ap.add_argument("--socket", help="an existing daemon's shm socket")
    ap.add_argument("--url", help="an existing daemon's HTTP address")
    ap.add_argument("--model", help="default: fashion-mlp-nodelay with --inferd, else fashion-mlp")
    ap.add_argument("--requests", type=int, default=3000, help="per client, over all rounds")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--depth", type=int, default=64, help="requests in flight for the pipelined rows")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp, proc = None, None
    if args.inferd:
        tmp = tempfile.mkdtemp(prefix="inferd-pybench.")
        proc, sock, url = start_daemon(args.inferd, tmp)
        model = args.model or "fashion-mlp-nodelay"
    elif args.socket and args.url:
        sock, url, model = args.socket, args.url, args.model or "fashion-mlp"
    else:
        ap.error("give --inferd, or --socket and --url")
    try:
        report = run(sock, url, model, args)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print("model %s, 1 row per request, %d requests per client in %d alternating rounds"
          % (model, args.requests, args.rounds))
    print("%-22s %10s %10s %10s" % ("client", "req/s", "p50 us", "p99 us"))
    for r in report["rows"]:
        print("%-22s %10.0f %10s %10s" % (r["name"], r["req_per_s"], "%.1f" % r["p50_us"] if "p50_us" in r else "-",
                                           "%.1f" % r["p99_us"] if "p99_us" in r else "-"))
    for k, v in report["ratios"].items():
        print("%s: %.2f x" % (k, v))


def run(sock, url, model, args):
    """Check that the clients agree, time them in alternating rounds; the report."""
    c = inferd.connect(sock)
    h = inferd.http.Client(url)
    x = c.empty(model, 1)
    x[:] = np.random.default_rng(1).random((1, 784), dtype=np.float32)
    want = c.infer(model, x).copy()
    assert np.array_equal(h.infer(model, x), want), "inferd.http and shm disagree"
    tri = triton_client(url)
    if tri is not None:
        th, tcl = tri
        inp = th.InferInput(c.metadata(model).input().name, [1, 784], "FP32")
        inp.set_data_from_numpy(np.array(x))
        outs = [th.InferRequestedOutput(c.metadata(model).output().name)]
        tri_one = lambda: tcl.infer(model, [inp], outputs=outs)  # noqa: E731
        got = tri_one().as_numpy(outs[0].name())
        assert np.array_equal(got, want), "tritonclient and shm disagree"
    rows = {k: Row(k) for k in ("shm sync", "tritonclient", "inferd.http", "shm depth %d" % args.depth)}
    per = max(1, args.requests // args.rounds)
    for _ in range(args.rounds):
        rows["shm sync"].add(*time_sync(lambda: c.infer(model, x), per), per)
        if tri is not None:
            rows["tritonclient"].add(*time_sync(tri_one, per), per)
        rows["inferd.http"].add(*time_sync(lambda: h.infer(model, x), per), per)
        rows["shm depth %d" % args.depth].add([], time_pipelined(lambda: c.submit(model, x), per, args.depth), per)
    c.close()
    h.close()
    out = [r.summary() for r in rows.values() if r.count]
    by = {r["name"]: r for r in out}
    base = "tritonclient" if tri is not None else "inferd.http"
    ratios = {
        "shm sync / %s req/s" % base: by["shm sync"]["req_per_s"] / by[base]["req_per_s"],
        "%s p50 / shm sync p50" % base: by[base]["p50_us"] / by["shm sync"]["p50_us"],
    }
    return {"model": model, "rows": out, "ratios": ratios}


if __name__ == "__main__":
    main()
