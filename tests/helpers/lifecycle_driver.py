#!/usr/bin/python3
"""lifecycle_driver.py: run a real inferd through start-up, serving, SIGTERM with a request in flight, and exit.

Called by test_lifecycle.sh as: lifecycle_driver.py INFERD TOP_SRCDIR TMPDIR.
Prints what it checks; exits 0 when all passed, 1 on the first failure.
"""
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

INFERD, SRCDIR, TMP = sys.argv[1:4]
START_TIMEOUT = 60.0      # ASan builds start slowly on a loaded 2-core machine
SLOW_DELAY_US = 3000000   # the slow model's max_queue_delay_us
REQUEST = os.path.join(SRCDIR, "docs/examples/fashion-request.json")
EXPECTED_CLASS = 9        # docs/examples/fashion-request.expected: Ankle boot
# Talk to the daemon directly even where http_proxy is set.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def log(msg):
    print(msg, flush=True)


def make_repository(root):
    """fashion-mlp as shipped; slow-mlp, the same model waiting SLOW_DELAY_US for every batch; broken, missing a tensor."""
    src = os.path.join(SRCDIR, "conf/models/fashion-mlp")
    with open(os.path.join(src, "model.json")) as f:
        base = json.load(f)
    variants = {"fashion-mlp": base}
    slow = json.loads(json.dumps(base))
    slow["name"] = "slow-mlp"
    slow["dynamic_batching"]["max_queue_delay_us"] = SLOW_DELAY_US
    slow["dynamic_batching"]["default_timeout_us"] = 4 * SLOW_DELAY_US
    slow["dynamic_batching"]["eager_dispatch"] = False   # wait out the delay even alone
    variants["slow-mlp"] = slow
    broken = json.loads(json.dumps(base))
    broken["name"] = "broken"
    broken["layers"][2]["weight"] = "fc9.weight"
    variants["broken"] = broken
    for name, desc in variants.items():
        d = os.path.join(root, name)
        os.makedirs(d)
        shutil.copy(os.path.join(src, "model.safetensors"), d)
        with open(os.path.join(d, "model.json"), "w") as f:
            json.dump(desc, f)


class Notify:
    """The service manager's side of sd_notify: a datagram socket recording every message."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []

    def wait_for(self, line, proc, timeout):
        deadline = time.monotonic() + timeout
        while True:
            for m in self.messages:
                if line in m.split("\n"):
                    return
            left = deadline - time.monotonic()
            check(left > 0, "no %s from inferd within %.0f s (got %r)" % (line, timeout, self.messages))
            self.sock.settimeout(min(left, 0.2))
            try:
                self.messages.append(self.sock.recv(4096).decode("utf-8", "replace"))
            except socket.timeout:
                check(proc.poll() is None, "inferd exited with %s before sending %s" % (proc.returncode, line))

    def close(self):
        self.sock.close()


class Daemon:
    """One inferd process with a private port file, socket and log."""

    def __init__(self, name, repo, with_notify, extra=()):
        self.notify = Notify(os.path.join(TMP, name + ".notify")) if with_notify else None
        self.log_path = os.path.join(TMP, name + ".log")
        self.port_file = os.path.join(TMP, name + ".port")
        self.sock_path = os.path.join(TMP, name + ".sock")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        env.pop("JOURNAL_STREAM", None)  # keeps the log format this test reads
        if self.notify is not None:
            env["NOTIFY_SOCKET"] = self.notify.path
        args = [INFERD, "--config=/dev/null", "--device=cpu", "--model_repository=" + repo,
                "--http_port=0", "--port-file=" + self.port_file, "--shm_socket=" + self.sock_path,
                "--http_threads=2"] + list(extra)
        self.logf = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.logf,
                                     stderr=subprocess.STDOUT, env=env)
        self.port = None

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_ready(self):
        if self.notify is not None:
            self.notify.wait_for("READY=1", self.proc, START_TIMEOUT)
            log("ok: READY=1 received")
        else:
            deadline = time.monotonic() + START_TIMEOUT
            while not os.path.exists(self.port_file):
                check(self.proc.poll() is None, "inferd exited with %s during start-up" % self.proc.returncode)
                check(time.monotonic() < deadline, "no port file within %.0f s" % START_TIMEOUT)
                time.sleep(0.05)
        check(os.path.exists(self.port_file), "port file missing once ready")
        with open(self.port_file) as f:
            self.port = int(f.read().strip())
        check(0 < self.port < 65536, "bad port %d in the port file" % self.port)
        log("ok: serving on port %d" % self.port)

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure("inferd still running %.0f s after the signal" % timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()
        if self.notify is not None:
            self.notify.close()


def http(port, method, path, body=None, timeout=30.0):
    """Returns (status, parsed JSON or raw text); raises OSError when the connection fails."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with OPENER.open(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def check_inference(status, doc, what):
    check(status == 200, "%s: status %d: %r" % (what, status, doc))
    data = doc["outputs"][0]["data"]
    check(len(data) == 10 and all(isinstance(x, (int, float)) for x in data),
          "%s: outputs[0].data is not 10 numbers: %r" % (what, data))
    best = max(range(10), key=lambda i: data[i])
    check(best == EXPECTED_CLASS, "%s: class %d, expected %d" % (what, best, EXPECTED_CLASS))


