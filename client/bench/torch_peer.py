#!/usr/bin/env python3
"""torch_peer.py: the demo model run by PyTorch itself, the peer the benchmarks compare inferd with.

Loads a model directory of the inferd repository (model.json + safetensors read by hand:
an 8-byte little-endian header length, a JSON header, raw little-endian tensors), builds
the same layers in PyTorch and times the raw model at batch sizes 1..256:

    torch_peer.py                                  # CPU, torch.set_num_threads(cores)
    torch_peer.py --device cuda --json > torch-gpu.json

Per batch size it reports the median time of one forward pass and rows/s = batch / median.
On CUDA the input is already on the device and CUDA events time the pass; the figure
with copies adds a pinned host->device copy of the input and the device->host copy of the
output, which is what a server's request also pays.  --check PATH runs a KServe request
body (docs/examples/fashion-request.json) and prints the predicted class.
"""

import argparse
import json
import os
import statistics
import struct
import sys
import time

DEFAULT_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "conf", "models", "fashion-mlp")
DEFAULT_BATCHES = "1,2,4,8,16,32,64,128,256"


def read_safetensors(path):
    """Every tensor of a safetensors file as (dtype, shape, bytes), by hand."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than its header length")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen > len(blob) - 8:
        raise ValueError(f"{path}: header length {hlen} past the end of the file")
    header = json.loads(blob[8:8 + hlen])
    data = memoryview(blob)[8 + hlen:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: tensor {name} lies outside the data")
        out[name] = (info["dtype"], info["shape"], data[begin:end])
    return out


def load_model(model_dir, device):
    """Build the model.json layer graph as a torch.nn.Sequential on device."""
    import torch
    with open(os.path.join(model_dir, "model.json")) as f:
        desc = json.load(f)
    tensors = read_safetensors(os.path.join(model_dir, desc.get("weights", "model.safetensors")))

    def tensor(name):
        dtype, shape, raw = tensors[name]
        if dtype != "F32":
            raise ValueError(f"tensor {name} is {dtype}, only F32 is read")
        return torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(shape).clone()

    in_width = 1
    for d in desc["inputs"][0]["dims"]:
        in_width *= d
    width = in_width
    layers = []
    for layer in desc["layers"]:
        op = layer["op"]
        if op == "linear":
            w = tensor(layer["weight"])
            lin = torch.nn.Linear(w.shape[1], w.shape[0], bias="bias" in layer)
            with torch.no_grad():
                lin.weight.copy_(w)
                if "bias" in layer:
                    lin.bias.copy_(tensor(layer["bias"]))
            layers.append(lin)
            width = w.shape[0]
        elif op == "layernorm":
            ln = torch.nn.LayerNorm(width, eps=layer.get("eps", 1e-5))
            with torch.no_grad():
                if "weight" in layer:
                    ln.weight.copy_(tensor(layer["weight"]))
                if "bias" in layer:
                    ln.bias.copy_(tensor(layer["bias"]))
            layers.append(ln)
        else:
            simple = {"relu": torch.nn.ReLU, "gelu": torch.nn.GELU, "sigmoid": torch.nn.Sigmoid,
                      "tanh": torch.nn.Tanh, "identity": torch.nn.Identity}
            if op == "softmax":
                layers.append(torch.nn.Softmax(dim=-1))
            elif op in simple:
                layers.append(simple[op]())
            else:
                raise ValueError(f"layer {layer.get('name')}: op {op} is not known here")
    model = torch.nn.Sequential(*layers).to(device).eval()
    return model, desc, in_width


def time_cpu(model, x, seconds, min_runs):
    """Median and mean microseconds of one forward pass on the CPU."""
    import torch
    times = []
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(10):
            model(x)
        while len(times) < min_runs or time.perf_counter() - start < seconds:
            t0 = time.perf_counter_ns()
            model(x)
            times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times), statistics.fmean(times), len(times)


def time_cuda(model, x_host, seconds, min_runs, with_copies):
    """Median and mean microseconds on CUDA, timed with events, optionally with both copies."""
    import torch
    x_dev = x_host.to("cuda", non_blocking=False)
    out_host = torch.empty((x_host.shape[0], model(x_dev).shape[1]), pin_memory=True)
    begin = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(20):
            model(x_dev)
        torch.cuda.synchronize()
        while len(times) < min_runs or time.perf_counter() - start < seconds:
            begin.record()
            if with_copies:
                x_dev.copy_(x_host, non_blocking=True)
                out_host.copy_(model(x_dev), non_blocking=True)
            else:
                model(x_dev)
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) * 1e3)
    return statistics.median(times), statistics.fmean(times), len(times)


def check(model, desc, path, device):
    """Run a KServe request body and return the predicted class (and label)."""
    import torch
    with open(path) as f:
        body = json.load(f)
    inp = body["inputs"][0]
    x = torch.tensor(inp["data"], dtype=torch.float32).reshape(inp["shape"]).to(device)
    with torch.inference_mode():
        k = int(model(x)[0].argmax())
    labels = desc.get("labels") or []
    return k, labels[k] if k < len(labels) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", default=DEFAULT_MODEL)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="torch.set_num_threads on the CPU (default: every core)")
    ap.add_argument("--batches", default=DEFAULT_BATCHES, help="comma-separated batch sizes")
    ap.add_argument("--seconds", type=float, default=0.5, help="time per batch size")
    ap.add_argument("--min-runs", type=int, default=50)
    ap.add_argument("--check", metavar="REQUEST_JSON", help="print the class predicted for a body")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()

    try:
        import torch
    except ImportError:
        print("torch_peer.py: PyTorch is not installed (Debian: python3-torch)", file=sys.stderr)
        return 77
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_peer.py: --device cuda, but PyTorch sees no CUDA device", file=sys.stderr)
        return 1
    torch.set_num_threads(max(1, args.threads))
    model, desc, width = load_model(args.model_dir, args.device)
    result = {
        "tool": "torch_peer", "model": desc["name"], "device": args.device,
        "device_name": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
        "torch_version": torch.__version__, "threads": torch.get_num_threads(),
        "input_width": width, "results": [],
    }
    if args.check:
        result["check"] = dict(zip(("class", "label"), check(model, desc, args.check, args.device)))
    for b in (int(s) for s in args.batches.split(",")):
        x = torch.rand(b, width)
        if args.device == "cuda":
            x = x.pin_memory()
            med, mean, n = time_cuda(model, x, args.seconds, args.min_runs, False)
            cmed, cmean, _ = time_cuda(model, x, args.seconds, args.min_runs, True)
            row = {"batch": b, "us_per_batch": med, "us_mean": mean, "runs": n,
                   "rows_per_s": b / med * 1e6, "with_copies_us_per_batch": cmed,
                   "with_copies_rows_per_s": b / cmed * 1e6}
        else:
            med, mean, n = time_cpu(model, x, args.seconds, args.min_runs)
            row = {"batch": b, "us_per_batch": med, "us_mean": mean, "runs": n,
                   "rows_per_s": b / med * 1e6}
        result["results"].append(row)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"PyTorch {result['torch_version']} on {result['device_name']}, "
          f"{result['threads']} threads, model {result['model']} ({width} floats in)")
    if "check" in result:
        print(f"  check: class {result['check']['class']} ({result['check']['label']})")
    for r in result["results"]:
        extra = ""
        if "with_copies_us_per_batch" in r:
            extra = (f"   with copies {r['with_copies_us_per_batch']:9.1f} us "
                     f"{r['with_copies_rows_per_s']:12.0f} rows/s")
        print(f"  batch {r['batch']:4d}: {r['us_per_batch']:9.1f} us  {r['rows_per_s']:12.0f} rows/s{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
