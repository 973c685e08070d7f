"""export_suite_run.py: one model of export_suite.py's serving run, in a process of its own (so that a hung exporter
is killed by the suite's timeout and a crash takes nothing else down): build it with random weights, calibrate its
BatchNorms, run PyTorch (CPU) on the two input cases, export it with each exporter asked for into the model
repository (REPO/<model>-<exporter>/model.onnx and model.json) and run onnxruntime on each file.

Writes WORKDIR/<model>/inputs.npz, torch.npz and torch64.npz (PyTorch's outputs in fp32 and float64) and
ort-<exporter>.npz, and WORKDIR/<model>/result.json after every step (what a timeout leaves is still read)."""
import inspect
import json
import os
import time
import traceback

import numpy as np

import export_suite_zoo as zoo

EXPORTERS = ("torchscript", "dynamo")
TORCHSCRIPT_OPSET = 17


def first_line(e):
    """An exception as 'Type: first line of its message' (at most 300 characters)."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''}"


def exporter_missing(torch, exporter):
    """Why this torch cannot run the exporter, or None when it can."""
    if exporter == "torchscript":
        return None
    if "dynamo" not in inspect.signature(torch.onnx.export).parameters:
        return f"torch {torch.__version__}'s torch.onnx.export has no dynamo exporter"
    try:
        import onnxscript  # noqa: F401  (the dynamo exporter writes its graphs with it)
    except ImportError as e:
        return f"the dynamo exporter needs onnxscript: {e}"
    return None


def as_arrays(out):
    """A model's outputs (a tensor or a tuple of tensors) as float/int numpy arrays."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().cpu().numpy() for o in outs]


def export(torch, spec, model, example, path, exporter):
    """Export model at example's shapes to path with the exporter's defaults (TorchScript at opset 17)."""
    dyn = dict(spec.dynamic)
    if spec.batched:
        dyn.update({n: {0: "batch"} for n in spec.output_names})
    kw = {"input_names": spec.input_names, "output_names": spec.output_names, "dynamic_axes": dyn or None}
    if exporter == "torchscript":
        kw["opset_version"] = TORCHSCRIPT_OPSET
        if "dynamo" in inspect.signature(torch.onnx.export).parameters:
            kw["dynamo"] = False
    else:
        kw["dynamo"] = True
    # Not under torch.no_grad(), as docs/MODELS.md advises: there nn.MultiheadAttention takes its fused fast
    # path (aten::_native_multi_head_attention), which the TorchScript exporter cannot write.
    torch.onnx.export(model, tuple(example), path, **kw)


def graph_inputs(path):
    """The ONNX file's graph inputs (not initializers): [(name, rank)]."""
    import onnx
    g = onnx.load(path, load_external_data=False).graph
    inits = {i.name for i in g.initializer}
    return [(i.name, len(i.type.tensor_type.shape.dim)) for i in g.input if i.name not in inits]


def feed_names(spec, names):
    """The spec's inputs (in order) matched to the graph's input names: by name, else by position."""
    if set(names) <= set(spec.input_names):
        return {n: spec.input_names.index(n) for n in names}
    return {n: k for k, n in enumerate(names)}


def write_model_json(spec, path, cases):
    """model.json beside the export: fp32, max_batch_size 2 and max_dims at case 0's shapes (the largest)."""
    doc = {"platform": "onnx", "precision": "fp32"}
    names = [n for n, _ in graph_inputs(path)]
    idx = feed_names(spec, names)
    if spec.batched:
        doc["max_batch_size"] = zoo.BATCH[0]
        doc["max_dims"] = {n: list(cases[0][idx[n]].shape[1:]) for n in names}
    with open(os.path.join(os.path.dirname(path), "model.json"), "w") as f:
        json.dump(doc, f, indent=1)


def run_ort(spec, path, cases):
    """onnxruntime's outputs on every case."""
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    idx = feed_names(spec, [i.name for i in sess.get_inputs()])
    return [sess.run(None, {n: case[k] for n, k in idx.items()}) for case in cases]


def save(path, arrays_per_case):
    """Cases of arrays as one npz (keys c<case>_<index>)."""
    np.savez(path, **{f"c{c}_{k}": a for c, arrs in enumerate(arrays_per_case) for k, a in enumerate(arrs)})


