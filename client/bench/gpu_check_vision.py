#!/usr/bin/env python3
"""gpu_check_vision.py: torchvision classifiers through inferd on the GPU: fp32 exactness, fp16 top-1 agreement, speed.

    gpu_check_vision.py [--build _g] [--device cuda:0] [--models resnet50 mobilenetv3 efficientnet_b0 vit_b_16]
                        [--batches 1,8,64] [--strict-cases 2] [--tol 1e-4] [--inputs 1000] [--case-batch 50]
                        [--min-agree 0.99] [--no-fp16] [--no-speed] [--runs 30] [--warmup 5]
                        [--engine-duration 1.5] [--compile] [--side 224] [--bn fold|keep]
                        [--weights calibrated|reference] [--json PATH] [--workdir DIR]

Each model is tests/helpers/onnx_reference.py's (torchvision constructor, random
weights, its seed, norm affine parameters randomised; ViT-B/16's head
re-initialised) with, unless --weights reference, every BatchNorm's running
statistics measured on random inputs (with onnx_reference.py's random ones the
CNNs answer one class whatever the image: see calibrate_bn), exported at opset
17 with a dynamic batch axis (BatchNorm folded by the exporter unless --bn
keep) and served twice: model.json
{"platform": "onnx", "max_batch_size": M, "precision": "fp32"} and the same
at "fp16" (M covers every batch asked for).  Three parts per model:

  strict  fp32: --strict-cases random N(0, 1) inputs at each of --batches run
          through inferd's engine (onnx_engine_run --dump on --device) and
          through the same PyTorch model on the same device in fp32 with TF32
          off; each case's max|inferd - torch| / max|torch| must be <= --tol.
          Both are also compared with the model in float64 (PyTorch), so the
          fp32 rounding noise floor of the model shows beside the figure.
  fp16    --inputs random images (cases of --case-batch) through inferd at
          precision fp16 against PyTorch fp32 (TF32 off): top-1 agreement must
          be >= --min-agree; the max error relative to the output scale, the
          disagreements that are near-ties (PyTorch's top-2 margin below the
          largest logit error), how many distinct classes PyTorch predicted
          (a model that always says the same class agrees trivially) and the
          input signal (spread of the logits over inputs / over classes) are reported.
  speed   at each of --batches and both precisions: inferd's backend alone
          (inferd-bench-engine --engine=DIR --json, p50 of a batch) against
          PyTorch eager and PyTorch replaying a captured torch.cuda.graph
          (client/bench/onnx_peer.py's timing: CUDA events, median of --runs
          after --warmup; cudnn.benchmark on; fp32 with TF32 off on both sides,
          fp16 = model.half() and half inputs), and torch.compile with --compile.
          Ratios are PyTorch time / inferd time (> 1: inferd is faster).

On --device cpu (a dry run of the plumbing with the CPU build) the PyTorch
reference runs on the CPU, the CUDA-graph and fp16 PyTorch peers are skipped
(the CPU backend computes an fp16 model in FP32), and small sizes suit:
--batches 1,2 --inputs 20 --side 64 (--side: the CNNs' image side; ViT-B/16 needs 224).

Prints a line per case, a SUMMARY line per model and part, and a final verdict;
--json PATH gets every figure, rewritten after each model ("pass" is null until
the last one is done).  Exit 0 when every correctness bar holds, 1 when
one fails (or a model could not be exported, run or timed by inferd), 77
without torch/torchvision/onnx, or without CUDA in PyTorch for a GPU device.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_common as gc  # noqa: E402

MODELS = ["resnet50", "mobilenetv3", "efficientnet_b0", "vit_b_16"]



def model_kind(ref, name, side):
    """The model's input kind from onnx_reference.py, at --side for the CNNs."""
    kind = ref.SPECS[name][1]
    if kind[0] != "image":
        raise SystemExit(f"--models: {name} is not an image model of onnx_reference.py")
    if name.startswith("vit") and side != kind[2]:
        raise SystemExit(f"--side {side}: {name} takes {kind[2]}x{kind[2]} images only")
    return ("image", kind[1], side)


