#!/usr/bin/env python3
"""Train the `fashion-mlp` example model for inferd and export its artefacts.

The model is a 784 -> 256 -> 128 -> 10 MLP with ReLU activations, trained on
Fashion-MNIST.  Input preprocessing is only `pixel / 255.0` (float32,
row-major 28x28 flattened to 784); the output is raw logits (no softmax).

Outputs:
  <out>/model.safetensors        weights, serialised by hand (no safetensors pkg)
  <out>/model.json               inferd model config (platform inferd_mlp)
  <ref>                          first 32 t10k images with PyTorch float32 logits
  <sample>                       KServe v2 request body for t10k image 0
  <sample minus .json>.expected  "<pred> <name> (label <label>)" for that image

Reads the gzipped IDX files and writes the reference files through
fashion_data.py beside it (gzip + numpy); needs no network and no torchvision.
"""

import argparse
import json
import os
import struct
import time

import numpy as np
import torch
from torch import nn

from fashion_data import LABELS, load_split, write_expected, write_reference, write_request

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(SCRIPT_DIR))

MODEL_NAME = "fashion-mlp"
NUM_REF = 32
SEED = 0

# The config is kept as literal text so the file layout is stable for the C
# loader and for reviewers; json.loads() below checks it is valid JSON.
MODEL_JSON = """{
  "name": "fashion-mlp",
  "platform": "inferd_mlp",
  "max_batch_size": 256,
  "inputs":  [ { "name": "input",  "datatype": "FP32", "dims": [784] } ],
  "outputs": [ { "name": "logits", "datatype": "FP32", "dims": [10] } ],
  "dynamic_batching": { "max_queue_delay_us": 200, "preferred_batch_sizes": [64, 256], "max_queue_size": 4096, "default_timeout_us": 10000000 },
  "weights": "model.safetensors",
  "labels": ["T-shirt/top","Trouser","Pullover","Dress","Coat","Sandal","Shirt","Sneaker","Bag","Ankle boot"],
  "layers": [
    { "name": "fc1", "op": "linear", "weight": "fc1.weight", "bias": "fc1.bias" },
    { "name": "relu1", "op": "relu" },
    { "name": "fc2", "op": "linear", "weight": "fc2.weight", "bias": "fc2.bias" },
    { "name": "relu2", "op": "relu" },
    { "name": "fc3", "op": "linear", "weight": "fc3.weight", "bias": "fc3.bias" }
  ]
}
"""


class FashionMLP(nn.Module):
    """784 -> 256 -> 128 -> 10 MLP; returns raw logits."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def train(model, x_train, y_train, epochs, batch_size, lr):
    """Train with Adam + cross-entropy, shuffling each epoch from a fixed seed."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.from_numpy(x_train)
    y = torch.from_numpy(y_train)
    gen = torch.Generator().manual_seed(SEED)
    n = x.shape[0]
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
            total += loss.item() * idx.shape[0]
        print(f"epoch {epoch:2d}  loss {total / n:.4f}  ({time.time() - t0:.1f}s)",
              flush=True)


@torch.no_grad()
def predict_logits(model, x):
    """Float32 logits for a numpy [N,784] batch."""
    model.eval()
    return model(torch.from_numpy(x)).numpy().astype(np.float32)


def write_safetensors(path, tensors, metadata):
    """Serialise float32 tensors in the safetensors format.

    Layout: u64 little-endian header length, JSON header padded with spaces to
    a multiple of 8 bytes, then the raw little-endian data of each tensor,
    contiguous and in header order.
    """
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name, t in tensors:
        arr = np.ascontiguousarray(t.detach().cpu().numpy(), dtype="<f4")
        blob = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    hdr = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hdr += b" " * (-len(hdr) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for blob in blobs:
            f.write(blob)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                    help="directory holding the gzipped IDX files")
    ap.add_argument("--out", default=os.path.join(SCRIPT_DIR, MODEL_NAME),
                    help="model directory to write")
    ap.add_argument("--ref",
                    default=os.path.join(REPO_ROOT, "tests/data/fashion_ref.json"),
                    help="reference logits JSON to write")
    ap.add_argument("--sample",
                    default=os.path.join(REPO_ROOT,
                                         "docs/examples/fashion-request.json"),
                    help="example KServe v2 request to write")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(2)

    x_train, y_train = load_split(args.data, "train")
    x_test, y_test = load_split(args.data, "t10k")
    x_train = x_train.reshape(x_train.shape[0], 784)
    x_test = x_test.reshape(x_test.shape[0], 784)
    print(f"train {x_train.shape}  test {x_test.shape}")

    model = FashionMLP()
    train(model, x_train, y_train, args.epochs, args.batch_size, args.lr)

    test_logits = predict_logits(model, x_test)
    accuracy = float((test_logits.argmax(axis=1) == y_test).mean())
    print(f"test accuracy {accuracy:.4f}")
    if accuracy < 0.87:
        raise SystemExit(f"test accuracy {accuracy:.4f} below 0.87; not exporting")

    for d in (args.out, os.path.dirname(args.ref), os.path.dirname(args.sample)):
        os.makedirs(d, exist_ok=True)

    weights_path = os.path.join(args.out, "model.safetensors")
    write_safetensors(
        weights_path,
        [(f"{layer}.{kind}", getattr(getattr(model, layer), kind))
         for layer in ("fc1", "fc2", "fc3") for kind in ("weight", "bias")],
        {"format": "pt", "model": MODEL_NAME,
         "test_accuracy": f"{accuracy:.4f}",
         "preprocessing": "pixel/255.0 float32, row-major 28x28"})

    config = json.loads(MODEL_JSON)
    if config["labels"] != LABELS:
        raise SystemExit("MODEL_JSON labels disagree with LABELS")
    with open(os.path.join(args.out, "model.json"), "w") as f:
        f.write(MODEL_JSON)

    ref_idx = np.arange(NUM_REF)
    write_reference(args.ref, MODEL_NAME, ref_idx, y_test[ref_idx], x_test[ref_idx],
                    predict_logits(model, x_test[ref_idx]))

    write_request(args.sample, "fashion-0", [1, 784], x_test[0])
    write_expected(args.sample, test_logits[0], y_test[0])

    for p in (weights_path, os.path.join(args.out, "model.json"), args.ref,
              args.sample):
        print(f"wrote {p} ({os.path.getsize(p)} bytes)")


if __name__ == "__main__":
    main()