def load(path):
    """What save() wrote, as a list (per case) of lists of arrays."""
    z = np.load(path)
    out = {}
    for key in z.files:
        c, k = key[1:].split("_")
        out.setdefault(int(c), {})[int(k)] = z[key]
    return [[out[c][k] for k in sorted(out[c])] for c in sorted(out)]


def float64_refs(torch, model, cases):
    """PyTorch's outputs with the model and the floating inputs in float64: how far fp32 itself is from exact."""
    import copy
    m64 = copy.deepcopy(model).double()
    with torch.no_grad():
        return [as_arrays(m64(*[torch.from_numpy(a.astype(np.float64) if a.dtype == np.float32 else a)
                                for a in case])) for case in cases]


def one_exporter(torch, spec, model, cases, mdir, repo, exporter):
    """Export with one exporter and run onnxruntime on the file; its record."""
    missing = exporter_missing(torch, exporter)
    if missing:
        return {"status": "exporter unavailable", "error": missing}
    d = os.path.join(repo, f"{spec.name}-{exporter}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    t0 = time.monotonic()
    example = [torch.from_numpy(a) for a in cases[0]]
    try:
        export(torch, spec, model, example, path, exporter)
    except Exception as e:  # the exporter's own limits are the finding
        return {"status": "not exportable", "error": first_line(e), "export_s": time.monotonic() - t0}
    rec = {"status": "exported", "model_dir": d, "export_s": round(time.monotonic() - t0, 2)}
    write_model_json(spec, path, cases)
    try:
        save(os.path.join(mdir, f"ort-{exporter}.npz"), run_ort(spec, path, cases))
    except Exception as e:  # recorded: inferd is then compared with PyTorch alone
        rec["ort_error"] = first_line(e)
    return rec


def worker(name, workdir, repo, exporters, threads):
    """Build, reference and export one model; result.json in WORKDIR/<name>."""
    import torch
    torch.set_num_threads(threads)
    spec = next(s for s in zoo.specs() if s.name == name)
    mdir = os.path.join(workdir, name)
    os.makedirs(mdir, exist_ok=True)
    result = {"model": name, "family": spec.family, "classifier": spec.classifier, "exporters": {}}

    def flush():
        with open(os.path.join(mdir, "result.json.tmp"), "w") as f:
            json.dump(result, f, indent=1)
        os.replace(os.path.join(mdir, "result.json.tmp"), os.path.join(mdir, "result.json"))

    torch.manual_seed(zoo.seed_of(name))
    rng = np.random.default_rng(zoo.seed_of(name))
    try:
        model = spec.build()
    except zoo.Unavailable as e:
        result["unavailable"] = str(e)
        flush()
        return 0
    except Exception as e:  # the constructor itself fails with this library version: recorded for every exporter
        result["torch_error"] = "building the model: " + first_line(e)
        traceback.print_exc()
        flush()
        return 0
    cases = [spec.inputs(rng, 0), spec.inputs(rng, 1)]
    calib = [torch.from_numpy(a) for a in spec.inputs(np.random.default_rng(7), 0)]
    try:
        zoo.randomise_zero_weights(model)
        zoo.randomise_norms(model, calib)
        with torch.no_grad():
            refs = [as_arrays(model(*[torch.from_numpy(a) for a in case])) for case in cases]
    except Exception as e:  # PyTorch itself cannot run it: every exporter is recorded so
        result["torch_error"] = first_line(e)
        traceback.print_exc()
        flush()
        return 0
    save(os.path.join(mdir, "inputs.npz"), cases)
    save(os.path.join(mdir, "torch.npz"), refs)
    try:
        save(os.path.join(mdir, "torch64.npz"), float64_refs(torch, model, cases))
    except Exception as e:  # kept: only the noise floor is then unknown
        result["float64_error"] = first_line(e)
    flush()
    for exporter in exporters:
        result["exporters"][exporter] = {"status": "exporting"}
        flush()
        result["exporters"][exporter] = one_exporter(torch, spec, model, cases, mdir, repo, exporter)
        flush()
    return 0