def calibrate_bn(torch, model, kind, dev):
    """Set every BatchNorm's running statistics to those of random N(0, 1) inputs (4 batches of 16).

    With onnx_reference.py's random statistics a deep CNN's logits barely
    depend on its input (ResNet-50, MobileNetV3 and EfficientNet-B0 then
    predict one class for every random image, so top-1 agreement says nothing
    and an error in the trunk hides under the output scale); statistics of the
    data, as a trained model has, keep the signal alive through the depth.
    The affine parameters stay onnx_reference.py's random ones.
    """
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return model
    for m in bns:
        m.reset_running_stats()
        m.momentum = None	# a cumulative average over the calibration batches
    model = model.to(dev).train()
    rng = np.random.default_rng(3000)
    with torch.no_grad():
        for _ in range(4):
            _, (x,) = gc_inputs(kind, 16, rng)
            model(torch.from_numpy(x).to(dev))
    return model.cpu().eval()


def built_model(ref, torch, name, kind, args):
    """The model as exported and compared: onnx_reference.py's, BatchNorm calibrated unless --weights reference."""
    model, _, outputs = ref.build(name)
    if args.weights == "calibrated":
        model = calibrate_bn(torch, model, kind, gc.torch_device(args))
    return model, outputs


def export_dirs(ref, torch, name, kind, args, work):
    """Export the model once; its fp32 and fp16 model directories. Returns (model, dirs, names, output)."""
    model, outputs = built_model(ref, torch, name, kind, args)
    args.state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    names, example = ref.make_inputs(kind, 2, None, np.random.default_rng(ref.SEED))
    dirs = {p: os.path.join(work, f"{name}-{p}") for p in ("fp32", "fp16")}
    os.makedirs(dirs["fp32"], exist_ok=True)
    path = os.path.join(dirs["fp32"], "model.onnx")
    t0 = time.monotonic()
    ref.export(model, kind, names, outputs, example, path, 17, args.bn == "keep")
    print(f"{name}: exported at opset 17 in {time.monotonic() - t0:.1f} s ({os.path.getsize(path)} bytes)")
    max_batch = max(args.batches + ([args.case_batch] if not args.no_fp16 else []))
    for p, d in dirs.items():
        os.makedirs(d, exist_ok=True)
        if p != "fp32":
            gc.link_or_copy(path, os.path.join(d, "model.onnx"))
        gc.write_model_dir(d, os.path.join(d, "model.onnx"),
                           {"platform": "onnx", "max_batch_size": max_batch, "precision": p})
    return model.to(gc.torch_device(args)).eval(), dirs, names, outputs[0]



def torch_logits(torch, model, x, dev):
    """PyTorch's fp32 output for a numpy batch, as float64 numpy."""
    with torch.no_grad():
        return model(torch.from_numpy(x).to(dev)).double().cpu().numpy()


def strict_part(torch, model, model_dir, names, output, kind, args, name):
    """fp32 inferd vs PyTorch on --strict-cases inputs per batch size; returns the part's record."""
    import copy
    rng = np.random.default_rng(1000 + 17)
    dev = gc.torch_device(args)
    model64 = copy.deepcopy(model).double()
    model64.failed = None
    cases, want = [], {}
    for b in args.batches:
        for k in range(args.strict_cases):
            _, (x,) = gc_inputs(kind, b, rng)
            y = torch_logits(torch, model, x, dev)
            y64 = float64_logits(torch, model64, x, dev)
            case = f"b{b}_{k}"
            cases.append(gc.write_case(model_dir, case, names, [x], [(output, y.shape)]))
            want[case] = (b, y, y64)
    del model64
    gc.run_engine(args.build, model_dir, cases, args.device, f"{name}-fp32")
    rows = [strict_row(model_dir, c, output, want[c["dir"]], args.tol, name) for c in cases]
    worst = max(r["error"] for r in rows)
    return {"tol": args.tol, "cases": rows, "worst_error": worst, "ok": worst <= args.tol,
            "worst_inferd_vs_fp64": worst_of(r["inferd_vs_fp64"] for r in rows),
            "worst_torch_vs_fp64": worst_of(r["torch_vs_fp64"] for r in rows)}


