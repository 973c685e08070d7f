#!/usr/bin/env python3
"""Train the `fashion-cnn` example model for inferd and export it to ONNX.

The model is a small convolutional net trained on Fashion-MNIST:

    Conv 1->32 3x3 pad 1, BatchNorm, ReLU, MaxPool 2      [N,32,14,14]
    Conv 32->64 3x3 pad 1, BatchNorm, ReLU, MaxPool 2     [N,64,7,7]
    Flatten, Linear 3136->128, ReLU, Dropout 0.3, Linear 128->10

Input preprocessing is only `pixel / 255.0` (float32, NCHW [N,1,28,28]); the
output is raw logits (no softmax).  The ONNX graph (opset 17) has the input
"input" [N,1,28,28] FP32 and the output "logits" [N,10], N dynamic.

Outputs:
  <out>/model.onnx               the exported graph with its weights
  <out>/model.json               inferd model config (platform onnx)
  <ref>                          first 32 t10k images with PyTorch float32 logits
                                 (the fashion_ref.json layout: "inputs" rows are
                                 the 784 pixels of one [1,28,28] image, row-major)
  <sample>                       KServe v2 request body for t10k image 0
  <sample minus .json>.expected  "<pred> <name> (label <label>)" for that image

The export is checked against PyTorch with onnxruntime at batch 1, 7 and 64
(max |diff| printed; the script fails above 1e-4 relative to the logits' scale).
Reads the gzipped IDX files and writes the reference files through
fashion_data.py beside it (gzip + numpy); needs no network and no torchvision.
"""

import argparse
import json
import os
import time

import numpy as np
import torch
from torch import nn

from fashion_data import LABELS, load_split, write_expected, write_reference, write_request

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(SCRIPT_DIR))

MODEL_NAME = "fashion-cnn"
NUM_REF = 32
SEED = 0
OPSET = 17
MIN_ACCURACY = 0.91
MAX_ONNX_BYTES = 2 * 1024 * 1024
CHECK_BATCHES = (1, 7, 64)

# The config is kept as literal text so the file layout is stable for the C
# loader and for reviewers; "description" gets the measured accuracy.
MODEL_JSON = """{
  "name": "fashion-cnn",
  "platform": "onnx",
  "description": "%s",
  "max_batch_size": 256,
  "inputs":  [ { "name": "input",  "datatype": "FP32", "dims": [1, 28, 28] } ],
  "outputs": [ { "name": "logits", "datatype": "FP32", "dims": [10] } ],
  "dynamic_batching": { "max_queue_delay_us": 200, "preferred_batch_sizes": [64, 256], "max_queue_size": 4096, "default_timeout_us": 10000000 },
  "labels": ["T-shirt/top","Trouser","Pullover","Dress","Coat","Sandal","Shirt","Sneaker","Bag","Ankle boot"]
}
"""


