#!/usr/bin/env python3
"""load_cycles.py: what repeated loads and unloads of one model leave behind in a running daemon.

Starts inferd (explicit model control, the given device) on a repository, then for N cycles loads the
model over HTTP, runs one inference, unloads it and waits until the index shows it unloaded.  Every
STEP cycles it records the daemon's RSS (/proc), the GPU memory in use by the daemon's process (nvidia-smi,
when present) and the idle cuDNN plans (/metrics).  Prints a table and writes JSON: growth per cycle after
the first STEP cycles (the first cycles fill caches that are meant to stay).

  load_cycles.py --inferd BUILD/inferd --repo DIR --model NAME --device cuda:0 --cycles 100 --json OUT.json
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request


def http(port, method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.status, r.read()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def gpu_mib(pid):
    if shutil.which("nvidia-smi") is None:
        return None
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        p, m = [x.strip() for x in line.split(",")]
        if p.isdigit() and int(p) == pid:
            return int(m)
    return 0


def metric(port, name):
    _, text = http(port, "GET", "/metrics")
    for line in text.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return None


def sample_request(port, model):
    _, meta = http(port, "GET", "/v2/models/%s" % model)
    meta = json.loads(meta)
    inputs = []
    for t in meta["inputs"]:
        shape = [1] + [d if d > 0 else 8 for d in t["shape"][1:]]
        n = 1
        for d in shape:
            n *= d
        inputs.append({"name": t["name"], "shape": shape, "datatype": t["datatype"],
                       "data": [0.5 if t["datatype"].startswith("FP") else 1] * n})
    return {"inputs": inputs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferd", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--step", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inferd-cycles.")
    log = open(os.path.join(tmp, "daemon.log"), "w")
    d = subprocess.Popen([a.inferd, "--device=" + a.device, "--model_repository=" + a.repo,
                          "--model_control_mode=explicit", "--http_port=0", "--port-file=" + tmp + "/port",
                          "--shm_socket=" + tmp + "/sock"], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(1200):
            if os.path.exists(tmp + "/port") and os.path.getsize(tmp + "/port") > 0:
                break
            time.sleep(0.1)
        port = int(open(tmp + "/port").read())
        rows = []
        body = None
        t0 = time.time()
        for c in range(1, a.cycles + 1):
            http(port, "POST", "/v2/repository/models/%s/load" % a.model, {})
            if body is None:
                body = sample_request(port, a.model)
            status, _ = http(port, "POST", "/v2/models/%s/infer" % a.model, body)
            assert status == 200
            http(port, "POST", "/v2/repository/models/%s/unload" % a.model, {})
            for _ in range(600):
                _, idx = http(port, "POST", "/v2/repository/index", {})
                if all(v.get("state") != "READY" and v.get("state") != "UNLOADING" for v in json.loads(idx)
                       if v.get("name") == a.model):
                    break
                time.sleep(0.05)
            if c == 1 or c % a.step == 0:
                rows.append({"cycle": c, "rss_kib": rss_kib(d.pid), "gpu_mib": gpu_mib(d.pid),
                             "cudnn_plans_idle": metric(port, "inferd_cudnn_plans_idle"),
                             "seconds": round(time.time() - t0, 1)})
                print("cycle %4d  rss %9d KiB  gpu %s MiB  idle cuDNN plans %s  %.1f s" % (
                    c, rows[-1]["rss_kib"], rows[-1]["gpu_mib"], rows[-1]["cudnn_plans_idle"], rows[-1]["seconds"]),
                    flush=True)
                if a.json:  # kept up to date, so a run cut short still leaves its rows
                    with open(a.json, "w") as f:
                        json.dump({"model": a.model, "device": a.device, "rows": rows}, f, indent=1)
        base = next((r for r in rows if r["cycle"] >= a.step), rows[0])
        last = rows[-1]
        span = max(1, last["cycle"] - base["cycle"])
        summary = {"model": a.model, "device": a.device, "cycles": a.cycles, "rows": rows,
                   "rss_kib_per_cycle_after_first_step": (last["rss_kib"] - base["rss_kib"]) / span,
                   "gpu_mib_per_cycle_after_first_step":
                       None if last["gpu_mib"] is None else (last["gpu_mib"] - base["gpu_mib"]) / span}
        print("growth per cycle after cycle %d: RSS %.1f KiB, GPU %s MiB" % (
            base["cycle"], summary["rss_kib_per_cycle_after_first_step"],
            summary["gpu_mib_per_cycle_after_first_step"]))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(summary, f, indent=1)
    finally:
        d.terminate()
        d.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
