#!/usr/bin/python3
"""cpu_vs_ort.py: inferd's CPU engine against onnxruntime on torchvision models.

    cpu_vs_ort.py --build BUILDDIR [--models mobilenet_v3_small:128 ...]
                  [--rows 1 8] [--threads 1 2] [--rounds 3] [--duration 3]
                  [--busy 0] [--torch] [--workdir DIR] [--out FILE]

Each model (NAME:SIZE) is exported once with random weights
(torch.manual_seed(0)) and a dynamic batch dim to WORKDIR/<model>/model.onnx.
NAME is a torchvision constructor (SIZE: image size), "unet" (a small UNet
with ConvTranspose2d upsampling; SIZE: image size), "bert_base" (transformers'
BertModel with BertConfig's defaults: 12 layers, hidden 768) or "minilm"
(BertModel shaped like all-MiniLM-L6-v2: 6 layers, hidden 384, 12 heads,
intermediate 1536); for the two BERTs SIZE is the sequence length, fixed in
the export, and the inputs are input_ids and attention_mask, both 0 and 1
alternating as inferd-bench-engine fills them.  For every model, rows count
(--rows) and thread count (--threads), --rounds times, alternating so that
the machine's other load falls on both alike: inferd-bench-engine
--engine=DIR --device=cpu --rows=ROWS --json (INFERD_CPU_THREADS=T) and an
onnxruntime CPUExecutionProvider session on the same file
(intra_op_num_threads T, inter_op 1, sequential, default graph
optimisations), each timed for --duration seconds after a warm-up.  A
batch's time is the median of the batch times of that round.  --busy N starts N
`sh -c 'while :; do :; done'` processes for the whole run (the busy-machine
measurement).  The figure is onnxruntime ms / inferd ms (above 1: inferd is
faster), from the medians of the rounds; min and median of both are printed
and written as JSON to --out.  --torch also times PyTorch eager (the model
object the export came from, inference mode, torch.set_num_threads T) on the
same inputs in each round: torch ms / inferd ms beside.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

DEFAULT_MODELS = ["mobilenet_v3_small:128", "regnet_y_400mf:128", "resnet18:128", "densenet121:96"]
BERTS = {"bert_base": {},
         "minilm": {"num_hidden_layers": 6, "hidden_size": 384, "num_attention_heads": 12,
                    "intermediate_size": 1536}}


def unet():
    """A small UNet: two stride-2 downs, two ConvTranspose2d ups with skip concatenations."""
    import torch
    from torch import nn

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
                             nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.mid = block(3, 32), block(32, 64), block(64, 128)
            self.pool = nn.MaxPool2d(2)
            self.u2, self.c2 = nn.ConvTranspose2d(128, 64, 2, stride=2), block(128, 64)
            self.u1, self.c1 = nn.ConvTranspose2d(64, 32, 2, stride=2), block(64, 32)
            self.head = nn.Conv2d(32, 2, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(self.pool(a))
            m = self.mid(self.pool(b))
            y = self.c2(torch.cat([self.u2(m), b], 1))
            y = self.c1(torch.cat([self.u1(y), a], 1))
            return self.head(y)

    return UNet()


def build(name, size):
    """Model name with random weights (torch.manual_seed(0)), in eval mode, and its ONNX export arguments."""
    import torch

    torch.manual_seed(0)
    if name in BERTS:
        import transformers

        bert = transformers.BertModel(transformers.BertConfig(**BERTS[name])).eval()

        class Named(torch.nn.Module):
            """The two inputs by name: transformers 5 takes other arguments positionally."""

            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask):
                out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
                return out.last_hidden_state, out.pooler_output

        ids = torch.ones(1, size, dtype=torch.int64)
        names = ["input_ids", "attention_mask", "last_hidden_state", "pooler_output"]
        return Named().eval(), (ids, ids), dict(opset_version=14, input_names=names[:2], output_names=names[2:],
                                                 dynamic_axes={k: {0: "batch"} for k in names})
    import torchvision

    model = (unet() if name == "unet" else getattr(torchvision.models, name)()).eval()
    return model, (torch.rand(1, 3, size, size),), dict(opset_version=13, input_names=["input"],
                                                        output_names=["output"],
                                                        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})


def export(name, size, path):
    """Write model name with random weights as ONNX (opset 13 vision, 14 BERT; batch dim dynamic)."""
    import inspect

    import torch

    # The TorchScript exporter: torch >= 2.9 exports with dynamo unless told otherwise.
    ts = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    model, args, kw = build(name, size)
    with torch.no_grad():
        torch.onnx.export(model, args, path, **kw, **ts)


def feeds(name, size, rows):
    """onnxruntime's inputs for rows rows of model name (BERTs: 0 and 1 alternating, as inferd-bench-engine)."""
    import numpy as np

    if name in BERTS:
        ids = (np.arange(rows * size, dtype=np.int64) % 2).reshape(rows, size)
        return {"input_ids": ids, "attention_mask": ids.copy()}
    return {"input": np.random.default_rng(0).random((rows, 3, size, size), dtype=np.float32)}


