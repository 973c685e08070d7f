"""export_suite_driver.py: export_suite.py's serving run (see its docstring): the options, a pool of export workers
(export_suite_run.py, one process per model, killed at --timeout), a thread per device feeding each exported
file to that device's daemon (export_suite_serve.py) as soon as it is exported, the records as JSON and the
markdown table (export_suite_report.py)."""
import argparse
import concurrent.futures
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import export_suite_report as report
import export_suite_run as run
import export_suite_serve as serve
import export_suite_zoo as zoo

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Where a build's daemon is looked for when --inferd is not given (relative to the repository root).
INFERD_CANDIDATES = ("_g/inferd", "build/inferd", "_b/inferd", "inferd")
# Set when the run is interrupted or its --budget is spent: the export workers still running are killed, no new
# one starts and the exports not yet served are recorded as such; ABORT_WHY says which.
ABORT = threading.Event()
ABORT_WHY = ["timeout: the run was interrupted"]


def parse(argv):
    """The serving run's options."""
    ncpu = os.cpu_count() or 2
    ap = argparse.ArgumentParser(prog="export_suite.py", description="the serving suite (see export_suite.py)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda:0", "both"))
    ap.add_argument("--exporters", default=",".join(run.EXPORTERS), help="torchscript,dynamo (default both)")
    ap.add_argument("--only", default="", help="model names, comma-separated (--list shows them)")
    ap.add_argument("--out", default="", help="the JSON file (and the markdown table beside it, .md)")
    ap.add_argument("--inferd", default="", help="the daemon (default: $INFERD, else the first of "
                    + ", ".join(INFERD_CANDIDATES) + " under the repository root that exists)")
    # Exporting is mostly single-threaded Python (tracing, graph rewriting): several models at once, few threads each.
    ap.add_argument("--jobs", type=int, default=max(1, min(6, ncpu // 3)), help="models exported at once")
    ap.add_argument("--threads", type=int, default=0, help="torch threads per export worker (default cores/jobs)")
    ap.add_argument("--daemon-threads", type=int, default=max(2, ncpu // 4), help="the CPU daemon's cpu_threads")
    ap.add_argument("--timeout", type=float, default=300, help="seconds to build, export and reference one model")
    ap.add_argument("--serve-timeout", type=float, default=300, help="seconds for one load or request")
    ap.add_argument("--budget", type=float, default=0, help="seconds for the whole run (0: no limit); what is "
                    "not done by then is recorded as timeout and the table still printed")
    ap.add_argument("--tol", type=float, default=1e-4, help="largest error, relative to max |reference|")
    ap.add_argument("--workdir", default="", help="keep the exports here (default: a temporary directory)")
    ap.add_argument("--expect-right", action="store_true", help="exit 1 unless every served export is right")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    ap.add_argument("--repo", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.exporters = [e for e in a.exporters.split(",") if e]
    bad = [e for e in a.exporters if e not in run.EXPORTERS]
    if bad:
        ap.error(f"--exporters: unknown {bad} (known: {', '.join(run.EXPORTERS)})")
    a.devices = ["cpu", "cuda:0"] if a.device == "both" else [a.device]
    a.threads = a.threads or max(1, (os.cpu_count() or 2) // a.jobs)
    return a


def find_inferd(given):
    """The daemon's path, or SystemExit naming where it was looked for."""
    tried = [given] if given else ([os.environ["INFERD"]] if os.environ.get("INFERD") else []) + \
        [os.path.join(REPO_ROOT, c) for c in INFERD_CANDIDATES]
    for p in tried:
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
    raise SystemExit(f"export_suite.py: no inferd binary (tried {', '.join(tried)}): build it, or give --inferd PATH")


def pick_specs(only):
    """The zoo's specs, or those named by --only (SystemExit naming an unknown one)."""
    specs = zoo.specs()
    if not only:
        return specs
    names = [n for n in only.split(",") if n]
    known = {s.name for s in specs}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"export_suite.py: --only: unknown {unknown} (export_suite.py --list names them)")
    return [s for s in specs if s.name in names]


def run_worker(a, spec, work, repo):
    """Build, reference and export one model in its own process; (its result.json or None, how it ended)."""
    log = os.path.join(work, f"{spec.name}.log")
    cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "export_suite.py"),
           "--worker", spec.name, "--workdir", work, "--exporters", ",".join(a.exporters),
           "--threads", str(a.threads), "--repo", repo]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    ended = None
    if ABORT.is_set():
        return None, ABORT_WHY[0]
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + a.timeout
        while p.poll() is None and time.monotonic() < deadline and not ABORT.is_set():
            time.sleep(0.2)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            ended = (ABORT_WHY[0] if ABORT.is_set() else
                     f"timeout: building, exporting and referencing took over {a.timeout:g} s")
        elif p.returncode != 0:
            ended = f"the export worker exited with {p.returncode}: {tail(log)}"
    path = os.path.join(work, spec.name, "result.json")
    if not os.path.exists(path):
        return None, ended or f"the export worker wrote no result: {tail(log)}"
    with open(path) as f:
        return json.load(f), ended


def tail(path, n=3):
    """The last n non-empty lines of a file, joined by ' | '."""
    try:
        with open(path, errors="replace") as f:
            return " | ".join([ln.strip() for ln in f if ln.strip()][-n:])
    except OSError as e:
        return f"(no log: {e})"


class Suite:
    """The records of one run, written to --out after each one."""

    def __init__(self, a, specs):
        self.a, self.specs = a, specs
        self.records = []
        self.lock = threading.Lock()
        self.meta = versions()
        self.deadline = time.monotonic() + a.budget if a.budget else 0

    def add(self, rec):
        """Keep one record, print it and rewrite the JSON file."""
        with self.lock:
            self.records.append(rec)
            extra = f" ({rec['error']})" if rec.get("error") else ""
            err = f" {rec['err_torch']:.2e}" if "err_torch" in rec else ""
            print(f"{rec['model']:32s} {rec['exporter']:11s} {rec['device']:6s} {rec['status']}{err}{extra}"[:400],
                  flush=True)
            self.write()

    def ordered(self):
        """The records in the zoo's order, then exporter and device order."""
        order = {s.name: k for k, s in enumerate(self.specs)}
        return sorted(self.records, key=lambda r: (order[r["model"]], self.a.exporters.index(r["exporter"]),
                                                   self.a.devices.index(r["device"])))

    def columns(self):
        """(exporter, device) pairs in the order of the options."""
        return [(e, d) for e in self.a.exporters for d in self.a.devices]

    def write(self):
        """--out as JSON (through a temporary file), and its markdown table beside it."""
        if not self.a.out:
            return
        recs = self.ordered()
        doc = {"versions": self.meta, "tolerance": self.a.tol, "devices": self.a.devices,
               "exporters": self.a.exporters, "records": recs,
               "totals": {s: sum(r["status"] == s for r in recs) for s in {r["status"] for r in recs}}}
        with open(self.a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(self.a.out + ".tmp", self.a.out)
        with open(os.path.splitext(self.a.out)[0] + ".md", "w") as f:
            f.write(report.table(recs, self.columns()) + "\n")


def versions():
    """The libraries the run was made with."""
    import numpy
    import onnx
    import onnxruntime
    import torch
    out = {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
           "numpy": numpy.__version__, "python": sys.version.split()[0]}
    for lib in ("torchvision", "transformers", "timm", "onnxscript"):
        try:
            out[lib] = __import__(lib).__version__
        except ImportError:
            out[lib] = None
    out["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return out


def device_loop(suite, daemon, q):
    """Serve every exported file the queue gives on one daemon; stop it at the end (None)."""
    broken = None
    while True:
        item = q.get()
        if item is None:
            break
        base, served = item
        if suite.deadline and time.monotonic() > suite.deadline and not ABORT.is_set():
            ABORT_WHY[0] = f"timeout: the run's --budget of {suite.a.budget:g} s was spent first"
            ABORT.set()
        if ABORT.is_set():
            suite.add(dict(base, status="timeout", error=ABORT_WHY[0][len("timeout: "):]))
            continue
        if broken:
            suite.add(dict(base, status="error", error=broken))
            continue
        try:
            rec = serve.serve_one(daemon, *served)
        except RuntimeError as e:  # the daemon does not start: every later model on this device says why
            broken = f"the daemon does not start on {daemon.device}: {e}"
            rec = {"status": "error", "error": broken}
        except Exception as e:  # a fault of the suite itself: recorded, and the next model goes on
            traceback.print_exc()
            rec = {"status": "error", "error": "export_suite: " + run.first_line(e)}
        suite.add(dict(base, **rec))
    ended = daemon.stop()
    if ended:
        print(f"\n!!! inferd on {daemon.device} ended badly at SIGTERM: {ended}: {daemon.log_tail(8)}\n",
              file=sys.stderr, flush=True)
        suite.meta[f"daemon_exit_{daemon.device}"] = ended


def ended_record(ended):
    """How a worker ended ('timeout: why' or another text) as a record's status and error."""
    if ended.startswith("timeout: "):
        return {"status": "timeout", "error": ended[len("timeout: "):]}
    return {"status": "error", "error": ended}


def dispatch(suite, spec, result, ended, work, queues):
    """Records for what cannot be served; each exported file onto every device's queue."""
    a = suite.a
    for ex in a.exporters:
        base = {"model": spec.name, "family": spec.family, "exporter": ex}
        rec = (result or {}).get("exporters", {}).get(ex, {})
        if result is None:
            fail = ended_record(ended)
        elif result.get("unavailable"):
            fail = {"status": "not available", "error": result["unavailable"]}
        elif result.get("torch_error"):
            fail = {"status": "error", "error": "PyTorch cannot run it: " + result["torch_error"]}
        elif rec.get("status") == "exported":
            mdir = os.path.join(work, spec.name)
            ort_path = os.path.join(mdir, f"ort-{ex}.npz")
            path64 = os.path.join(mdir, "torch64.npz")
            served = (os.path.basename(rec["model_dir"]), run.load(os.path.join(mdir, "inputs.npz")),
                      spec.input_names, run.load(os.path.join(mdir, "torch.npz")),
                      run.load(ort_path) if os.path.exists(ort_path) else None,
                      run.load(path64) if os.path.exists(path64) else None, spec.classifier, a.tol)
            for d in a.devices:
                queues[d].put((dict(base, device=d, export_s=rec["export_s"],
                                    **({"ort_error": rec["ort_error"]} if "ort_error" in rec else {})), served))
            continue
        elif rec.get("status") in ("not exportable", "exporter unavailable"):
            fail = {"status": rec["status"], "error": rec["error"]}
        else:
            fail = ended_record(ended or "the export worker stopped while exporting")
        for d in a.devices:
            suite.add(dict(base, device=d, **fail))


def main(argv):
    """The serving run; the exit status."""
    a = parse(argv)
    if a.worker:
        return run.worker(a.worker, a.workdir, a.repo, a.exporters, a.threads)
    specs = pick_specs(a.only)
    if a.list:
        print("\n".join(f"{s.name:32s} {s.family}" for s in specs))
        return 0
    exe = find_inferd(a.inferd)
    work = a.workdir or tempfile.mkdtemp(prefix="inferd-export-suite-")
    repo = os.path.join(work, "repository")
    os.makedirs(repo, exist_ok=True)
    suite = Suite(a, specs)
    t0 = time.monotonic()
    print(f"inferd {exe}; devices {a.devices}; exporters {a.exporters}; {len(specs)} models, {a.jobs} at once; "
          f"work in {work}", flush=True)
    queues = {d: queue.Queue() for d in a.devices}
    daemons = {d: serve.Daemon(exe, d, repo, work, a.daemon_threads, a.serve_timeout) for d in a.devices}
    threads = [threading.Thread(target=device_loop, args=(suite, daemons[d], queues[d])) for d in a.devices]
    for t in threads:
        t.start()
    # SIGTERM unwinds like Ctrl-C, so that the daemons and export workers this run started do not outlive it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            futs = {pool.submit(run_worker, a, s, work, repo): s for s in specs}
            handled = set()
            try:
                for f in concurrent.futures.as_completed(futs, timeout=a.budget or None):
                    handled.add(f)
                    dispatch(suite, futs[f], *f.result(), work, queues)
            except concurrent.futures.TimeoutError:
                ABORT_WHY[0] = f"timeout: the run's --budget of {a.budget:g} s was spent first"
                ABORT.set()
                for f in futs:
                    if f not in handled:  # the workers end at once now: their records say why
                        dispatch(suite, futs[f], *f.result(), work, queues)
    except BaseException:
        ABORT.set()
        for d in daemons.values():
            d.kill()
        raise
    finally:
        for d in a.devices:
            queues[d].put(None)
        for t in threads:
            t.join()
        for d in daemons.values():
            shutil.rmtree(d.sockdir, ignore_errors=True)
    recs = suite.ordered()
    suite.write()
    print("\n" + report.table(recs, suite.columns()))
    print(f"\n{len(recs)} records in {time.monotonic() - t0:.0f} s; work in {work}")
    crashes = [r for r in recs if r["status"] == "crash" or r.get("daemon_died_before")]
    for r in crashes:
        print(f"!!! the daemon CRASHED: {r['model']} {r['exporter']} {r['device']}: "
              f"{r.get('daemon_died_before') or r['error']}", file=sys.stderr)
    ok = ("right", "noise floor", "exporter unavailable", "not available")
    if crashes or (a.expect_right and any(r["status"] not in ok for r in recs)):
        return 1
    return 0