def worst_of(errors):
    """The largest of errors, None when any is missing."""
    errors = list(errors)
    return None if any(e is None for e in errors) else max(errors)


def fmt_err(e):
    """An error figure or 'n/a'."""
    return "n/a" if e is None else f"{e:.3g}"


def float64_logits(torch, model64, x, dev):
    """The model's output in float64 (the noise floor's reference), or None once float64 failed on dev."""
    if model64.failed:
        return None
    try:
        with torch.no_grad():
            return model64(torch.from_numpy(x).to(dev).double()).cpu().numpy()
    except Exception as e:  # only context is lost: the bar is against PyTorch fp32
        model64.failed = f"{type(e).__name__}: {e}"
        print(f"PyTorch float64 reference failed on {dev}, the noise floor is not reported: {model64.failed}")
        return None


def strict_row(model_dir, case, output, want, tol, name):
    """One fp32 case's errors: inferd vs PyTorch fp32 (the bar), and both against PyTorch in float64."""
    b, y, y64 = want
    got = gc.read_output(model_dir, case["dir"], output, y.shape)
    err = gc.rel_error(got, y)
    row = {"case": case["dir"], "batch": b, "error": err, "scale": float(np.max(np.abs(y))), "ok": err <= tol,
           "inferd_vs_fp64": gc.rel_error(got, y64) if y64 is not None else None,
           "torch_vs_fp64": gc.rel_error(y, y64) if y64 is not None else None}
    print(f"{name} fp32 {case['dir']}: max|inferd - torch| / max|torch| = {err:.3g} (scale {row['scale']:.3g}; "
          f"against float64: inferd {fmt_err(row['inferd_vs_fp64'])}, torch fp32 {fmt_err(row['torch_vs_fp64'])}) "
          f"{'ok' if row['ok'] else 'FAIL'}")
    return row


def gc_inputs(kind, batch, rng):
    """Random N(0, 1) images of the model's kind: (names, [array])."""
    _, ch, side = kind
    return ["input"], [rng.standard_normal((batch, ch, side, side)).astype(np.float32)]


def fp16_part(torch, model, model_dir, names, output, kind, args, name):
    """fp16 inferd vs fp32 PyTorch on --inputs images: top-1 agreement; returns the part's record."""
    rng = np.random.default_rng(2000 + 11)
    dev = gc.torch_device(args)
    cases, want = [], []
    for k in range(0, args.inputs, args.case_batch):
        n = min(args.case_batch, args.inputs - k)
        _, (x,) = gc_inputs(kind, n, rng)
        y = torch_logits(torch, model, x, dev)
        cases.append(gc.write_case(model_dir, f"c{k // args.case_batch:04d}", names, [x], [(output, y.shape)]))
        want.append(y)
    gc.run_engine(args.build, model_dir, cases, args.device, f"{name}-fp16")
    got = np.concatenate([gc.read_output(model_dir, c["dir"], output, w.shape) for c, w in zip(cases, want)])
    want = np.concatenate(want)
    return agreement(got, want, args.min_agree)


def agreement(got, want, min_agree):
    """Top-1 agreement of got with want, the errors, near-ties and distinct classes."""
    err = gc.rel_error(got, want)
    max_abs = float(np.max(np.abs(got.astype(np.float64) - want))) if np.all(np.isfinite(got)) else float("inf")
    agree = got.argmax(1) == want.argmax(1)
    top2 = np.sort(want, axis=1)[:, -2:]
    near_tie = (top2[:, 1] - top2[:, 0]) <= max_abs
    rate = float(agree.mean())
    return {"inputs": int(len(agree)), "agree": int(agree.sum()), "rate": rate, "min_agree": min_agree,
            "max_error": err, "max_abs_error": max_abs, "scale": float(np.max(np.abs(want))),
            "disagreements": int((~agree).sum()), "near_ties": int((~agree & near_tie).sum()),
            "distinct_top1": int(len(np.unique(want.argmax(1)))), "signal": signal(want), "ok": rate >= min_agree}


def signal(want):
    """How much the logits depend on the input: their spread over inputs / their spread over classes."""
    over_classes = float(np.mean(np.std(want, axis=1)))
    return float(np.mean(np.std(want, axis=0))) / over_classes if over_classes > 0 else 0.0


