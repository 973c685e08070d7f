"""export_suite_serve.py: export_suite.py's serving half: an inferd daemon per device (explicit model control, the
suite's model repository), and per exported model a load, the two input cases over HTTP (client/python's
inferd.http client, binary tensors) and an unload, the answers compared with PyTorch's and onnxruntime's.

A daemon that dies is a finding of its own (status "crash", its log's last lines kept); the next model gets a
fresh daemon.  A daemon that stops answering within the timeout is killed (status "timeout")."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client", "python"))
from inferd import errors as inferd_errors  # noqa: E402
from inferd import http as inferd_http  # noqa: E402

NODE_OP = re.compile(r"node '([^']*)' \(([A-Za-z0-9_.]+)")


class Daemon:
    """One inferd serving the suite's repository on one device, restarted after a crash."""

    def __init__(self, exe, device, repo, logdir, threads, timeout):
        self.exe, self.device, self.repo, self.threads, self.timeout = exe, device, repo, threads, timeout
        self.tag = device.replace(":", "")
        self.logdir = logdir
        self.proc = None
        self.client = None
        self.starts = 0
        self.sockdir = tempfile.mkdtemp(prefix="inferd-suite-")  # short: a socket path is at most 107 bytes

    def log_path(self):
        """This start's log file."""
        return os.path.join(self.logdir, f"daemon-{self.tag}-{self.starts}.log")

    def start(self):
        """Start the daemon and wait (bounded) until it answers; raises RuntimeError with its log otherwise."""
        self.starts += 1
        port_file = os.path.join(self.sockdir, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        cmd = [self.exe, f"--device={self.device}", f"--model_repository={self.repo}",
               "--model_control_mode=explicit", "--http_port=0", f"--port-file={port_file}",
               f"--shm_socket={self.sockdir}/s.sock", f"--cpu_threads={self.threads}"]
        # model.json's precision fp32 already keeps cuBLAS and cuDNN off TF32; the override makes sure of it.
        env = dict(os.environ, NVIDIA_TF32_OVERRIDE="0")
        with open(self.log_path(), "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"inferd --device={self.device} exited at start ({self.exit_text()}): "
                                   f"{self.log_tail(5)}")
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                with open(port_file) as f:
                    port = int(f.read().strip())
                self.client = inferd_http.Client(f"http://127.0.0.1:{port}", timeout=self.timeout)
                try:
                    if self.client.ready():
                        return
                except inferd_errors.InferdError:
                    pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"inferd --device={self.device} did not answer within 120 s: {self.log_tail(5)}")

    def alive(self):
        """Whether the daemon process is still running."""
        return self.proc is not None and self.proc.poll() is None

    def exit_text(self):
        """How the daemon ended: 'signal SIGSEGV' or 'exit status N'."""
        rc = self.proc.returncode
        if rc is not None and rc < 0:
            return f"signal {signal.Signals(-rc).name}"
        return f"exit status {rc}"

    def log_tail(self, n):
        """The last n lines of this start's log, joined by ' | '."""
        try:
            with open(self.log_path(), errors="replace") as f:
                return " | ".join(ln.strip() for ln in f.readlines()[-n:])
        except OSError as e:
            return f"(no log: {e})"

    def signal_group(self, sig):
        """Send sig to the daemon's process group (its own session: a wrapper script's children go too)."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self):
        """Stop this daemon at once (it hung or is no longer wanted after a failure)."""
        if self.proc is not None:
            self.signal_group(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()
        if self.client is not None:
            self.client.close()
            self.client = None

    def stop(self):
        """SIGTERM and wait (bounded); the exit text, or None when it was not running."""
        if not self.alive():
            return None
        self.signal_group(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.kill()
            return "did not exit within 60 s of SIGTERM"
        if self.client is not None:
            self.client.close()
            self.client = None
        return None if self.proc.returncode == 0 else self.exit_text()


def rel_error(got, want):
    """max |got - want| / max |want| (a NaN or infinity in got counts as infinite; a shape mismatch too)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    if want.size == 0:
        return 0.0
    scale = float(np.max(np.abs(want))) or 1e-30
    return float(np.max(np.abs(got - want))) / scale


