#!/usr/bin/env python3
"""gpu_check_encoders.py: BERT-base and DistilBERT encoders through inferd on the GPU at fp32 and fp16, against PyTorch.

    gpu_check_encoders.py [--build _g] [--device cuda:0] [--models bert distilbert]
                          [--precisions fp32,fp16] [--batch 1 8 64] [--seq 128]
                          [--tol 1e-4] [--tol-fp16 2e-2] [--no-speed] [--runs 30] [--warmup 5]
                          [--engine-duration 1.5] [--engine-warmup 0.5] [--compile]
                          [--json PATH] [--workdir DIR]

Each encoder comes from its transformers config with random weights
(tests/helpers/onnx_reference.py's constructors, seed and export: INT64
input_ids and attention_mask, dynamic batch and sequence axes, eager
attention, opset 17), exported once and served twice: model.json
{"platform": "onnx", "max_batch_size": max(--batch), "max_dims": {input:
[--seq]}, "precision": P} for P in --precisions (the fp16 directory holds the
same model.onnx, hard-linked): a model with variable dims, compiled per exact
shape on first use.  The cases (each --batch at --seq; every row but the first
padded after a random length) run through inferd's engine (onnx_engine_run
--dump on --device) at each precision; the reference for both is the same
PyTorch model on the same device in fp32 with TF32 off.  Per case:

  error      max|inferd - torch| / max|torch|; must be <= --tol at fp32 and
             <= --tol-fp16 at fp16.  fp16 stores every activation with ~1e-3
             relative rounding (2^-11 at each op's output), through 12 layers
             of matmul, softmax, GELU and LayerNorm (6 for DistilBERT); the
             roundings add up to ~1e-2 of the output scale, so 2e-2 bounds
             an fp16 engine that is right, while a wrong kernel (error ~1)
             still fails.
  agreement  the fraction of token positions (all batch x seq positions,
             padded ones included: both sides compute them) whose argmax over
             the hidden dimension is the same as PyTorch fp32's.  Reported,
             never a failure: random weights leave near-ties in the hidden
             state that fp16 rounding may flip.

Speed (unless --no-speed; skipped on --device cpu, a dry run of the plumbing),
per precision and batch: inferd-bench-engine on that precision's directory
(the backend alone, a CUDA graph per shape, p50 of a batch) against PyTorch
eager and PyTorch replaying a captured CUDA graph (SDPA attention and the mask
made graphable as client/bench/onnx_peer.py does; fp16 = model.half(); CUDA
events, median of --runs after --warmup; bf16 = model.to(torch.bfloat16)), and with --compile torch.compile
(compiled once per precision, reused across batches; a failure is reported as
text).  ratio_graph = PyTorch CUDA-graph ms / inferd ms (> 1: inferd is faster);
ratio_eager and ratio_compile likewise.

JSON (--json): {"tool": "gpu_check_encoders", "device", "argv", "versions":
{torch, cuda, transformers, onnx, gpu, cudnn}, "models": [{"model", "seq",
"error", "precisions": {P: {"tol", "worst_error", "min_agreement", "ok",
"cases": [{"case", "batch", "seq", "error", "scale", "agreement"}]}},
"speed": [{"model", "precision", "batch", "seq", "inferd_ms", "torch_eager_ms",
"torch_cudagraph_ms", "torch_compile_ms" (null without --compile or when it
failed), "ratio_graph", "ratio_eager", "ratio_compile", "errors": {peer: text}}],
"elapsed_s"}], "pass"}.

On --device cpu the CPU backend computes the fp16 model in FP32, so its error
is as small as fp32's; --models transformer --batch 1 2 --seq 16 suits a dry run.

Prints a line per case, SUMMARY lines per model and precision, and a final
verdict; --json PATH gets every figure, rewritten after each model ("pass" is
null until the last one is done).  Exit 0 when every case is within its
tolerance, 1 otherwise (or when a model could not be exported, run or timed by
inferd), 77 without torch/onnx/transformers, or without CUDA in PyTorch for a GPU device.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_common as gc  # noqa: E402




def export_dirs(ref, name, args, work):
    """Export the encoder once, a model directory per precision; returns (model, kind, names, outputs, dirs)."""
    model, kind, outputs = ref.build(name)
    names, example = ref.make_inputs(kind, 2, 16, np.random.default_rng(ref.SEED))
    dirs = {p: os.path.join(work, f"{name}-{p}") for p in args.precisions}
    first = dirs[args.precisions[0]]
    os.makedirs(first, exist_ok=True)
    path = os.path.join(first, "model.onnx")
    t0 = time.monotonic()
    ref.export(model, kind, names, outputs, example, path, 17, True)
    print(f"{name}: exported at opset 17 in {time.monotonic() - t0:.1f} s ({os.path.getsize(path)} bytes)")
    for p, d in dirs.items():
        os.makedirs(d, exist_ok=True)
        if d != first:
            gc.link_or_copy(path, os.path.join(d, "model.onnx"))
        gc.write_model_dir(d, os.path.join(d, "model.onnx"),
                           {"platform": "onnx", "max_batch_size": max(args.batch),
                            "max_dims": {n: [args.seq] for n in names}, "precision": p})
    return model.to(gc.torch_device(args)).eval(), kind, names, outputs, dirs


def reference_cases(ref, torch, model, kind, names, output, args, dirs):
    """PyTorch fp32 outputs of each case, inputs written to every directory; returns (cases, want)."""
    dev = gc.torch_device(args)
    rng = np.random.default_rng(ref.SEED + 7)
    cases, want = [], {}
    for b in args.batch:
        _, arrays = ref.make_inputs(kind, b, args.seq, rng)
        with torch.no_grad():
            y = model(*[torch.from_numpy(a).to(dev) for a in arrays]).float().cpu().numpy()
        case = f"b{b}_s{args.seq}"
        for d in dirs.values():
            entry = gc.write_case(d, case, names, arrays, [(output, y.shape)])
        cases.append(entry)
        want[case] = (b, y)
    return cases, want


def argmax_agreement(got, want):
    """Fraction of positions whose argmax over the last (hidden) axis agrees."""
    return float(np.mean(np.argmax(got, axis=-1) == np.argmax(want, axis=-1)))


def check_precision(args, name, precision, model_dir, cases, want, output):
    """One precision's cases through inferd against PyTorch fp32; returns its record."""
    # bfloat16 keeps 8 significant bits against FP16's 11: its bound is fp16's times 8.
    tol = args.tol if precision == "fp32" else args.tol_fp16 * (8 if precision == "bf16" else 1)
    gc.run_engine(args.build, model_dir, cases, args.device, f"{name}-{precision}")
    rows = []
    for c in cases:
        b, y = want[c["dir"]]
        got = gc.read_output(model_dir, c["dir"], output, y.shape)
        row = {"case": c["dir"], "batch": b, "seq": args.seq, "error": gc.rel_error(got, y),
               "scale": float(np.max(np.abs(y))), "agreement": argmax_agreement(got, y)}
        rows.append(row)
        print(f"{name} {precision} {row['case']}: max|inferd - torch| / max|torch| = {row['error']:.3g} "
              f"(scale {row['scale']:.3g}), argmax agreement {row['agreement']:.4f} "
              f"{'ok' if row['error'] <= tol else 'FAIL'}")
    worst = max(r["error"] for r in rows)
    return {"precision": precision, "tol": tol, "cases": rows, "worst_error": worst,
            "min_agreement": min(r["agreement"] for r in rows), "ok": worst <= tol}


