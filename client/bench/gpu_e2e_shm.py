#!/usr/bin/env python3
"""gpu_e2e_shm.py: end to end over shared memory against inferd's engine alone: 16 clients of one image, ResNet-50 fp16.

    gpu_e2e_shm.py [--build _g] [--device cuda:0] [--model resnet50] [--precision fp16] [--side 224]
                   [--clients 16] [--max-batch 16] [--queue-delay-us US] [--duration 5] [--warmup 1]
                   [--engine-duration 3] [--cpu-threads T] [--min-ratio 0.9] [--json PATH] [--daemon-log PATH] [--workdir DIR]

The model is tests/helpers/onnx_reference.py's (--model, an image model;
random weights, its seed, exported at opset 17 with a dynamic batch axis and
BatchNorm folded, the export gpu_check_resnet_fp16.py uses; --side sets the
image side of a CNN for a quick run), served from a repository of its own with
model.json {"platform": "onnx", "max_batch_size": --max-batch, "precision":
--precision} (plus dynamic_batching.max_queue_delay_us with --queue-delay-us;
otherwise the batcher's defaults).

1. A daemon (BUILD/inferd --device, a free HTTP port, a private shm socket;
   its log in the work directory) serves it; client/bench/inferd-bench runs
   --clients shm connections, each sending one image a request, back to back
   (--concurrency=N --rows=1, --warmup then --duration seconds), and reads
   the server's inference_count/execution_count over the interval through
   --url: the mean batch the batcher formed.  GET /metrics afterwards gives
   inferd_allocations_after_startup.  The daemon is stopped.
2. inferd-bench-engine --engine=DIR --rows=B (B: that mean batch, rounded) on
   the same device: the backend alone, no daemon, images/s at batch B.
3. Reported: images/s end to end, the engine's images/s at B, their ratio
   (target >= --min-ratio: the daemon costs at most 10 %), p50/p99/max
   latency of a request, the mean batch; a SUMMARY line and, with --json, every
   figure.

Exit 0 when both measurements ran (the ratio's verdict is in the SUMMARY line,
"target met" or "target missed"), 1 when something failed (the daemon did not
start, a request was refused, an output was wrong, the server's counters could
not be read), 77 without torch/torchvision/onnx.  A CPU dry run of the
plumbing: --device cpu --model resnet18 --side 64 --duration 2 --cpu-threads 1 (on a
busy small machine OpenMP's spinning threads make either side erratic).
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_common as gc  # noqa: E402

START_TIMEOUT_S = 300	# loading compiles a plan and captures a graph per batch size


def export_model(ref, args, repo):
    """The model directory repo/<name>: model.onnx and model.json."""
    kind = ref.SPECS[args.model][1]
    if kind[0] != "image":
        raise SystemExit(f"--model: {args.model} is not an image model of onnx_reference.py")
    if args.side is not None and args.model.startswith("vit") and args.side != kind[2]:
        raise SystemExit(f"--side {args.side}: {args.model} takes {kind[2]}x{kind[2]} images only")
    kind = ("image", kind[1], args.side or kind[2])
    model, _, outputs = ref.build(args.model)
    names, example = ref.make_inputs(kind, 2, None, np.random.default_rng(ref.SEED))
    model_dir = os.path.join(repo, args.model)
    os.makedirs(model_dir, exist_ok=True)
    path = os.path.join(model_dir, "model.onnx")
    ref.export(model, kind, names, outputs, example, path, 17, False)
    config = {"platform": "onnx", "max_batch_size": args.max_batch, "precision": args.precision}
    if args.queue_delay_us is not None:
        config["dynamic_batching"] = {"max_queue_delay_us": args.queue_delay_us}
    gc.write_model_dir(model_dir, path, config)
    return model_dir, kind


def wait_files(paths, proc, timeout):
    """Wait until every path exists; False when the process exits or time runs out."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(os.path.exists(p) for p in paths):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.1)
    return False