def torch_model(ref, torch, name, precision, dev, state):
    """A fresh PyTorch peer with the exported weights (state) in the precision on dev."""
    model, _, _ = ref.build(name, for_export=False)
    model.load_state_dict(state)
    model = model.to(dev).eval()
    return model.half() if precision == "fp16" else model


def time_peer(fn, *a):
    """Median ms of a timing function's seconds, or (None, the error)."""
    try:
        return float(np.median(fn(*a))) * 1e3, None
    except Exception as e:  # a peer that cannot run is reported, not fatal
        return None, f"{type(e).__name__}: {e}"


def torch_peers(torch, peer, model, compiled, x, args):
    """PyTorch eager, CUDA graph and compiled median ms for one input (None with a reason where skipped)."""
    def eager(m=model):
        with torch.no_grad():
            m(x)
    res, errs = {}, {}
    if gc.torch_device(args) == "cpu":
        res["torch_eager_ms"], errs["torch_eager"] = time_peer(peer.time_host, eager, args.runs, args.warmup)
        res["torch_cudagraph_ms"], errs["torch_cudagraph"] = None, "skipped: no CUDA graphs on the CPU"
    else:
        res["torch_eager_ms"], errs["torch_eager"] = time_peer(peer.time_cuda, torch, eager, args.runs, args.warmup)

        def graph_times():
            return peer.time_cuda(torch, peer.cuda_graph(torch, model, [x]), args.runs, args.warmup)
        res["torch_cudagraph_ms"], errs["torch_cudagraph"] = time_peer(graph_times)
    if compiled is not None:
        timer = peer.time_host if gc.torch_device(args) == "cpu" else (lambda f, r, w: peer.time_cuda(torch, f, r, w))
        res["torch_compile_ms"], errs["torch_compile"] = time_peer(timer, lambda: eager(compiled), args.runs,
                                                                   args.warmup)
    return res, {k: v for k, v in errs.items() if v is not None}


def speed_precision(ref, torch, peer, name, kind, precision, model_dir, args):
    """Speed rows of one precision: inferd engine vs the PyTorch peers at each batch."""
    dev = gc.torch_device(args)
    model = compiled = None
    skip_peer = dev == "cpu" and precision == "fp16"
    if not skip_peer:
        model = torch_model(ref, torch, name, precision, dev, args.state)
        if args.compile:
            compiled = torch.compile(model, dynamic=False) if hasattr(torch, "compile") else None
    rows = []
    for b in args.batches:
        row = {"model": name, "precision": precision, "batch": b, "device": args.device, "errors": {}}
        try:
            row["inferd_ms"] = gc.bench_engine(args.build, model_dir, args.device, b, args.engine_duration,
                                               args.engine_warmup)
        except RuntimeError as e:
            row["inferd_ms"], row["errors"]["inferd"] = None, str(e)
        if skip_peer:
            row["errors"]["torch"] = "skipped: the CPU backend computes fp16 models in FP32; no PyTorch fp16 CPU peer"
        else:
            _, (xa,) = gc_inputs(kind, b, np.random.default_rng(ref.SEED))
            x = torch.from_numpy(xa).to(dev)
            x = x.half() if precision == "fp16" else x
            res, errs = torch_peers(torch, peer, model, compiled, x, args)
            row.update(res)
            row["errors"].update(errs)
            if args.compile and compiled is None:
                row["errors"]["torch_compile"] = f"torch {torch.__version__} has no torch.compile"
        for k in ("torch_eager", "torch_cudagraph", "torch_compile"):
            t, i = row.get(k + "_ms"), row.get("inferd_ms")
            row[k + "_ratio"] = t / i if t and i else None
        rows.append(row)
        print(speed_text(row))
    del model, compiled
    if dev == "cuda":
        torch.cuda.empty_cache()
    return rows


def fmt_ms(v):
    """A time in ms or a dash."""
    return f"{v:.3f} ms" if v is not None else "-"