def varies(a, b):
    """Whether two cases' first outputs differ (row 0, cut to their common shape) beyond 1e-3 of the scale."""
    a, b = np.asarray(a[0], np.float64), np.asarray(b[0], np.float64)
    if a.ndim != b.ndim:
        return True
    cut = tuple(slice(0, min(x, y)) for x, y in zip(a.shape, b.shape))
    a, b = a[cut], b[cut]
    if a.size == 0:
        return False
    scale = max(float(np.max(np.abs(a))), float(np.max(np.abs(b)))) or 1e-30
    return float(np.max(np.abs(a - b))) > 1e-3 * scale


def top5_mismatch(got, want, err):
    """Rows whose top-5 classes differ, beyond swaps PyTorch's own margins cannot decide (below 2 x the error)."""
    bad = []
    for r in range(want.shape[0]):
        g, w = np.argsort(-got[r])[:5], np.argsort(-want[r])[:5]
        if list(g) == list(w):
            continue
        fifth = want[r][w[-1]]
        slack = 2 * err * float(np.max(np.abs(want)))
        ordered = all(want[r][g[k]] >= want[r][g[k + 1]] - slack for k in range(4))
        if not (ordered and float(np.min(want[r][g])) >= fifth - slack):
            bad.append(r)
    return bad


def max_error(got, want):
    """rel_error's largest value over every case and output."""
    return max(rel_error(g, w) for gc, wc in zip(got, want) for g, w in zip(gc, wc))


def noise_floor(got, torch_ref, ort_ref, ref64, err, tol):
    """The float64 figures when err is above tol only by fp32's own rounding: inferd no further from float64
    PyTorch than twice the farther of PyTorch fp32 and onnxruntime (deep models with calibrated BatchNorms
    reach 1e-4 of the output scale in fp32 rounding alone); None otherwise."""
    if ref64 is None or err <= tol:
        return None
    floor = max(max_error(torch_ref, ref64), max_error(ort_ref, ref64) if ort_ref is not None else 0.0)
    e64 = max_error(got, ref64)
    return {"err_float64": e64, "floor_float64": floor} if e64 <= 2 * floor else None


def judge(got, torch_ref, ort_ref, classifier, tol, ref64=None):
    """The record of one served model: status right / noise floor / wrong / degenerate and the errors behind it."""
    if len(got[0]) != len(torch_ref[0]):
        return {"status": "wrong", "error": f"{len(got[0])} outputs, PyTorch gives {len(torch_ref[0])}"}
    e_torch = max_error(got, torch_ref)
    rec = {"err_torch": e_torch}
    if ort_ref is not None:
        rec["err_ort"] = max_error(got, ort_ref)
        rec["err_ort_vs_torch"] = max_error(ort_ref, torch_ref)
    err = max(e_torch, rec.get("err_ort", 0.0))
    floor = noise_floor(got, torch_ref, ort_ref, ref64, err, tol)
    if floor:
        rec.update(floor)
    why = []
    if err > tol and not floor:
        shapes = [(list(np.shape(g)), list(np.shape(w))) for g, w in zip(got[0], torch_ref[0])
                  if np.shape(g) != np.shape(w)]
        why.append(f"max error {err:.3g} of the output scale" + (f" (shapes {shapes[0][0]} vs PyTorch's "
                                                                   f"{shapes[0][1]})" if shapes else ""))
    if not varies(got[0], got[1]):
        if not varies(torch_ref[0], torch_ref[1]):
            return dict(rec, status="degenerate", error="PyTorch's outputs do not vary across the two inputs")
        why.append("inferd's outputs do not vary across the two inputs")
    if classifier:
        bad = [(c, r) for c in range(2) for r in top5_mismatch(got[c][0], torch_ref[c][0], err)]
        if bad:
            why.append(f"top-5 classes differ (case, row) {bad}")
    if floor and not why:
        return dict(rec, status="noise floor", error=f"max error {err:.3g} of the output scale; against float64 "
                    f"PyTorch {floor['err_float64']:.3g}, where PyTorch fp32 and onnxruntime reach "
                    f"{floor['floor_float64']:.3g}")
    if why:
        if rec.get("err_ort", 0.0) <= tol and rec.get("err_ort_vs_torch", 0.0) > tol:
            # inferd agrees with onnxruntime: the exported file, not the daemon, differs from PyTorch
            return dict(rec, status="export wrong", error="; ".join(why) + " (onnxruntime agrees with inferd)")
        return dict(rec, status="wrong", error="; ".join(why))
    return dict(rec, status="right")


