#!/usr/bin/env python3
"""gpu_check_resnet_fp16.py: ResNet-50 at precision fp16 (or bf16) in inferd against PyTorch fp32, top-1 agreement on random inputs.

    gpu_check_resnet_fp16.py [--build _g] [--device cuda:0] [--images 1000] [--batch 50]
                             [--precision fp16] [--min-agree 0.99] [--workdir DIR]

torchvision's ResNet-50 with random weights (tests/helpers/onnx_reference.py's
constructor and seed, BatchNorm statistics randomised, exported at opset 17
with BatchNorm folded by the exporter) is served with model.json
{"platform": "onnx", "max_batch_size": --batch, "precision": --precision}.
--images random N(0, 1) images run through inferd's engine (onnx_engine_run
--dump, --batch images a case); the reference is the same model in PyTorch on
the GPU in fp32 with TF32 off.  Reported: top-1 agreement, the disagreements
that are near-ties (PyTorch's top-2 margin below inferd's largest logit error),
and max|inferd - torch| / max|torch|.  Exit 0 when the agreement is at least
--min-agree, 1 otherwise, 77 without torch/torchvision or a GPU.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_common as gc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gc.add_common_args(ap)
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=50, help="images per case (the model's max_batch_size)")
    ap.add_argument("--precision", default="fp16", choices=["fp32", "tf32", "fp16", "bf16"])
    ap.add_argument("--min-agree", type=float, default=0.99)
    args = ap.parse_args()
    if args.images < 1 or args.batch < 1:
        ap.error("--images and --batch must be >= 1")
    (torch,) = gc.need_modules("torch")
    gc.need_modules("torchvision", "onnx")
    if not torch.cuda.is_available():
        print("SKIP: torch.cuda is not available (the reference runs on the GPU)", file=sys.stderr)
        return gc.EXIT_SKIP
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = gc.load_module("onnx_reference", "tests/helpers/onnx_reference.py")
    with tempfile.TemporaryDirectory(prefix="gpu_check_resnet.") as tmp:
        model_dir = os.path.join(args.workdir or tmp, "resnet50")
        os.makedirs(model_dir, exist_ok=True)
        model, kind, outputs = ref.build("resnet50")
        names, example = ref.make_inputs(kind, 2, None, np.random.default_rng(ref.SEED))
        path = os.path.join(model_dir, "model.onnx")
        ref.export(model, kind, names, outputs, example, path, 17, False)
        gc.write_model_dir(model_dir, path, {"platform": "onnx", "max_batch_size": args.batch,
                                             "precision": args.precision})
        model = model.cuda().eval()
        rng = np.random.default_rng(ref.SEED + 11)
        cases, want = [], []
        for k in range(0, args.images, args.batch):
            n = min(args.batch, args.images - k)
            x = rng.standard_normal((n, 3, 224, 224)).astype(np.float32)
            with torch.no_grad():
                y = model(torch.from_numpy(x).cuda()).float().cpu().numpy()
            case = f"c{k // args.batch:04d}"
            cases.append(gc.write_case(model_dir, case, names, [x], [(outputs[0], y.shape)]))
            want.append(y)
        del model
        torch.cuda.empty_cache()
        gc.run_engine(args.build, model_dir, cases, args.device, "resnet50")
        got = np.concatenate([gc.read_output(model_dir, c["dir"], outputs[0], w.shape) for c, w in zip(cases, want)])
    want = np.concatenate(want)
    err = gc.rel_error(got, want)
    max_abs = float(np.max(np.abs(got.astype(np.float64) - want)))
    agree = got.argmax(1) == want.argmax(1)
    top2 = np.sort(want, axis=1)[:, -2:]
    near_tie = (top2[:, 1] - top2[:, 0]) <= max_abs
    rate = float(agree.mean())
    ok = rate >= args.min_agree
    print(f"SUMMARY resnet50 {args.precision} on {args.device} vs PyTorch fp32: top-1 agreement "
          f"{int(agree.sum())}/{len(agree)} = {rate:.4f} (minimum {args.min_agree:g}; "
          f"{int((~agree & near_tie).sum())} of the {int((~agree).sum())} disagreements are near-ties, "
          f"top-2 margin <= the max error); max error {err:.3g} of the output scale "
          f"(max|torch| {np.max(np.abs(want)):.3g}) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