def speed_text(row):
    """One speed row as text."""
    parts = [f"inferd {fmt_ms(row.get('inferd_ms'))}"]
    for k, label in (("torch_eager", "torch eager"), ("torch_cudagraph", "torch+graph"),
                     ("torch_compile", "torch.compile")):
        if row.get(k + "_ms") is not None:
            parts.append(f"{label} {fmt_ms(row[k + '_ms'])} ({row[k + '_ratio']:.2f}x)")
    text = f"{row['model']} {row['precision']} b{row['batch']} speed: " + ", ".join(parts)
    bad = {k: v for k, v in row["errors"].items() if not v.startswith("skipped")}
    return text + (f"; errors: {bad}" if bad else "")


def speed_part(ref, torch, peer, name, kind, dirs, args):
    """Speed rows for both precisions; cudnn.benchmark on for the peers (what a PyTorch user tuning does)."""
    if gc.torch_device(args) == "cuda":
        torch.backends.cudnn.benchmark = True
    try:
        rows = []
        for p in args.precisions:
            rows += speed_precision(ref, torch, peer, name, kind, p, dirs[p], args)
        return rows
    finally:
        torch.backends.cudnn.benchmark = False


def check_model(ref, torch, peer, name, args, work):
    """Every part for one model; returns its record (error set when a step could not run)."""
    rec = {"model": name, "error": None, "strict": None, "fp16": None, "speed": []}
    try:
        kind = model_kind(ref, name, args.side)
        rec["image_side"] = kind[2]
        model, dirs, names, output = export_dirs(ref, torch, name, kind, args, work)
        rec["weights"] = args.weights
        rec["strict"] = strict_part(torch, model, dirs["fp32"], names, output, kind, args, name)
        if not args.no_fp16:
            rec["fp16"] = fp16_part(torch, model, dirs["fp16"], names, output, kind, args, name)
        del model
        if gc.torch_device(args) == "cuda":
            torch.cuda.empty_cache()
        if not args.no_speed:
            rec["speed"] = speed_part(ref, torch, peer, name, kind, dirs, args)
    except Exception as e:  # reported, and the check fails
        rec["error"] = f"{type(e).__name__}: {e}"
    return rec


def summary_lines(rec, args):
    """The SUMMARY lines of one model's record; returns (lines, failed)."""
    name, dev = rec["model"], args.device
    lines, failed = [], False
    if rec["error"]:
        lines.append(f"SUMMARY {name} on {dev}: FAIL: {rec['error']}")
        failed = True
    s = rec["strict"]
    if s:
        lines.append(f"SUMMARY {name} fp32 on {dev} vs PyTorch fp32 (TF32 off): worst error {s['worst_error']:.3g} "
                     f"of the output scale over {len(s['cases'])} cases at batch "
                     f"{','.join(str(b) for b in args.batches)} (tolerance {s['tol']:g}; against PyTorch float64: inferd "
                     f"{fmt_err(s['worst_inferd_vs_fp64'])}, PyTorch fp32 {fmt_err(s['worst_torch_vs_fp64'])}) "
                     f"{'PASS' if s['ok'] else 'FAIL'}")
        failed |= not s["ok"]
    f = rec["fp16"]
    if f:
        lines.append(f"SUMMARY {name} fp16 on {dev} vs PyTorch fp32: top-1 agreement {f['agree']}/{f['inputs']} = "
                     f"{f['rate']:.4f} (minimum {f['min_agree']:g}; {f['near_ties']} of the {f['disagreements']} "
                     f"disagreements are near-ties; PyTorch predicted {f['distinct_top1']} distinct classes, "
                     f"input signal {f['signal']:.3g}); "
                     f"max error {f['max_error']:.3g} of the output scale (max|torch| {f['scale']:.3g}) "
                     f"{'PASS' if f['ok'] else 'FAIL'}")
        failed |= not f["ok"]
    for row in rec["speed"]:
        lines.append("SUMMARY " + speed_text(row))
        failed |= row["inferd_ms"] is None
    return lines, failed