def thread_ticks(pid):
    """{(tid, name): utime + stime} for every thread of pid."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue  # the thread ended
        fields = tail.split()
        out[(tid, head.split("(", 1)[1])] = int(fields[11]) + int(fields[12])
    return out


def check_serving(d, body):
    status, doc = http(d.port, "GET", "/v2/health/live")
    check(status == 200, "GET /v2/health/live: status %d" % status)
    check_inference(*http(d.port, "POST", "/v2/models/fashion-mlp/infer", body), "fashion-mlp")
    log("ok: fashion-mlp answers class %d" % EXPECTED_CLASS)
    text = d.text()
    check("broken" in text and "fc9.weight" in text,
          "the log does not name the broken model and its missing tensor")
    status, _ = http(d.port, "GET", "/v2/models/broken/ready")
    check(status != 200, "the broken model reports ready")
    log("ok: the broken model is logged and not served")
    check(stat.S_ISSOCK(os.stat(d.sock_path).st_mode), "shm_socket %s is not a socket" % d.sock_path)
    check("ready" in text and "started:" in text, "no start-up summary and 'ready' in the log")


def check_idle(d):
    # OpenBLAS workers spin about 0.1 s after a large GEMM before they sleep.
    time.sleep(0.5)
    before = thread_ticks(d.proc.pid)
    time.sleep(1.0)
    after = thread_ticks(d.proc.pid)
    busy = {k: after[k] - before.get(k, 0) for k in after if after[k] > before.get(k, 0)}
    used = sum(busy.values())
    hz = os.sysconf("SC_CLK_TCK")
    check(used * 100 <= 5 * hz, "idle inferd used %d/%d ticks of CPU in 1 s; busy threads: %r"
          % (used, hz, busy))
    log("ok: idle CPU %d/%d ticks in 1 s" % (used, hz))


def slow_request(port, body, result):
    try:
        result["response"] = http(port, "POST", "/v2/models/slow-mlp/infer", body, timeout=60.0)
    except Exception as e:  # reported by the main thread
        result["error"] = repr(e)
    result["done_at"] = time.monotonic()


def check_refused(port, body, notify):
    """A request sent after shutdown began gets 503 or no connection."""
    deadline = time.monotonic() + 10.0
    while True:
        try:
            status, doc = http(port, "POST", "/v2/models/fashion-mlp/infer", body, timeout=10.0)
        except OSError as e:
            log("ok: a new request after SIGTERM failed to connect (%s)" % e)
            return
        if status == 503:
            log("ok: a new request after SIGTERM got 503")
            return
        # Without sd_notify there is no STOPPING=1 to wait for: poll until shutdown begins.
        check(notify is None, "a request after STOPPING=1 got status %d, not 503" % status)
        check(time.monotonic() < deadline, "requests still accepted 10 s after SIGTERM")
        time.sleep(0.05)


def check_drain(d, body):
    notify = d.notify
    result = {}
    t = threading.Thread(target=slow_request, args=(d.port, body, result), daemon=True)
    t.start()
    time.sleep(0.5)
    check(t.is_alive(), "the slow request finished before SIGTERM: %r" % result)
    sent_at = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    if notify is not None:
        notify.wait_for("STOPPING=1", d.proc, 10.0)
        log("ok: STOPPING=1 received")
    check_refused(d.port, body, notify)
    t.join(2 * SLOW_DELAY_US / 1e6 + 30)
    check(not t.is_alive(), "the request in flight never completed")
    check("error" not in result, "the request in flight failed: %s" % result.get("error"))
    check(result["done_at"] > sent_at, "the request completed before SIGTERM")
    check_inference(*result["response"], "request in flight during SIGTERM")
    log("ok: the request in flight during SIGTERM completed with 200")
    rc = d.wait_exit(30.0)
    check(rc == 0, "inferd exited with status %d after SIGTERM" % rc)
    check(not os.path.exists(d.port_file), "port file left behind")
    log("ok: inferd exited 0 after draining")


def run_main(repo, body, with_notify):
    d = Daemon("main", repo, with_notify)
    try:
        d.wait_ready()
        check_serving(d, body)
        check_idle(d)
        check_drain(d, body)
    except Exception:
        sys.stdout.write("--- inferd log ---\n" + d.text())
        raise
    finally:
        d.kill()


def run_sigint(body, with_notify):
    """The shipped repository, stopped at idle by SIGINT."""
    d = Daemon("sigint", os.path.join(SRCDIR, "conf/models"), with_notify)
    try:
        d.wait_ready()
        check_inference(*http(d.port, "POST", "/v2/models/fashion-mlp/infer", body), "shipped repository")
        d.proc.send_signal(signal.SIGINT)
        rc = d.wait_exit(30.0)
        check(rc == 0, "inferd exited with status %d after SIGINT" % rc)
        log("ok: SIGINT at idle exits 0")
    except Exception:
        sys.stdout.write("--- inferd log ---\n" + d.text())
        raise
    finally:
        d.kill()


def expect_startup_failure(name, repo, extra, words):
    """inferd must exit 1 by itself, with an error line naming each of words."""
    d = Daemon(name, repo, False, extra)
    try:
        rc = d.wait_exit(START_TIMEOUT)
        text = d.text()
        check(rc == 1, "%s: exit status %d, expected 1\n%s" % (name, rc, text))
        errors = [l for l in text.splitlines() if " error: " in l]
        check(any(all(w in l for w in words) for l in errors),
              "%s: no error line naming %s in:\n%s" % (name, words, text))
        check(not os.path.exists(d.port_file), "%s: port file left behind" % name)
        log("ok: start-up failure (%s) exits 1 and says so" % name)
    finally:
        d.kill()


def run_failures(repo):
    missing = os.path.join(TMP, "no-such-repository")
    expect_startup_failure("no-repository", missing, [], [missing])
    expect_startup_failure("no-such-gpu", repo, ["--device=cuda:7"], ["cuda:7"])
    expect_startup_failure("bad-socket", repo, ["--shm_socket=" + os.path.join(TMP, "nodir/s.sock")],
                           ["nodir/s.sock"])
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        expect_startup_failure("port-in-use", repo, ["--http_port=%d" % port], [str(port)])
    finally:
        busy.close()


def main():
    # An outer timeout's SIGTERM still runs the finally blocks that kill our daemons.
    signal.signal(signal.SIGTERM, lambda signo, frame: sys.exit(1))
    out = subprocess.run([INFERD, "--version"], capture_output=True, text=True, timeout=30)
    have_systemd = "systemd: yes" in out.stdout
    repo = os.path.join(TMP, "repo")
    make_repository(repo)
    with open(REQUEST, "rb") as f:
        body = f.read()
    if not have_systemd:
        log("note: inferd built without libsystemd: READY=1/STOPPING=1 not checked")
    try:
        run_main(repo, body, have_systemd)
        run_sigint(body, have_systemd)
        run_failures(repo)
    except Failure as e:
        log("FAIL: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
