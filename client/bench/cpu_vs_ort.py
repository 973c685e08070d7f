#!/usr/bin/python3
"""cpu_vs_ort.py: inferd's CPU engine against onnxruntime on torchvision models.

    cpu_vs_ort.py --build BUILDDIR [--models mobilenet_v3_small:128 ...]
                  [--rows 2] [--threads 2] [--rounds 3] [--duration 3]
                  [--busy 0] [--workdir DIR] [--out FILE]

Each model (torchvision constructor:image size) is exported once with random
weights (torch.manual_seed(0)) and a dynamic batch dim to WORKDIR/<model>/model.onnx.
Then, --rounds times, alternating so that the machine's other load falls on
both alike: inferd-bench-engine --engine=DIR --device=cpu --rows=ROWS --json
(INFERD_CPU_THREADS=T) and an onnxruntime CPUExecutionProvider session on the
same file (intra_op_num_threads T, inter_op 1, sequential, default graph
optimisations), each timed for --duration seconds after a warm-up.  A batch's
time is the median of the batch times of that round.  --busy N starts N
`sh -c 'while :; do :; done'` processes for the whole run (the busy-machine
measurement).  The figure is onnxruntime ms / inferd ms (above 1: inferd is
faster), from the medians of the rounds; min and median of both are printed
and written as JSON to --out.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

DEFAULT_MODELS = ["mobilenet_v3_small:128", "regnet_y_400mf:128", "resnet18:128", "densenet121:96"]


def export(name, size, path):
    """Write torchvision's name with random weights as ONNX (opset 13, batch dim dynamic)."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().eval()
    x = torch.rand(1, 3, size, size)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, x, path, opset_version=13, input_names=["input"],
                          output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})


def ort_round(sess, x, seconds, warmup):
    """Median and min ms of one onnxruntime session's batches over seconds."""
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        sess.run(None, {"input": x})
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 3:
        t0 = time.perf_counter()
        sess.run(None, {"input": x})
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def inferd_round(engine, d, rows, threads, seconds, warmup):
    """Median ms of inferd-bench-engine's batches over seconds (its p50)."""
    env = dict(os.environ, INFERD_CPU_THREADS=str(threads))
    out = subprocess.run([engine, "--engine=" + d, "--device=cpu", "--rows=%d" % rows, "--json",
                          "--duration=%g" % seconds, "--warmup=%g" % warmup],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["batch_us"]["p50"] / 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True, help="build directory with client/bench/inferd-bench-engine")
    p.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    p.add_argument("--rows", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--busy", type=int, default=0)
    p.add_argument("--workdir", default="/tmp/inferd-cpu-vs-ort")
    p.add_argument("--out", default=None)
    a = p.parse_args()

    import numpy as np
    import onnxruntime as ort

    engine = os.path.join(a.build, "client", "bench", "inferd-bench-engine")
    if not os.access(engine, os.X_OK):
        sys.exit("cpu_vs_ort.py: %s is missing: build first" % engine)
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.busy)]
    results = []
    try:
        for spec in a.models:
            name, size = spec.split(":")
            d = os.path.join(a.workdir, "%s-%s" % (name, size))
            path = os.path.join(d, "model.onnx")
            if not os.path.exists(path):
                export(name, int(size), path)
            so = ort.SessionOptions()
            so.intra_op_num_threads = a.threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            x = np.random.default_rng(0).random((a.rows, 3, int(size), int(size)), dtype=np.float32)
            ort_ms, inf_ms = [], []
            for r in range(a.rounds):
                inf_ms.append(inferd_round(engine, d, a.rows, a.threads, a.duration, a.warmup))
                ort_ms.append(ort_round(sess, x, a.duration, a.warmup))
                print("  %s round %d: inferd %.2f ms, onnxruntime %.2f ms" % (spec, r, inf_ms[-1], ort_ms[-1]),
                      flush=True)
            res = {"model": name, "size": int(size), "rows": a.rows, "threads": a.threads, "busy": a.busy,
                   "inferd_ms": inf_ms, "ort_ms": ort_ms,
                   "inferd_median_ms": statistics.median(inf_ms), "inferd_min_ms": min(inf_ms),
                   "ort_median_ms": statistics.median(ort_ms), "ort_min_ms": min(ort_ms)}
            res["ratio"] = res["ort_median_ms"] / res["inferd_median_ms"]
            results.append(res)
            print("%-22s %4d px: inferd median %8.2f ms (min %8.2f), onnxruntime median %8.2f ms (min %8.2f), "
                  "ort/inferd %.2f" % (name, int(size), res["inferd_median_ms"], res["inferd_min_ms"],
                                       res["ort_median_ms"], res["ort_min_ms"], res["ratio"]), flush=True)
    finally:
        for b in busy:
            b.kill()
            b.wait()
    doc = {"onnxruntime": ort.__version__, "threads": a.threads, "rows": a.rows, "rounds": a.rounds,
           "busy": a.busy, "results": results}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
