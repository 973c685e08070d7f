"""gpu_check_common.py: what the GPU check scripts (gpu_check_*.py) share.

A check writes a model directory (model.onnx, model.json) with a manifest of
cases in the format tests/helpers/onnx_reference.py writes (inputs as raw
.bin files), runs them through inferd's engine on the device with
`onnx_engine_run --dump` (tests/helpers, built on demand in the build
directory; INFERD_TEST_DEVICE picks the device, and the helper fails if any
device memory is allocated after the contexts are created), and reads back
each output from <case>/<output>.inferd.bin.  Speed comes from
`inferd-bench-engine --engine=DIR --json` (the backend alone, CUDA graphs on).
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXIT_SKIP = 77
DTYPES = {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64", np.dtype(np.int32): "INT32",
          np.dtype(np.bool_): "BOOL", np.dtype(np.float16): "FP16"}


def load_module(name, relpath):
    """A Python file of the repository as a module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO_ROOT, relpath))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def need_modules(*names):
    """Import the modules or exit 77 (skip) naming the missing one."""
    mods = []
    for n in names:
        try:
            mods.append(importlib.import_module(n))
        except ImportError as e:
            print(f"SKIP: cannot import {n}: {e}", file=sys.stderr)
            sys.exit(EXIT_SKIP)
    return mods


def engine_run_path(build):
    """tests/helpers/onnx_engine_run in the build directory, built when missing."""
    path = os.path.join(build, "tests", "helpers", "onnx_engine_run")
    if not os.access(path, os.X_OK):
        subprocess.run(["make", "-C", build, "tests/helpers/onnx_engine_run"], check=True,
                       stdout=subprocess.DEVNULL)
    return path


def torch_device(args):
    """Where PyTorch runs: the GPU when inferd runs on one (a CPU dry run: the CPU)."""
    return "cuda" if args.device.startswith("cuda") else "cpu"


def link_or_copy(src, dst):
    """dst as a hard link to src, or a copy where links are refused."""
    if os.path.exists(dst):
        os.unlink(dst)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def write_json(path, doc):
    """Write doc to path (when given) through a temporary file."""
    if not path:
        return
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def versions(torch, args, **extra):
    """What a run was made with, for its JSON file (extra: the check's own libraries' versions)."""
    import onnx
    gpu = torch.cuda.get_device_name(0) if torch_device(args) == "cuda" else None
    return {"torch": torch.__version__, "cuda": torch.version.cuda, **extra, "onnx": onnx.__version__,
            "gpu": gpu, "cudnn": torch.backends.cudnn.version() if gpu else None}


def write_model_dir(model_dir, onnx_path, config):
    """model_dir/model.onnx (moved there) and model.json from config."""
    os.makedirs(model_dir, exist_ok=True)
    target = os.path.join(model_dir, "model.onnx")
    if os.path.abspath(onnx_path) != os.path.abspath(target):
        os.replace(onnx_path, target)
    with open(os.path.join(model_dir, "model.json"), "w") as f:
        json.dump(config, f, indent=1)


def write_case(model_dir, case, names, arrays, outputs):
    """Write one case's inputs; outputs: [(name, shape)].  Returns its manifest entry."""
    os.makedirs(os.path.join(model_dir, case), exist_ok=True)
    ins = []
    for n, a in zip(names, arrays):
        a = np.ascontiguousarray(a)
        rel = f"{case}/{n}.bin"
        a.tofile(os.path.join(model_dir, rel))
        ins.append({"name": n, "datatype": DTYPES[a.dtype], "shape": list(a.shape), "file": rel})
    outs = [{"name": n, "shape": list(s), "ort_file": f"{case}/{n}.unused.bin"} for n, s in outputs]
    return {"dir": case, "inputs": ins, "outputs": outs}


def run_engine(build, model_dir, cases, device, name):
    """Run the cases through inferd's engine on device; returns the helper's output text."""
    with open(os.path.join(model_dir, "manifest.json"), "w") as f:
        json.dump({"model": name, "onnx": "model.onnx", "opset": 17, "cases": cases}, f)
    env = dict(os.environ, INFERD_TEST_DEVICE=device)
    p = subprocess.run([engine_run_path(build), "--dump", os.path.join(model_dir, "manifest.json")],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:])
        raise RuntimeError(f"onnx_engine_run --dump {model_dir} on {device}: exit {p.returncode}")
    return p.stdout


def read_output(model_dir, case, name, shape, dtype=np.float32):
    """An output the engine wrote for a case."""
    path = os.path.join(model_dir, case, f"{name}.inferd.bin")
    a = np.fromfile(path, dtype=dtype)
    if a.size != int(np.prod(shape)):
        raise RuntimeError(f"{path}: {a.size} elements, expected shape {shape}")
    return a.reshape(shape)


def rel_error(got, want):
    """max |got - want| / max |want| (NaN anywhere counts as infinite)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    scale = float(np.max(np.abs(want))) or 1e-30
    return float(np.max(np.abs(got - want))) / scale


def engine_json(build, model_dir, device, rows, duration=1.5, warmup=0.5, extra=()):
    """inferd-bench-engine --engine=model_dir --json (with extra options): its JSON document."""
    exe = os.path.join(build, "client", "bench", "inferd-bench-engine")
    p = subprocess.run([exe, f"--engine={model_dir}", f"--device={device}", f"--rows={rows}",
                        f"--duration={duration}", f"--warmup={warmup}", "--json", *extra],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"inferd-bench-engine {model_dir} rows {rows}: {p.stderr.strip()[-2000:]}")
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def bench_engine(build, model_dir, device, rows, duration=1.5, warmup=0.5):
    """inferd's backend alone: median ms per batch of rows (host time of run + sync)."""
    return engine_json(build, model_dir, device, rows, duration, warmup)["batch_us"]["p50"] / 1e3


def add_common_args(ap):
    """--build and --device, which every check takes."""
    ap.add_argument("--build", default="_g", help="the configured build directory (default _g)")
    ap.add_argument("--device", default="cuda:0", help="inferd's device (default cuda:0)")
    ap.add_argument("--workdir", default=None, help="keep the models and cases here (default: a temporary dir)")