class FashionCNN(nn.Module):
    """Two conv blocks and two linear layers; returns raw logits."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
            nn.Dropout(0.3), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def train(model, x_train, y_train, epochs, batch_size, lr):
    """Adam + cross-entropy with a one-cycle schedule, fixed-seed shuffling."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    n = x_train.shape[0]
    steps = epochs * ((n + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.from_numpy(x_train)
    y = torch.from_numpy(y_train)
    gen = torch.Generator().manual_seed(SEED)
    for epoch in range(1, epochs + 1):
        model.train()
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        t0 = time.time()
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * idx.shape[0]
        print(f"epoch {epoch:2d}  loss {total / n:.4f}  ({time.time() - t0:.1f}s)",
              flush=True)


@torch.no_grad()
def predict_logits(model, x, chunk=1000):
    """Float32 logits for a numpy [N,1,28,28] batch, in eval mode."""
    model.eval()
    outs = [model(torch.from_numpy(x[i:i + chunk])).numpy()
            for i in range(0, x.shape[0], chunk)]
    return np.concatenate(outs).astype(np.float32)


def export_onnx(model, path):
    """Export the eval-mode model at opset 17 with a dynamic batch axis."""
    model.eval()
    dummy = torch.zeros(2, 1, 28, 28)
    torch.onnx.export(model, dummy, path, opset_version=OPSET,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                      do_constant_folding=True)


def check_onnx(path, model, x_test):
    """Compare onnxruntime with PyTorch at several batch sizes; returns max diffs."""
    import onnx
    import onnxruntime as ort
    onnx.checker.check_model(onnx.load(path))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    diffs = {}
    for b in CHECK_BATCHES:
        x = x_test[100:100 + b]
        want = predict_logits(model, x)
        got = sess.run(["logits"], {"input": x})[0]
        if got.shape != (b, 10):
            raise SystemExit(f"onnxruntime batch {b}: output shape {got.shape}")
        diff = float(np.abs(got - want).max())
        scale = float(np.abs(want).max())
        print(f"onnxruntime vs PyTorch batch {b:2d}: max |diff| {diff:.3g} "
              f"(max |logit| {scale:.3g})")
        if diff > 1e-4 * max(scale, 1.0):
            raise SystemExit(f"batch {b}: export disagrees with PyTorch")
        diffs[b] = diff
    return diffs


def write_model_json(path, accuracy, epochs):
    """Write model.json with the measured accuracy in its description."""
    desc = (f"Fashion-MNIST CNN (2 conv + 2 linear), {epochs} epochs, "
            f"t10k accuracy {accuracy:.4f}; input pixel/255 NCHW, output logits")
    text = MODEL_JSON % desc
    config = json.loads(text)
    if config["labels"] != LABELS:
        raise SystemExit("MODEL_JSON labels disagree with LABELS")
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                    help="directory holding the gzipped IDX files")
    ap.add_argument("--out", default=os.path.join(SCRIPT_DIR, MODEL_NAME),
                    help="model directory to write")
    ap.add_argument("--ref",
                    default=os.path.join(REPO_ROOT, "tests/data/fashion-cnn-ref.json"),
                    help="reference logits JSON to write")
    ap.add_argument("--sample",
                    default=os.path.join(REPO_ROOT,
                                         "docs/examples/fashion-cnn-request.json"),
                    help="example KServe v2 request to write")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(args.threads)

    x_train, y_train = load_split(args.data, "train")
    x_test, y_test = load_split(args.data, "t10k")
    x_train = x_train.reshape(-1, 1, 28, 28)
    x_test = x_test.reshape(-1, 1, 28, 28)
    print(f"train {x_train.shape}  test {x_test.shape}")

    model = FashionCNN()
    t0 = time.time()
    train(model, x_train, y_train, args.epochs, args.batch_size, args.lr)
    print(f"training took {time.time() - t0:.0f}s")

    test_logits = predict_logits(model, x_test)
    accuracy = float((test_logits.argmax(axis=1) == y_test).mean())
    print(f"test accuracy {accuracy:.4f}")
    if accuracy < MIN_ACCURACY:
        raise SystemExit(f"test accuracy {accuracy:.4f} below {MIN_ACCURACY}; "
                         "not exporting")

    for d in (args.out, os.path.dirname(args.ref), os.path.dirname(args.sample)):
        os.makedirs(d, exist_ok=True)

    onnx_path = os.path.join(args.out, "model.onnx")
    export_onnx(model, onnx_path)
    if os.path.getsize(onnx_path) >= MAX_ONNX_BYTES:
        raise SystemExit(f"{onnx_path}: {os.path.getsize(onnx_path)} bytes, "
                         f"over {MAX_ONNX_BYTES}")
    check_onnx(onnx_path, model, x_test)
    write_model_json(os.path.join(args.out, "model.json"), accuracy, args.epochs)

    ref_idx = np.arange(NUM_REF)
    write_reference(args.ref, MODEL_NAME, ref_idx, y_test[ref_idx], x_test[ref_idx],
                    predict_logits(model, x_test[ref_idx]), input_shape=[1, 28, 28])

    write_request(args.sample, "fashion-cnn-0", [1, 1, 28, 28], x_test[0])
    write_expected(args.sample, test_logits[0], y_test[0])

    for p in (onnx_path, os.path.join(args.out, "model.json"), args.ref,
              args.sample):
        print(f"wrote {p} ({os.path.getsize(p)} bytes)")


if __name__ == "__main__":
    main()
