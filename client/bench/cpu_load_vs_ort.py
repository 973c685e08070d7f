#!/usr/bin/python3
"""cpu_load_vs_ort.py: how long the CPU backend takes to load a model, beside onnxruntime creating a session.

    cpu_load_vs_ort.py --inferd PATH [--models resnet50 mobilenet_v2 bert_base] [--rounds 3]
                       [--threads N] [--workdir DIR] [--out FILE]

Each model is exported once with random weights (torchvision's resnet50 and mobilenet_v2 at 224 px, transformers'
BertModel from BertConfig's defaults; the TorchScript exporter, opset 17, a dynamic batch axis and, for BERT, a
dynamic sequence axis) into WORKDIR/repo/<model>/model.onnx.  One daemon (--device=cpu, model_control_mode explicit,
cpu_threads N) serves the repository; each round, alternating, times POST /v2/repository/models/<model>/load until
it answers 200 (the model is then ready), unloads it, and times onnxruntime.InferenceSession on the same file
(CPUExecutionProvider, intra-op threads N, default graph optimisations) through to its first run on one sample,
which is when onnxruntime has done its work.  The figure is inferd's median load ÷ onnxruntime's median session
(below 1: inferd is faster); min and median of both are printed and written as JSON to --out.
"""

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def export(name, path):
    """Export model name with random weights to path; returns the sample feeds for onnxruntime."""
    import numpy as np
    import torch

    torch.manual_seed(0)
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    if name == "bert_base":
        from transformers import BertConfig, BertModel

        model = BertModel(BertConfig()).eval()
        ids = torch.ones(1, 128, dtype=torch.int64)
        args, inames = (ids, ids), ["input_ids", "attention_mask"]
        axes = {n: {0: "batch", 1: "seq"} for n in inames}
        feeds = {n: np.ones((1, 128), np.int64) for n in inames}
    else:
        import torchvision

        model = getattr(torchvision.models, name)().eval()
        x = torch.rand(1, 3, 224, 224)
        args, inames, axes = (x,), ["input"], {"input": {0: "batch"}}
        feeds = {"input": x.numpy()}
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=17, input_names=inames, dynamic_axes=axes, **kw)
    return feeds


def http(port, method, path, body=b""):
    """Status of an HTTP request to the daemon."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body if method == "POST" else None,
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def start(inferd, repo, work, options):
    """A daemon in explicit model control with options (its device, ...); returns (process, port)."""
    port_file = os.path.join(work, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    log = open(os.path.join(work, "daemon.log"), "w")
    p = subprocess.Popen([inferd, f"--model_repository={repo}", "--model_control_mode=explicit",
                          "--http_port=0", f"--port-file={port_file}", f"--shm_socket={work}/sock"] + options,
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(1200):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return p, int(open(port_file).read())
        if p.poll() is not None:
            sys.exit(f"the daemon exited: see {work}/daemon.log")
        time.sleep(0.05)
    p.kill()
    sys.exit("the daemon did not start")


def ort_session(path, feeds, threads):
    """Seconds from creating an onnxruntime session to the end of its first run."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    t = time.perf_counter()
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    s.run(None, feeds)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inferd", required=True)
    ap.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2", "bert_base"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--workdir", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    work = a.workdir or tempfile.mkdtemp(prefix="inferd-load-vs-ort-")
    repo = os.path.join(work, "repo")
    feeds = {}
    for m in a.models:
        os.makedirs(os.path.join(repo, m), exist_ok=True)
        path = os.path.join(repo, m, "model.onnx")
        feeds[m] = export(m, path)
        with open(os.path.join(repo, m, "model.json"), "w") as f:
            json.dump({"platform": "onnx"}, f)
    daemon, port = start(os.path.abspath(a.inferd), repo, work, ["--device=cpu", f"--cpu_threads={a.threads}"])
    results = []
    try:
        for m in a.models:
            path = os.path.join(repo, m, "model.onnx")
            ours, theirs = [], []
            for _ in range(a.rounds):
                t = time.perf_counter()
                st = http(port, "POST", f"/v2/repository/models/{m}/load")
                if st != 200:
                    sys.exit(f"{m}: load answered {st}: see {work}/daemon.log")
                ours.append(time.perf_counter() - t)
                if http(port, "POST", f"/v2/repository/models/{m}/unload") != 200:
                    sys.exit(f"{m}: unload failed")
                theirs.append(ort_session(path, feeds[m], a.threads))
            r = {"model": m, "threads": a.threads, "inferd_s": ours, "ort_s": theirs,
                 "ratio": statistics.median(ours) / statistics.median(theirs)}
            results.append(r)
            print(f"{m}: inferd load {min(ours):.3f} / {statistics.median(ours):.3f} s (min / median), onnxruntime "
                  f"session + first run {min(theirs):.3f} / {statistics.median(theirs):.3f} s: "
                  f"{r['ratio']:.2f} x onnxruntime's time", flush=True)
    finally:
        daemon.terminate()
        daemon.wait()
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"load_average": os.getloadavg(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
