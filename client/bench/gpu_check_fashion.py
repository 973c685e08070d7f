#!/usr/bin/env python3
"""gpu_check_fashion.py: the Fashion CNN (conf/models/fashion-cnn) at fp16 against fp32 on inferd's CUDA backend.

    gpu_check_fashion.py [--build _g] [--device cuda:0] [--batch 100] [--max-drop 0.5]
                         [--min-agree 0.99] [--workdir DIR]

The shipped model.onnx is served twice, with model.json {"platform": "onnx",
"max_batch_size": --batch, "precision": "fp32"} and the same at "fp16", and
both run the Fashion-MNIST test set (t10k-images/labels-idx*-ubyte.gz from
$INFERD_FASHION_DIR, else Debian's dataset-fashion-mnist in
/usr/share/datasets/fashion-mnist, the files tests/unit/test_fashion reads;
pixels / 255, NCHW) through inferd's engine (onnx_engine_run --dump).  Pass:
fp16's accuracy within --max-drop points of fp32's.  The repository ships no
copy of the test set; without it the check falls back to 10,000 random images
(uniform [0, 1)) and requires the two precisions' predictions to agree on at
least --min-agree of them, saying so.  Either way it reports the largest
logit difference between the precisions relative to the fp32 logits' scale.
Exit 0 pass, 1 fail, 77 when numpy is missing.
"""

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_common as gc  # noqa: E402

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def load_idx(path, magic):
    """An IDX file (gzip) as a uint8 array: images [n, 28, 28] (magic 2051) or labels [n] (2049)."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    head = np.frombuffer(data[:4], dtype=">u4")[0]
    if head != magic:
        raise ValueError(f"{path}: magic {head}, expected {magic}")
    if magic == 2051:
        n, rows, cols = (int(v) for v in np.frombuffer(data[4:16], dtype=">u4"))
        return np.frombuffer(data[16:16 + n * rows * cols], dtype=np.uint8).reshape(n, rows, cols)
    n = int(np.frombuffer(data[4:8], dtype=">u4")[0])
    return np.frombuffer(data[8:8 + n], dtype=np.uint8)


def test_set():
    """(images float [n,1,28,28], labels) of the test set, or (random images, None) and why."""
    d = os.environ.get("INFERD_FASHION_DIR") or DEFAULT_DIR
    try:
        x = load_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz"), 2051)
        y = load_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz"), 2049)
        if len(x) != len(y) or x.shape[1:] != (28, 28):
            raise ValueError("images and labels do not match")
        return (x.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28), y, None
    except (OSError, ValueError) as e:
        rng = np.random.default_rng(2026)
        return rng.random((10000, 1, 28, 28), dtype=np.float32), None, f"no Fashion-MNIST test set ({e})"


def run_precision(args, work, precision, x):
    """Logits of every image through inferd at one precision."""
    model_dir = os.path.join(work, f"fashion-cnn-{precision}")
    os.makedirs(model_dir, exist_ok=True)
    shutil.copy(os.path.join(gc.REPO_ROOT, "conf", "models", "fashion-cnn", "model.onnx"),
                os.path.join(model_dir, "model.onnx"))
    with open(os.path.join(model_dir, "model.json"), "w") as f:
        json.dump({"platform": "onnx", "max_batch_size": args.batch, "precision": precision}, f)
    cases = []
    for k in range(0, len(x), args.batch):
        part = x[k:k + args.batch]
        cases.append(gc.write_case(model_dir, f"c{k // args.batch:04d}", ["input"], [part],
                                   [("logits", (len(part), 10))]))
    gc.run_engine(args.build, model_dir, cases, args.device, f"fashion-cnn-{precision}")
    return np.concatenate([gc.read_output(model_dir, c["dir"], "logits", tuple(c["outputs"][0]["shape"]))
                           for c in cases])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    gc.add_common_args(ap)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--max-drop", type=float, default=0.5, help="accuracy points fp16 may lose")
    ap.add_argument("--min-agree", type=float, default=0.99, help="without the test set: prediction agreement")
    args = ap.parse_args()
    if args.batch < 1:
        ap.error("--batch must be >= 1")
    x, labels, why = test_set()
    with tempfile.TemporaryDirectory(prefix="gpu_check_fashion.") as tmp:
        work = args.workdir or tmp
        y32 = run_precision(args, work, "fp32", x)
        y16 = run_precision(args, work, "fp16", x)
    err = gc.rel_error(y16, y32)
    agree = float((y16.argmax(1) == y32.argmax(1)).mean())
    if labels is None:
        ok = agree >= args.min_agree
        print(f"SUMMARY fashion-cnn fp16 vs fp32 on {args.device}: {why}: on {len(x)} random images the "
              f"predictions agree on {agree:.4f} (minimum {args.min_agree:g}); max logit difference "
              f"{err:.3g} of the fp32 scale {'PASS' if ok else 'FAIL'} (accuracy not measured)")
        return 0 if ok else 1
    a32 = float((y32.argmax(1) == labels).mean())
    a16 = float((y16.argmax(1) == labels).mean())
    drop = (a32 - a16) * 100.0
    ok = drop <= args.max_drop
    print(f"SUMMARY fashion-cnn on {args.device}, {len(x)} test images: accuracy fp32 {a32:.4f}, fp16 {a16:.4f} "
          f"(drop {drop:.2f} points, maximum {args.max_drop:g}); predictions agree on {agree:.4f}; max logit "
          f"difference {err:.3g} of the fp32 scale {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