def parse_args():
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gc.add_common_args(ap)
    ap.add_argument("--models", nargs="+", default=MODELS, help=f"image models (default {' '.join(MODELS)})")
    ap.add_argument("--batches", default="1,8,64", help="batch sizes for the fp32 cases and speed (default 1,8,64)")
    ap.add_argument("--strict-cases", type=int, default=2, help="fp32 cases per batch size (default 2)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--inputs", type=int, default=1000, help="images for the fp16 agreement (default 1000)")
    ap.add_argument("--case-batch", type=int, default=50, help="fp16 images per engine case (default 50)")
    ap.add_argument("--min-agree", type=float, default=0.99)
    ap.add_argument("--precisions", default="fp32,fp16", help="speed precisions (default fp32,fp16)")
    ap.add_argument("--no-fp16", action="store_true", help="skip the fp16 agreement part")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed part")
    ap.add_argument("--runs", type=int, default=30, help="timed PyTorch runs per point (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed PyTorch runs first (default 5)")
    ap.add_argument("--engine-duration", type=float, default=1.5, help="inferd-bench-engine seconds (default 1.5)")
    ap.add_argument("--engine-warmup", type=float, default=0.5, help="inferd-bench-engine warm-up s (default 0.5)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile(model) (slow to compile)")
    ap.add_argument("--side", type=int, default=224, help="CNN image side (default 224; ViT-B/16 needs 224)")
    ap.add_argument("--bn", choices=("fold", "keep"), default="fold",
                    help="BatchNorm folded by the exporter (default) or left for inferd to fold")
    ap.add_argument("--weights", choices=("calibrated", "reference"), default="calibrated",
                    help="BatchNorm statistics from random inputs (default) or onnx_reference.py's random ones")
    ap.add_argument("--json", default=None, help="write every figure here")
    args = ap.parse_args()
    try:
        args.batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        ap.error("--batches takes comma-separated integers")
    args.precisions = [p for p in args.precisions.split(",") if p]
    if not args.batches or any(b < 1 for b in args.batches):
        ap.error("--batches must be integers >= 1")
    if any(p not in ("fp32", "fp16") for p in args.precisions):
        ap.error("--precisions takes fp32 and/or fp16")
    if min(args.strict_cases, args.inputs, args.case_batch, args.runs, args.side) < 1 or args.warmup < 0:
        ap.error("--strict-cases, --inputs, --case-batch, --runs and --side must be >= 1, --warmup >= 0")
    if args.engine_duration <= 0 or args.engine_warmup < 0:
        ap.error("--engine-duration must be > 0, --engine-warmup >= 0")
    return args



def versions(torch, args):
    """What the run was made with, for the JSON file."""
    import torchvision
    return gc.versions(torch, args, torchvision=torchvision.__version__)


def main():
    args = parse_args()
    (torch,) = gc.need_modules("torch")
    gc.need_modules("torchvision", "onnx")
    if gc.torch_device(args) == "cuda" and not torch.cuda.is_available():
        print("SKIP: torch.cuda is not available (the reference runs on the GPU)", file=sys.stderr)
        return gc.EXIT_SKIP
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = gc.load_module("onnx_reference", "tests/helpers/onnx_reference.py")
    peer = gc.load_module("onnx_peer", "client/bench/onnx_peer.py")
    for name in args.models:
        if name not in ref.SPECS or ref.SPECS[name][1][0] != "image":
            print(f"gpu_check_vision: --models: {name} is not an image model of onnx_reference.py", file=sys.stderr)
            return 2
    doc = {"tool": "gpu_check_vision", "device": args.device, "argv": sys.argv[1:],
           "versions": versions(torch, args), "models": []}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="gpu_check_vision.") as tmp:
        work = args.workdir or tmp
        for name in args.models:
            t0 = time.monotonic()
            rec = check_model(ref, torch, peer, name, args, work)
            rec["elapsed_s"] = time.monotonic() - t0
            doc["models"].append(rec)
            lines, bad = summary_lines(rec, args)
            print("\n".join(lines) + f"\n{name}: {rec['elapsed_s']:.0f} s", flush=True)
            failed += bad
            doc["pass"] = None if name != args.models[-1] else failed == 0
            gc.write_json(args.json, doc)	# after each model, so a run cut short keeps what it measured
    print(f"gpu_check_vision: {'PASS' if failed == 0 else 'FAIL'} ({failed} of {len(args.models)} models failed)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