def ort_round(sess, x, seconds, warmup):
    """Median ms of one onnxruntime session's batches over seconds (feeds x)."""
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        sess.run(None, x)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 3:
        t0 = time.perf_counter()
        sess.run(None, x)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def torch_round(model, x, threads, seconds, warmup):
    """Median ms of PyTorch eager batches (inference mode, threads intra-op threads) over seconds (feeds x)."""
    import torch

    torch.set_num_threads(threads)
    args = [torch.from_numpy(v) for v in x.values()]
    with torch.inference_mode():
        end = time.perf_counter() + warmup
        while time.perf_counter() < end:
            model(*args)
        times = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or len(times) < 3:
            t0 = time.perf_counter()
            model(*args)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def inferd_round(engine, d, rows, threads, seconds, warmup):
    """Median ms of inferd-bench-engine's batches over seconds (its p50)."""
    env = dict(os.environ, INFERD_CPU_THREADS=str(threads))
    out = subprocess.run([engine, "--engine=" + d, "--device=cpu", "--rows=%d" % rows, "--json",
                          "--duration=%g" % seconds, "--warmup=%g" % warmup],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["batch_us"]["p50"] / 1e3


def peer_version():
    """The PyTorch peer's version."""
    import torch

    return torch.__version__


def measure(a, engine, spec, rows, threads):
    """One model at rows rows and threads threads: --rounds alternating rounds, their medians and ratio."""
    import onnxruntime as ort

    name, size = spec.split(":")
    d = os.path.join(a.workdir, "%s-%s" % (name, size))
    path = os.path.join(d, "model.onnx")
    if not os.path.exists(path):
        export(name, int(size), path)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = feeds(name, int(size), rows)
    peer = build(name, int(size))[0] if a.torch else None
    ort_ms, inf_ms, torch_ms = [], [], []
    for r in range(a.rounds):
        inf_ms.append(inferd_round(engine, d, rows, threads, a.duration, a.warmup))
        ort_ms.append(ort_round(sess, x, a.duration, a.warmup))
        if peer is not None:
            torch_ms.append(torch_round(peer, x, threads, a.duration, a.warmup))
        print("  %s rows %d threads %d round %d: inferd %.2f ms, onnxruntime %.2f ms%s"
              % (spec, rows, threads, r, inf_ms[-1], ort_ms[-1],
                 ", PyTorch %.2f ms" % torch_ms[-1] if torch_ms else ""), flush=True)
    res = {"model": name, "size": int(size), "rows": rows, "threads": threads, "busy": a.busy,
           "loadavg_1m": os.getloadavg()[0], "inferd_ms": inf_ms, "ort_ms": ort_ms,
           "inferd_median_ms": statistics.median(inf_ms), "inferd_min_ms": min(inf_ms),
           "ort_median_ms": statistics.median(ort_ms), "ort_min_ms": min(ort_ms)}
    res["ratio"] = res["ort_median_ms"] / res["inferd_median_ms"]
    if torch_ms:
        res.update(torch_ms=torch_ms, torch_median_ms=statistics.median(torch_ms), torch_min_ms=min(torch_ms))
        res["torch_ratio"] = res["torch_median_ms"] / res["inferd_median_ms"]
        print("%-22s %4d rows %d threads %d: PyTorch %s eager median %8.2f ms (min %8.2f), torch/inferd %.2f"
              % (name, int(size), rows, threads, peer_version(), res["torch_median_ms"], res["torch_min_ms"],
                 res["torch_ratio"]), flush=True)
    print("%-22s %4d rows %d threads %d: inferd median %8.2f ms (min %8.2f), onnxruntime median %8.2f ms "
          "(min %8.2f), ort/inferd %.2f, load %.2f"
          % (name, int(size), rows, threads, res["inferd_median_ms"], res["inferd_min_ms"],
             res["ort_median_ms"], res["ort_min_ms"], res["ratio"], res["loadavg_1m"]), flush=True)
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True, help="build directory with client/bench/inferd-bench-engine")
    p.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    p.add_argument("--rows", type=int, nargs="+", default=[2])
    p.add_argument("--threads", type=int, nargs="+", default=[2])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--busy", type=int, default=0)
    p.add_argument("--torch", action="store_true", help="also time PyTorch eager on the same model and inputs")
    p.add_argument("--workdir", default="/tmp/inferd-cpu-vs-ort")
    p.add_argument("--out", default=None)
    a = p.parse_args()

    import onnxruntime as ort

    engine = os.path.join(a.build, "client", "bench", "inferd-bench-engine")
    if not os.access(engine, os.X_OK):
        sys.exit("cpu_vs_ort.py: %s is missing: build first" % engine)
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.busy)]
    results = []
    load0 = os.getloadavg()
    try:
        for spec in a.models:
            for threads in a.threads:
                for rows in a.rows:
                    results.append(measure(a, engine, spec, rows, threads))
    finally:
        for b in busy:
            b.kill()
            b.wait()
    doc = {"onnxruntime": ort.__version__, "torch": peer_version() if a.torch else None, "threads": a.threads, "rows": a.rows, "rounds": a.rounds,
           "busy": a.busy, "loadavg_start": load0, "loadavg_end": os.getloadavg(), "results": results}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