def infer_cases(client, model, cases, input_names):
    """The daemon's outputs for each case (graph output order), inputs matched by name, else by position."""
    meta = client.metadata(model)
    names = [s.name for s in meta.inputs]
    idx = ({n: input_names.index(n) for n in names} if set(names) <= set(input_names)
           else {n: k for k, n in enumerate(names)})
    got = []
    for case in cases:
        outs = client.infer(model, {n: case[k] for n, k in idx.items()})
        if isinstance(outs, np.ndarray):  # the client answers a model of one output with the array itself
            outs = {meta.outputs[0].name: outs}
        got.append([np.array(outs[s.name]) for s in meta.outputs])
    return got


def failure(daemon, stage, e):
    """The record of a failed load or run: a crash, a hang, a refusal (naming the node and op) or an error."""
    text = str(e).strip().splitlines()[0][:400] if str(e).strip() else type(e).__name__
    if isinstance(e, inferd_errors.ConnectFailed) and "timed out" not in text and daemon.alive():
        try:  # a dropped connection may come a moment before the dying daemon's exit can be seen
            daemon.proc.wait(2)
        except subprocess.TimeoutExpired:
            pass
    if not daemon.alive():
        return {"status": "crash", "error": f"the daemon died while {stage} ({daemon.exit_text()}): "
                                            f"{daemon.log_tail(8)}", "daemon_log": daemon.log_path()}
    if isinstance(e, inferd_errors.ConnectFailed) and "timed out" in text:
        daemon.kill()
        return {"status": "timeout", "error": f"no answer within {daemon.timeout} s while {stage}: {text}"}
    if stage == "loading":
        m = NODE_OP.search(text)
        if not m:
            return {"status": "refused", "error": text}
        # From the node on: the model's name and path before it say nothing the table does not.
        return {"status": "refused", "error": text[m.start():], "node": m.group(1), "op": m.group(2)}
    return {"status": "run error", "error": text}


def serve_one(daemon, model, cases, input_names, torch_ref, ort_ref, ref64, classifier, tol):
    """Load model on the daemon, run the cases, unload it; the record (a daemon is started when none runs)."""
    died = None
    if daemon.proc is not None and not daemon.alive():
        died = (f"the daemon on {daemon.device} died ({daemon.exit_text()}) with no model in flight, after the "
                f"previous one: {daemon.log_tail(5)}")
        print(f"\n!!! inferd CRASHED: {died}\n", file=sys.stderr, flush=True)
    if not daemon.alive():
        daemon.start()
    rec = serve_started(daemon, model, cases, input_names, torch_ref, ort_ref, ref64, classifier, tol)
    return dict(rec, daemon_died_before=died) if died else rec


def serve_started(daemon, model, cases, input_names, torch_ref, ort_ref, ref64, classifier, tol):
    """serve_one on a running daemon."""
    t0 = time.monotonic()
    stage = "loading"
    try:
        daemon.client.load(model)
        stage = "running"
        got = infer_cases(daemon.client, model, cases, input_names)
        stage = "unloading"
        daemon.client.unload(model)
    except (inferd_errors.InferdError, OSError) as e:
        rec = failure(daemon, stage, e)
        if rec["status"] == "crash":
            print(f"\n!!! inferd CRASHED on {model} ({daemon.device}) while {stage}: {rec['error']}\n",
                  file=sys.stderr, flush=True)
        elif daemon.alive() and stage == "running":
            try:
                daemon.client.unload(model)
            except (inferd_errors.InferdError, OSError):
                pass
        return dict(rec, serve_s=round(time.monotonic() - t0, 2))
    return dict(judge(got, torch_ref, ort_ref, classifier, tol, ref64), serve_s=round(time.monotonic() - t0, 2))