def correctness(ref, torch, name, args, work, rec):
    """Export, reference and every precision's cases into rec; returns (kind, dirs)."""
    model, kind, names, outputs, dirs = export_dirs(ref, name, args, work)
    cases, want = reference_cases(ref, torch, model, kind, names, outputs[0], args, dirs)
    del model
    if gc.torch_device(args) == "cuda":
        torch.cuda.empty_cache()
    for p in args.precisions:
        rec["precisions"][p] = check_precision(args, name, p, dirs[p], cases, want, outputs[0])
    return kind, dirs


def time_peer(fn, *a):
    """Median of fn(*a)'s times in milliseconds, or (None, the error)."""
    try:
        return float(np.median(fn(*a))) * 1e3, None
    except Exception as e:  # a peer that cannot run is reported, not fatal
        return None, f"{type(e).__name__}: {e}"


def torch_peers(torch, peer, model, compiled, tensors, kind, args):
    """PyTorch eager, CUDA graph and compiled median ms for one batch; returns (times, errors)."""
    def eager(m=model):
        with torch.no_grad():
            m(*tensors)

    def timed(fn):
        return peer.time_cuda(torch, fn, args.runs, args.warmup)

    def graph_times():
        graphed = peer.graphable_hf(torch, model, tensors) if kind[0] == "hf" else model
        return timed(peer.cuda_graph(torch, graphed, tensors))
    res, errs = {}, {}
    res["torch_eager_ms"], errs["torch_eager"] = time_peer(timed, eager)
    res["torch_cudagraph_ms"], errs["torch_cudagraph"] = time_peer(graph_times)
    res["torch_compile_ms"], errs["torch_compile"] = None, None
    if compiled is not None:
        res["torch_compile_ms"], errs["torch_compile"] = time_peer(timed, lambda: eager(compiled))
    return res, {k: v for k, v in errs.items() if v is not None}


