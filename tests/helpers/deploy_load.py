#!/usr/bin/python3
"""deploy_load.py: load and metrics for tests/test_deploy_nginx.sh (stdlib only).

Subcommands:
  load --url URL --example FILE --count N [--threads T] [--kill-pid PID --kill-after K]
        POST the example N times to URL/v2/models/fashion-mlp/infer from T threads, each over
        one keep-alive connection; every answer must be 200 with the example's expected class.
        With --kill-pid, SIGKILL PID once K answers have come back (a daemon dying mid-run).
        Exits 1 when any request failed, naming the first failures.
  metric --url URL --name NAME [--label K=V ...]
        print the value of one sample of URL/metrics (exits 1 when absent)
"""

import argparse
import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.parse


def connect(url, timeout):
    """A connection to url's host and port."""
    u = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)


def argmax(values):
    """Index of the largest value."""
    return max(range(len(values)), key=lambda i: values[i])


class Load:
    """N requests shared by T threads; counts answers and failures."""

    def __init__(self, args, body, label):
        self.args, self.body, self.label = args, body, label
        self.lock = threading.Lock()
        self.next = 0
        self.done = 0
        self.failures = []
        self.killed = False

    def take(self):
        """The next request number, or None when all are taken."""
        with self.lock:
            if self.next >= self.args.count:
                return None
            self.next += 1
            return self.next - 1

    def finish(self, error):
        """Count one answer (error: None or what went wrong); kill the victim on time."""
        with self.lock:
            self.done += 1
            if error is not None:
                self.failures.append(error)
            kill = (self.args.kill_pid and not self.killed and self.done >= self.args.kill_after)
            if kill:
                self.killed = True
        if kill:
            os.kill(self.args.kill_pid, signal.SIGKILL)

    def one(self, conn, n):
        """Send request n; returns None or a description of the failure."""
        try:
            conn.request("POST", "/v2/models/fashion-mlp/infer", body=self.body,
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            return "request %d: %s: %s" % (n, type(e).__name__, e)
        if r.status != 200:
            return "request %d: status %d: %s" % (n, r.status, data[:200])
        try:
            out = json.loads(data)["outputs"][0]["data"]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            return "request %d: bad answer (%s): %s" % (n, e, data[:200])
        if len(out) != 10 or argmax(out) != self.label:
            return "request %d: class %d, expected %d" % (n, argmax(out), self.label)
        return None

    def worker(self):
        """Send requests until none are left."""
        conn = connect(self.args.url, 30)
        while True:
            n = self.take()
            if n is None:
                break
            self.finish(self.one(conn, n))
        conn.close()


def expected_label(example):
    """The class the example's .expected file names ("9 Ankle boot ...")."""
    with open(os.path.splitext(example)[0] + ".expected") as f:
        return int(f.read().split()[0])


def cmd_load(args):
    """The load subcommand."""
    with open(args.example, "rb") as f:
        body = f.read()
    load = Load(args, body, expected_label(args.example))
    start = time.monotonic()
    threads = [threading.Thread(target=load.worker) for _ in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.monotonic() - start
    print("%d requests in %.1f s through %s, %d failed%s" % (
        load.done, secs, args.url, len(load.failures),
        ", pid %d killed after %d" % (args.kill_pid, args.kill_after) if load.killed else ""))
    for f in load.failures[:10]:
        print("FAIL:", f, file=sys.stderr)
    if args.kill_pid and not load.killed:
        print("FAIL: the run ended before pid %d was killed" % args.kill_pid, file=sys.stderr)
        return 1
    return 1 if load.failures or load.done != args.count else 0


def parse_sample(line):
    """(name, {label: value}, value) of one exposition line."""
    head, _, value = line.rpartition(" ")
    name, _, rest = head.partition("{")
    labels = {}
    for part in rest.rstrip("}").split(","):
        if "=" in part:
            k, _, v = part.partition("=")
            labels[k] = v.strip('"')
    return name, labels, float(value)


def cmd_metric(args):
    """The metric subcommand."""
    want = dict(kv.split("=", 1) for kv in args.label)
    conn = connect(args.url, 10)
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    text = r.read().decode()
    if r.status != 200:
        print("FAIL: GET /metrics: status %d" % r.status, file=sys.stderr)
        return 1
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, labels, value = parse_sample(line)
        if name == args.name and all(labels.get(k) == v for k, v in want.items()):
            print("%d" % value)
            return 0
    print("FAIL: no sample %s%s in %s/metrics" % (args.name, want, args.url), file=sys.stderr)
    return 1


def main():
    """Parse the command line and run a subcommand."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("--url", required=True)
    lp.add_argument("--example", required=True)
    lp.add_argument("--count", type=int, required=True)
    lp.add_argument("--threads", type=int, default=8)
    lp.add_argument("--kill-pid", type=int, default=0)
    lp.add_argument("--kill-after", type=int, default=0)
    mp = sub.add_parser("metric")
    mp.add_argument("--url", required=True)
    mp.add_argument("--name", required=True)
    mp.add_argument("--label", action="append", default=[])
    args = p.parse_args()
    return cmd_load(args) if args.cmd == "load" else cmd_metric(args)


if __name__ == "__main__":
    sys.exit(main())
