#!/usr/bin/env python3
"""gpu_check_encoders.py: BERT-base and DistilBERT encoders through inferd on the GPU at fp32, against PyTorch.

    gpu_check_encoders.py [--build _g] [--device cuda:0] [--models bert distilbert]
                          [--batch 1 8] [--seq 128] [--tol 1e-4] [--no-speed] [--workdir DIR]

Each encoder comes from its transformers config with random weights
(tests/helpers/onnx_reference.py's constructors, seed and export: INT64
input_ids and attention_mask, dynamic batch and sequence axes, eager
attention, opset 17), served with model.json {"platform": "onnx",
"max_batch_size": max(--batch), "max_dims": {input: [--seq]}}: a model with
variable dims, compiled per exact shape on first use.  The cases (each --batch
at --seq; every row but the first padded after a random length) run through
inferd's engine (onnx_engine_run --dump on --device); the reference is the
same PyTorch model on the GPU in fp32 with TF32 off.  Error per case:
max|inferd - torch| / max|torch|, which must be <= --tol.

Speed (unless --no-speed): inferd-bench-engine (the backend alone, a CUDA graph
per shape) against PyTorch eager and PyTorch replaying a captured CUDA graph
(SDPA attention, as client/bench/onnx_peer.py times them), median ms per batch.

Prints a line per case, a SUMMARY line per model and a final verdict; exit 0
when every case is within --tol, 1 otherwise, 77 without torch/transformers or a GPU.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_common as gc  # noqa: E402


def torch_device(args):
    """Where the PyTorch reference runs: the GPU when inferd runs on one (a CPU dry run: the CPU)."""
    return "cuda" if args.device.startswith("cuda") else "cpu"


def export_model(ref, torch, name, seq, max_batch, model_dir, dev):
    """Export the encoder and write its model directory; returns the fp32 model on dev."""
    model, kind, outputs = ref.build(name)
    names, example = ref.make_inputs(kind, 2, 16, np.random.default_rng(ref.SEED))
    path = os.path.join(model_dir, "model.onnx")
    os.makedirs(model_dir, exist_ok=True)
    ref.export(model, kind, names, outputs, example, path, 17, True)
    gc.write_model_dir(model_dir, path, {"platform": "onnx", "max_batch_size": max_batch,
                                         "max_dims": {n: [seq] for n in names}})
    return model.to(dev).eval(), kind, names, outputs


def check_model(ref, torch, name, args, work):
    """Correctness cases of one encoder; returns (worst error, rows for the summary)."""
    model_dir = os.path.join(work, name)
    dev = torch_device(args)
    model, kind, names, outputs = export_model(ref, torch, name, args.seq, max(args.batch), model_dir, dev)
    rng = np.random.default_rng(ref.SEED + 7)
    cases, want = [], {}
    for b in args.batch:
        _, arrays = ref.make_inputs(kind, b, args.seq, rng)
        with torch.no_grad():
            y = model(*[torch.from_numpy(a).to(dev) for a in arrays]).float().cpu().numpy()
        case = f"b{b}_s{args.seq}"
        cases.append(gc.write_case(model_dir, case, names, arrays, [(outputs[0], y.shape)]))
        want[case] = y
    del model
    if dev == "cuda":
        torch.cuda.empty_cache()
    gc.run_engine(args.build, model_dir, cases, args.device, name)
    worst = 0.0
    for c in cases:
        y = want[c["dir"]]
        err = gc.rel_error(gc.read_output(model_dir, c["dir"], outputs[0], y.shape), y)
        worst = max(worst, err)
        print(f"{name} {c['dir']}: max|inferd - torch| / max|torch| = {err:.3g} "
              f"(scale {np.max(np.abs(y)):.3g}) {'ok' if err <= args.tol else 'FAIL'}")
    return worst, model_dir


def speed(ref, torch, peer, name, model_dir, args):
    """inferd-bench-engine against PyTorch eager and CUDA graph, per batch; returns text."""
    model, kind, _ = ref.build(name, for_export=False)
    model = model.cuda().eval()
    parts = []
    for b in args.batch:
        inferd = gc.bench_engine(args.build, model_dir, args.device, b)
        _, arrays = ref.make_inputs(kind, b, args.seq, np.random.default_rng(ref.SEED))
        tensors = peer.gpu_inputs(torch, arrays, "fp32")

        def eager():
            with torch.no_grad():
                model(*tensors)
        t_eager = float(np.median(peer.time_cuda(torch, eager, args.runs, 5)))
        graphed = peer.graphable_hf(torch, model, tensors) if kind[0] == "hf" else model
        replay = peer.cuda_graph(torch, graphed, tensors)
        t_graph = float(np.median(peer.time_cuda(torch, replay, args.runs, 5)))
        parts.append(f"b{b}: inferd {inferd:.3f} ms, torch eager {t_eager * 1e3:.3f} ms, "
                     f"torch+graph {t_graph * 1e3:.3f} ms ({t_graph * 1e3 / inferd:.2f}x)")
    del model
    torch.cuda.empty_cache()
    return "; ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gc.add_common_args(ap)
    ap.add_argument("--models", nargs="+", default=["bert", "distilbert"],
                    help="token models of tests/helpers/onnx_reference.py (bert, distilbert; transformer for a CPU dry run)")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--runs", type=int, default=30, help="timed PyTorch runs per point")
    ap.add_argument("--no-speed", action="store_true")
    args = ap.parse_args()
    if any(b < 1 for b in args.batch) or args.seq < 1:
        ap.error("--batch and --seq must be >= 1")
    (torch,) = gc.need_modules("torch")
    gc.need_modules("onnx")
    if any(m in ("bert", "distilbert") for m in args.models):
        gc.need_modules("transformers")
    if torch_device(args) == "cuda" and not torch.cuda.is_available():
        print("SKIP: torch.cuda is not available (the reference runs on the GPU)", file=sys.stderr)
        return gc.EXIT_SKIP
    if torch_device(args) == "cpu":
        args.no_speed = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = gc.load_module("onnx_reference", "tests/helpers/onnx_reference.py")
    peer = gc.load_module("onnx_peer", "client/bench/onnx_peer.py")
    for name in args.models:
        if name not in ref.SPECS or not ref.has_seq(ref.SPECS[name][1]):
            ap.error(f"--models: {name} is not a token model of onnx_reference.py")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="gpu_check_encoders.") as tmp:
        work = args.workdir or tmp
        for name in args.models:
            try:
                worst, model_dir = check_model(ref, torch, name, args, work)
            except Exception as e:  # reported, and the check fails
                print(f"SUMMARY {name} fp32 on {args.device}: FAIL: {type(e).__name__}: {e}")
                failed += 1
                continue
            ok = worst <= args.tol
            failed += not ok
            text = "" if args.no_speed else speed(ref, torch, peer, name, model_dir, args)
            print(f"SUMMARY {name} fp32 seq {args.seq} on {args.device}: worst error {worst:.3g} of the output "
                  f"scale (tolerance {args.tol:g}) {'PASS' if ok else 'FAIL'}" + (f"; speed {text}" if text else ""))
    print(f"gpu_check_encoders: {'PASS' if failed == 0 else 'FAIL'} ({failed} of {len(args.models)} models failed)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