def compile_model(torch, model, args):
    """torch.compile(model) under --compile; returns (compiled or None, error text or None)."""
    if not args.compile:
        return None, None
    if not hasattr(torch, "compile"):
        return None, f"torch {torch.__version__} has no torch.compile"
    try:
        return torch.compile(model, dynamic=False), None
    except Exception as e:  # reported, not fatal
        return None, f"{type(e).__name__}: {e}"


def speed_row(ref, torch, peer, peers, kind, b, precision, model_dir, args):
    """One speed row: inferd engine vs the PyTorch peers (model, compiled or None) at batch b."""
    model, compiled = peers
    row = {"inferd_ms": None, "errors": {}}
    try:
        row["inferd_ms"] = gc.bench_engine(args.build, model_dir, args.device, b, args.engine_duration,
                                           args.engine_warmup)
    except RuntimeError as e:
        row["errors"]["inferd"] = str(e)
    _, arrays = ref.make_inputs(kind, b, args.seq, np.random.default_rng(ref.SEED))
    res, errs = torch_peers(torch, peer, model, compiled, peer.gpu_inputs(torch, arrays, precision), kind, args)
    row.update(res)
    row["errors"].update(errs)
    i = row["inferd_ms"]
    for k in ("eager", "graph", "compile"):
        t = row["torch_cudagraph_ms" if k == "graph" else f"torch_{k}_ms"]
        row[f"ratio_{k}"] = t / i if t and i else None
    return row


def speed_precision(ref, torch, peer, name, precision, model_dir, args):
    """Speed rows of one precision at each batch (model built and compiled once)."""
    model, kind, _ = ref.build(name, for_export=False)
    model = model.cuda().eval()
    model = model.half() if precision == "fp16" else model.to(torch.bfloat16) if precision == "bf16" else model
    compiled, compile_error = compile_model(torch, model, args)
    rows = []
    for b in args.batch:
        row = {"model": name, "precision": precision, "batch": b, "seq": args.seq, "device": args.device}
        row.update(speed_row(ref, torch, peer, (model, compiled), kind, b, precision, model_dir, args))
        if compile_error:
            row["errors"]["torch_compile"] = compile_error
        rows.append(row)
        print(speed_text(row), flush=True)
    del model, compiled
    torch.cuda.empty_cache()
    return rows


def fmt_ms(v):
    """A time in ms or a dash."""
    return f"{v:.3f} ms" if v is not None else "-"


def speed_text(row):
    """One speed row as text."""
    i = row.get("inferd_ms")
    parts = [f"inferd {fmt_ms(i)}"]
    for k, label in (("torch_eager", "torch eager"), ("torch_cudagraph", "torch+graph"),
                     ("torch_compile", "torch.compile")):
        t = row.get(k + "_ms")
        if t is not None:
            parts.append(f"{label} {fmt_ms(t)}" + (f" ({t / i:.2f}x)" if i else ""))
    text = f"{row['model']} {row['precision']} b{row['batch']} speed: " + ", ".join(parts)
    return text + (f"; errors: {row['errors']}" if row["errors"] else "")


def speed_part(ref, torch, peer, name, dirs, args):
    """Speed rows for every precision; cudnn.benchmark on for the peers (what a PyTorch user tuning does)."""
    torch.backends.cudnn.benchmark = True
    try:
        rows = []
        for p in args.precisions:
            rows += speed_precision(ref, torch, peer, name, p, dirs[p], args)
        return rows
    finally:
        torch.backends.cudnn.benchmark = False


def check_model(ref, torch, peer, name, args, work):
    """Every part for one model; returns its record (error set when a step could not run)."""
    rec = {"model": name, "seq": args.seq, "error": None, "precisions": {}, "speed": []}
    try:
        _, dirs = correctness(ref, torch, name, args, work, rec)
        if not args.no_speed:
            rec["speed"] = speed_part(ref, torch, peer, name, dirs, args)
    except Exception as e:  # reported, and the check fails
        rec["error"] = f"{type(e).__name__}: {e}"
    return rec