def start_daemon(args, repo, work):
    """BUILD/inferd on the repository: (process, url, socket, log path); raises when it does not start."""
    port_file, sock = os.path.join(work, "port"), os.path.join(work, "sock")
    for p in (port_file, sock):
        if os.path.exists(p):
            os.unlink(p)
    log_path = os.path.join(work, "daemon.log")
    log = open(log_path, "w")
    proc = subprocess.Popen([os.path.join(args.build, "inferd"), f"--model-repository={repo}",
                             f"--device={args.device}", "--http-port=0", f"--port-file={port_file}",
                             f"--shm-socket={sock}", f"--cpu_threads={args.cpu_threads}"],
                            stdout=log, stderr=subprocess.STDOUT)
    log.close()
    if not wait_files([port_file, sock], proc, START_TIMEOUT_S):
        stop_daemon(proc)
        with open(log_path) as f:
            tail = "".join(f.readlines()[-20:])
        raise RuntimeError(f"the daemon did not start (exit {proc.returncode}); its log ends:\n{tail}")
    with open(port_file) as f:
        url = f"http://127.0.0.1:{int(f.read().strip())}"
    return proc, url, sock, log_path


def stop_daemon(proc):
    """SIGTERM, up to 40 s, then SIGKILL."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_clients(args, url, sock):
    """inferd-bench over shm: its JSON report; raises on a failure or refused requests."""
    exe = os.path.join(args.build, "client", "bench", "inferd-bench")
    cmd = [exe, f"--socket={sock}", f"--url={url}", f"--model={args.model}", f"--concurrency={args.clients}",
           "--rows=1", f"--duration={args.duration}", f"--warmup={args.warmup}", "--json", "--label=e2e-shm"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"inferd-bench exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    rep = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])
    if rep.get("errors"):
        raise RuntimeError(f"inferd-bench: {rep['errors']} refused requests, the first: {rep.get('first_error')}")
    if not rep.get("server") or not rep["server"].get("execution_count_delta"):
        raise RuntimeError("inferd-bench could not read the server's counters (the mean batch) through --url")
    return rep


def allocations_after_startup(url):
    """The daemon's inferd_allocations_after_startup gauge, or None when /metrics lacks it."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith("inferd_allocations_after_startup "):
            return int(float(line.split()[1]))
    return None


