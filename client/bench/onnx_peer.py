#!/usr/bin/env python3
"""onnx_peer.py: the ONNX models of the ONNX issues run by PyTorch and
onnxruntime, the peers inferd's backend time is compared with.

    onnx_peer.py [--model resnet18 transformer ...] [--batch 1 8] [--seq 128]
                 [--threads T] [--runs N] [--warmup W] [--devices auto|cpu|cuda|cpu,cuda]
                 [--precisions fp32,fp16] [--onnx-dir DIR] [--compile] [--out FILE]

The models are the ones tests/helpers/onnx_reference.py exports (same constructors,
same seed, so the same weights); --onnx-dir DIR times DIR/<model>/model.onnx
in onnxruntime (the file inferd-bench is given), otherwise the model is
exported to a temporary directory first.

CPU (always unless --devices says otherwise), T threads for both peers:
  torch-eager      PyTorch eager, eval, torch.no_grad(), torch.set_num_threads(T)
  onnxruntime      CPUExecutionProvider, intra_op_num_threads T, inter_op 1,
                   sequential execution, default graph optimisations
GPU (when torch.cuda is available), per precision:
  fp32             TF32 off for matmul and cuDNN (strict fp32)
  fp16             model.half(), float inputs half (token ids stay INT64)
  torch-eager      input already on the device, timed with CUDA events
  torch-cudagraph  the forward captured once with torch.cuda.graph, replayed
                   (BERT/DistilBERT: the mask given 4-D where the library
                   takes it, see graphable_hf)
  torch-compile    torch.compile(model) (only with --compile, PyTorch >= 2)
cudnn.benchmark is on for the GPU peers (what a PyTorch user tuning for speed
does); its autotuning happens during warm-up.

Each figure is the median and the 90th percentile of --runs timed forward
passes after --warmup untimed ones; the output is one JSON document:
  {"torch": "...", "onnxruntime": "...", "threads": T, "runs": N, "warmup": W,
   "cpu": "...", "gpu": "..." or null,
   "results": [ {"model": "resnet18", "engine": "onnxruntime", "device": "cpu",
                 "precision": "fp32", "batch": 1, "seq": null,
                 "median_ms": 9.1, "p90_ms": 9.6, "min_ms": 8.8, "mean_ms": 9.2}
                or the same keys without the times and with "error": "..." ] }
"""

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REFERENCE = os.path.join(REPO_ROOT, "tests", "helpers", "onnx_reference.py")