def summary_lines(rec, args):
    """The SUMMARY lines of one model's record, one per precision; returns (lines, failed)."""
    name, dev = rec["model"], args.device
    lines, failed = [], bool(rec["error"])
    if rec["error"]:
        lines.append(f"SUMMARY {name} on {dev}: FAIL: {rec['error']}")
    for p, r in rec["precisions"].items():
        speed = "; ".join(f"b{s['batch']}: " + speed_text(s).split(" speed: ", 1)[1]
                          for s in rec["speed"] if s["precision"] == p)
        lines.append(f"SUMMARY {name} {p} seq {args.seq} on {dev} vs PyTorch fp32 (TF32 off): worst error "
                     f"{r['worst_error']:.3g} of the output scale at batch {','.join(map(str, args.batch))} "
                     f"(tolerance {r['tol']:g}), argmax agreement >= {r['min_agreement']:.4f} "
                     f"{'PASS' if r['ok'] else 'FAIL'}" + (f"; speed {speed}" if speed else ""))
        failed |= not r["ok"]
    failed |= any(s["inferd_ms"] is None for s in rec["speed"])
    return lines, failed


def parse_args():
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gc.add_common_args(ap)
    ap.add_argument("--models", nargs="+", default=["bert", "distilbert"],
                    help="token models of tests/helpers/onnx_reference.py (default bert distilbert; "
                         "transformer for a CPU dry run)")
    ap.add_argument("--precisions", default="fp32,fp16", help="inferd precisions, comma-separated: fp32, fp16, bf16 "
                    "(default fp32,fp16; bf16's error bound is --tol-fp16 times 8)")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8, 64], help="batch sizes (default 1 8 64)")
    ap.add_argument("--seq", type=int, default=128, help="sequence length (default 128)")
    ap.add_argument("--tol", type=float, default=1e-4, help="fp32 error bound (default 1e-4)")
    ap.add_argument("--tol-fp16", type=float, default=2e-2, help="fp16 error bound (default 2e-2)")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed part (always skipped on the CPU)")
    ap.add_argument("--runs", type=int, default=30, help="timed PyTorch runs per point (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed PyTorch runs first (default 5)")
    ap.add_argument("--engine-duration", type=float, default=1.5, help="inferd-bench-engine seconds (default 1.5)")
    ap.add_argument("--engine-warmup", type=float, default=0.5, help="inferd-bench-engine warm-up s (default 0.5)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile(model) (slow to compile)")
    ap.add_argument("--json", default=None, help="write every figure here")
    args = ap.parse_args()
    args.precisions = [p for p in args.precisions.split(",") if p]
    if not args.precisions or any(p not in ("fp32", "fp16", "bf16") for p in args.precisions):
        ap.error("--precisions takes fp32, fp16 and/or bf16")
    args.precisions = list(dict.fromkeys(args.precisions))
    if any(b < 1 for b in args.batch) or args.seq < 1 or args.runs < 1 or args.warmup < 0:
        ap.error("--batch, --seq and --runs must be >= 1, --warmup >= 0")
    if args.engine_duration <= 0 or args.engine_warmup < 0:
        ap.error("--engine-duration must be > 0, --engine-warmup >= 0")
    return ap, args



def versions(torch, args):
    """What the run was made with, for the JSON file."""
    try:
        import transformers
        tf = transformers.__version__
    except ImportError:
        tf = None
    return gc.versions(torch, args, transformers=tf)


def setup(ap, args):
    """Modules, device and models checked; returns (torch, ref, peer) or exits."""
    (torch,) = gc.need_modules("torch")
    gc.need_modules("onnx")
    if any(m in ("bert", "distilbert") for m in args.models):
        gc.need_modules("transformers")
    if gc.torch_device(args) == "cuda" and not torch.cuda.is_available():
        print("SKIP: torch.cuda is not available (the reference runs on the GPU)", file=sys.stderr)
        sys.exit(gc.EXIT_SKIP)
    if gc.torch_device(args) == "cpu":
        args.no_speed = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = gc.load_module("onnx_reference", "tests/helpers/onnx_reference.py")
    peer = gc.load_module("onnx_peer", "client/bench/onnx_peer.py")
    for name in args.models:
        if name not in ref.SPECS or not ref.has_seq(ref.SPECS[name][1]):
            ap.error(f"--models: {name} is not a token model of onnx_reference.py")
    return torch, ref, peer


def main():
    """Check every model, print its SUMMARY lines, write the JSON; the exit status."""
    ap, args = parse_args()
    torch, ref, peer = setup(ap, args)
    doc = {"tool": "gpu_check_encoders", "device": args.device, "argv": sys.argv[1:],
           "versions": versions(torch, args), "models": []}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="gpu_check_encoders.") as tmp:
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
    print(f"gpu_check_encoders: {'PASS' if failed == 0 else 'FAIL'} ({failed} of {len(args.models)} models failed)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