def run_engine(args, model_dir, rows):
    """inferd-bench-engine --engine at rows a batch: its JSON report."""
    exe = os.path.join(args.build, "client", "bench", "inferd-bench-engine")
    p = subprocess.run([exe, f"--engine={model_dir}", f"--device={args.device}", f"--rows={rows}",
                        f"--duration={args.engine_duration}", f"--warmup={args.warmup}", "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, INFERD_CPU_THREADS=str(args.cpu_threads)))
    if p.returncode != 0:
        raise RuntimeError(f"inferd-bench-engine rows {rows}: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])


def measure(args, ref, work):
    """Both measurements; returns the result record."""
    repo = os.path.join(work, "repo")
    model_dir, kind = export_model(ref, args, repo)
    proc, url, sock, log_path = start_daemon(args, repo, work)
    try:
        rep = run_clients(args, url, sock)
        allocs = allocations_after_startup(url)
    finally:
        stop_daemon(proc)
        if args.daemon_log:
            shutil.copyfile(log_path, args.daemon_log)
    mean_batch = rep["server"]["mean_batch"]
    rows = min(args.max_batch, max(1, int(round(mean_batch))))
    eng = run_engine(args, model_dir, rows)
    e2e, alone = rep["rows_per_s"], eng["rows_per_s"]
    lat = rep["latency_us"]
    return {"tool": "gpu_e2e_shm", "model": args.model, "precision": args.precision, "image_side": kind[2],
            "device": args.device, "clients": args.clients, "max_batch_size": args.max_batch,
            "max_queue_delay_us": args.queue_delay_us, "duration_s": args.duration,
            "e2e_images_per_s": e2e, "mean_batch": mean_batch, "engine_rows": rows,
            "engine_images_per_s": alone, "engine_batch_p50_ms": eng["batch_us"]["p50"] / 1e3,
            "ratio": e2e / alone if alone else None, "min_ratio": args.min_ratio,
            "latency_ms": {k: lat[k] / 1e3 for k in ("p50", "p90", "p99", "max", "mean")},
            "requests": rep["requests"], "checked_outputs": rep["checked"],
            "allocations_after_startup": allocs, "daemon_log": log_path,
            "inferd_bench": rep, "inferd_bench_engine": eng}


def parse_args():
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gc.add_common_args(ap)
    ap.add_argument("--model", default="resnet50", help="an image model of onnx_reference.py (default resnet50)")
    ap.add_argument("--precision", default="fp16", choices=["fp32", "tf32", "fp16", "bf16"])
    ap.add_argument("--side", type=int, default=None, help="image side of a CNN (default: the model's, 224)")
    ap.add_argument("--clients", type=int, default=16, help="shm connections, one image a request (default 16)")
    ap.add_argument("--max-batch", type=int, default=16, help="the model's max_batch_size (default 16)")
    ap.add_argument("--queue-delay-us", type=int, default=None, help="dynamic_batching.max_queue_delay_us")
    ap.add_argument("--duration", type=float, default=5.0, help="measured seconds of load (default 5)")
    ap.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first (default 1)")
    ap.add_argument("--engine-duration", type=float, default=3.0, help="inferd-bench-engine seconds (default 3)")
    ap.add_argument("--cpu-threads", type=int, default=0,
                    help="CPU backend threads of the daemon and the engine alike (default 0: every core)")
    ap.add_argument("--min-ratio", type=float, default=0.9, help="target: end to end / engine (default 0.9)")
    ap.add_argument("--json", default=None, help="write every figure here")
    ap.add_argument("--daemon-log", default=None, help="keep a copy of the daemon's log here")
    args = ap.parse_args()
    if min(args.clients, args.max_batch) < 1 or (args.side is not None and args.side < 1):
        ap.error("--clients, --max-batch and --side must be >= 1")
    if args.duration <= 0 or args.engine_duration <= 0 or args.warmup < 0:
        ap.error("--duration and --engine-duration must be > 0, --warmup >= 0")
    if args.cpu_threads < 0:
        ap.error("--cpu-threads must be >= 0")
    if args.queue_delay_us is not None and args.queue_delay_us < 0:
        ap.error("--queue-delay-us must be >= 0")
    return args


def main():
    args = parse_args()
    gc.need_modules("torch", "torchvision", "onnx")
    for exe in ("inferd", "client/bench/inferd-bench", "client/bench/inferd-bench-engine"):
        if not os.access(os.path.join(args.build, exe), os.X_OK):
            print(f"gpu_e2e_shm: {args.build}/{exe} is missing: build first (make)", file=sys.stderr)
            return 2
    ref = gc.load_module("onnx_reference", "tests/helpers/onnx_reference.py")
    if args.model not in ref.SPECS:
        print(f"gpu_e2e_shm: --model: {args.model} is not a model of onnx_reference.py", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="gpu_e2e_shm.") as tmp:
        work = os.path.abspath(args.workdir or tmp)
        os.makedirs(work, exist_ok=True)
        try:
            res = measure(args, ref, work)
        except (RuntimeError, OSError, ValueError, KeyError) as e:
            print(f"SUMMARY e2e shm {args.model} {args.precision} on {args.device}: FAIL: {type(e).__name__}: {e}")
            return 1
    met = res["ratio"] is not None and res["ratio"] >= args.min_ratio
    lat = res["latency_ms"]
    print(f"SUMMARY e2e shm {args.model} {args.precision} on {args.device}, {args.clients} clients x 1 image: "
          f"{res['e2e_images_per_s']:.1f} images/s end to end at mean batch {res['mean_batch']:.2f}; engine alone "
          f"at batch {res['engine_rows']}: {res['engine_images_per_s']:.1f} images/s; ratio {res['ratio']:.3f} "
          f"(target >= {args.min_ratio:g}: {'target met' if met else 'target missed'}); latency p50 "
          f"{lat['p50']:.3f} ms, p99 {lat['p99']:.3f} ms, max {lat['max']:.3f} ms; allocations after start-up "
          f"{res['allocations_after_startup']}")
    res["target_met"] = met
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