def load_reference():
    """tests/helpers/onnx_reference.py as a module: the model constructors live there."""
    spec = importlib.util.spec_from_file_location("onnx_reference", REFERENCE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cpu_name():
    """The CPU model from /proc/cpuinfo, or what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def summarise(times_s):
    """Median, p90, min and mean in milliseconds of a list of seconds."""
    ms = sorted(t * 1e3 for t in times_s)
    p90 = ms[min(len(ms) - 1, int(round(0.9 * (len(ms) - 1))))]
    return {"median_ms": statistics.median(ms), "p90_ms": p90,
            "min_ms": ms[0], "mean_ms": statistics.fmean(ms)}


def time_host(fn, runs, warmup):
    """Wall-clock times of fn() after warm-up calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def time_cuda(torch, fn, runs, warmup):
    """Device times of fn() measured with CUDA events, after warm-up calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 1e3)
    return out


def onnx_file(ref, name, onnx_dir, tmp):
    """The model's ONNX file: DIR/<model>/model.onnx, or a fresh export."""
    if onnx_dir:
        path = os.path.join(onnx_dir, name, "model.onnx")
        if not os.path.isfile(path):
            raise SystemExit(f"{path}: no such file")
        return path
    model, kind, outputs = ref.build(name)
    batch = 2
    seq = 16 if ref.has_seq(kind) else None
    names, example = ref.make_inputs(kind, batch, seq, np.random.default_rng(ref.SEED))
    path = os.path.join(tmp, f"{name}.onnx")
    ref.export(model, kind, names, outputs, example, path, 17, True)
    return path


def bench_cpu(ref, torch, name, args, tmp):
    """PyTorch eager and onnxruntime on the CPU, T threads each."""
    import onnxruntime as ort
    torch.set_num_threads(args.threads)
    model, kind, outputs = ref.build(name, for_export=False)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(onnx_file(ref, name, args.onnx_dir, tmp), opts,
                                providers=["CPUExecutionProvider"])
    results = []
    for b in args.batch:
        seq = args.seq if ref.has_seq(kind) else None
        names, arrays = ref.make_inputs(kind, b, seq, np.random.default_rng(ref.SEED))
        feeds = dict(zip(names, arrays))
        tensors = [torch.from_numpy(a) for a in arrays]

        def run_torch():
            with torch.no_grad():
                model(*tensors)
        base = {"model": name, "device": "cpu", "precision": "fp32",
                "batch": b, "seq": seq, "threads": args.threads}
        for engine, fn in (("torch-eager", run_torch),
                           ("onnxruntime", lambda: sess.run(outputs, feeds))):
            results.append(measure(base, engine, lambda: time_host(fn, args.runs, args.warmup)))
    return results


def measure(base, engine, timer):
    """One result row; a failing peer becomes a row with its error."""
    row = dict(base, engine=engine)
    try:
        row.update(summarise(timer()))
    except Exception as e:  # a peer that cannot run is reported, not fatal
        row["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(row), file=sys.stderr)
    return row


def cuda_graph(torch, model, tensors):
    """Capture model(*tensors) in a CUDA graph; returns its replay function."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(*tensors)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        model(*tensors)
    torch.cuda.synchronize()
    return graph.replay


def gpu_inputs(torch, arrays, precision):
    """Device tensors: float inputs in the precision, integers and bools as they are."""
    out = []
    for a in arrays:
        t = torch.from_numpy(a).cuda()
        if t.is_floating_point() and precision == "fp16":
            t = t.half()
        elif t.is_floating_point() and precision == "bf16":
            t = t.to(torch.bfloat16)
        out.append(t)
    return out


def graphable_hf(torch, model, tensors):
    """For a transformers encoder, a wrapper passing the mask as a 4-D additive
    float mask, or the model itself.

    With the usual 2-D mask transformers decides in Python whether the mask
    can be skipped (mask.all()), a host sync that CUDA graph capture refuses;
    a 4-D mask is used as given.  The wrapper is taken only where the library
    accepts it and its output matches the 2-D mask's.
    """
    inner = model.model

    class Mask4d(torch.nn.Module):
        """(ids, 2-D 0/1 mask) -> last hidden state through a 4-D mask."""

        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, ids, mask):
            dtype = next(self.inner.parameters()).dtype
            add = (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
            return self.inner(input_ids=ids, attention_mask=add).last_hidden_state
    wrapped = Mask4d()
    try:
        with torch.no_grad():
            want = model(*tensors).float()
            got = wrapped(*tensors).float()
    except Exception as e:  # this transformers version refuses 4-D masks
        print(f"{type(inner).__name__}: 4-D mask refused ({e}); 2-D mask kept",
              file=sys.stderr)
        return model
    scale = float(want.abs().max())
    if float((got - want).abs().max()) > 1e-2 * max(scale, 1e-30):
        print(f"{type(inner).__name__}: 4-D mask changes the output; 2-D mask kept",
              file=sys.stderr)
        return model
    return wrapped


def bench_gpu_case(ref, torch, model, compiled, kind, base, args):
    """Eager, CUDA graph (and compiled) timings of one batch size."""
    _, arrays = ref.make_inputs(kind, base["batch"], base["seq"],
                                np.random.default_rng(ref.SEED))
    tensors = gpu_inputs(torch, arrays, base["precision"])
    graphed = graphable_hf(torch, model, tensors) if kind[0] == "hf" else model

    def eager(m=model):
        with torch.no_grad():
            m(*tensors)
    rows = [measure(base, "torch-eager",
                    lambda: time_cuda(torch, eager, args.runs, args.warmup)),
            measure(base, "torch-cudagraph",
                    lambda: time_cuda(torch, cuda_graph(torch, graphed, tensors),
                                      args.runs, args.warmup))]
    if compiled is not None:
        rows.append(measure(base, "torch-compile",
                            lambda: time_cuda(torch, lambda: eager(compiled),
                                              args.runs, args.warmup)))
    return rows


def bench_gpu(ref, torch, name, args):
    """PyTorch eager, CUDA graph replay (and torch.compile) per precision."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    results = []
    for precision in args.precisions:
        model, kind, _ = ref.build(name, for_export=False)
        model = model.cuda()
        if precision == "fp16":
            model = model.half()
        compiled = torch.compile(model) if args.compile else None
        for b in args.batch:
            base = {"model": name, "device": "cuda", "precision": precision,
                    "batch": b, "seq": args.seq if ref.has_seq(kind) else None}
            results += bench_gpu_case(ref, torch, model, compiled, kind, base, args)
        model = compiled = None
        torch.cuda.empty_cache()
    return results


def parse_args(models):
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", nargs="+", default=["resnet18", "transformer"],
                    choices=models)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--seq", type=int, default=128,
                    help="sequence length for token models")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="CPU threads for PyTorch and onnxruntime")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--devices", default="auto",
                    help="auto (cpu, and cuda when available), cpu, cuda or cpu,cuda")
    ap.add_argument("--precisions", default="fp32,fp16",
                    help="GPU precisions: fp32 (TF32 off) and/or fp16")
    ap.add_argument("--onnx-dir", default=None,
                    help="time DIR/<model>/model.onnx in onnxruntime")
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile(model) on the GPU")
    ap.add_argument("--out", default=None, help="write the JSON here, not stdout")
    args = ap.parse_args()
    if args.runs < 1 or args.warmup < 0 or args.threads < 1 or args.seq < 1:
        ap.error("--runs, --threads and --seq must be >= 1, --warmup >= 0")
    if any(b < 1 for b in args.batch):
        ap.error("--batch values must be >= 1")
    args.precisions = [p for p in args.precisions.split(",") if p]
    if not args.precisions or any(p not in ("fp32", "fp16") for p in args.precisions):
        ap.error("--precisions takes fp32 and/or fp16")
    args.devices = [d for d in args.devices.split(",") if d]
    if not args.devices or any(d not in ("auto", "cpu", "cuda") for d in args.devices):
        ap.error("--devices takes auto, cpu, cuda")
    return args


def main():
    ref = load_reference()
    import torch
    args = parse_args(sorted(ref.SPECS))
    have_cuda = torch.cuda.is_available()
    run_cpu = "cpu" in args.devices or "auto" in args.devices
    run_gpu = "cuda" in args.devices or ("auto" in args.devices and have_cuda)
    if run_gpu and not have_cuda:
        raise SystemExit("--devices cuda: torch.cuda is not available")
    if args.compile and not hasattr(torch, "compile"):
        raise SystemExit(f"--compile: torch {torch.__version__} has no torch.compile")
    import onnxruntime as ort
    doc = {"torch": torch.__version__, "onnxruntime": ort.__version__,
           "threads": args.threads, "runs": args.runs, "warmup": args.warmup,
           "cpu": cpu_name(),
           "gpu": torch.cuda.get_device_name(0) if run_gpu else None,
           "results": []}
    with tempfile.TemporaryDirectory(prefix="onnx_peer.") as tmp:
        for name in args.model:
            if run_cpu:
                doc["results"] += bench_cpu(ref, torch, name, args, tmp)
            if run_gpu:
                doc["results"] += bench_gpu(ref, torch, name, args)
    text = json.dumps(doc, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 1 if any("error" in r for r in doc["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())
