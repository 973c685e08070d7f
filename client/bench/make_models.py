#!/usr/bin/env python3
"""make_models.py: the model repository the benchmark sweeps serve (Python standard library only).

    make_models.py OUTDIR [--source conf/models/fashion-mlp] [--ingest]

OUTDIR/fashion-mlp          the demo model as shipped (a symbolic link): its own batching
                            settings, max_queue_delay_us included
OUTDIR/fashion-mlp-nodelay  the same weights with max_queue_delay_us = 0, so a lone request
                            runs at once: latency without the batching window, and batches
                            exactly as large as the request (the "same batch" comparisons)
OUTDIR/ingest (--ingest)    the large-tensor model: rows of 65536 floats (256 KiB),
                            max_batch_size 256, so one request of 256 rows carries 64 MiB in;
                            one linear layer to a single float, so almost nothing comes back
                            and the device does almost nothing: the copy in is what is timed
"""

import argparse
import array
import json
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCE = os.path.join(HERE, "..", "..", "conf", "models", "fashion-mlp")
INGEST_WIDTH = 65536
WIDE_OUT = 1024
INGEST_MAX_BATCH = 256


def write_safetensors(path, tensors):
    """Write {name: (shape, array('f'))} as a safetensors file."""
    header, offset, blobs = {}, 0, []
    for name, (shape, values) in tensors.items():
        raw = values.tobytes() if sys.byteorder == "little" else _swapped(values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for raw in blobs:
            f.write(raw)


def _swapped(values):
    copy = array.array("f", values)
    copy.byteswap()
    return copy.tobytes()


def link(src, dst):
    """A symbolic link dst -> src (absolute), replacing an old one."""
    if os.path.lexists(dst):
        os.remove(dst)
    os.symlink(os.path.abspath(src), dst)


def make_nodelay(source, out):
    """A copy of the demo model's description with no batching window; weights linked."""
    with open(os.path.join(source, "model.json")) as f:
        desc = json.load(f)
    desc["name"] = "fashion-mlp-nodelay"
    desc.setdefault("dynamic_batching", {})["max_queue_delay_us"] = 0
    d = os.path.join(out, desc["name"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump(desc, f, indent=2)
    weights = desc.get("weights", "model.safetensors")
    link(os.path.join(source, weights), os.path.join(d, weights))


def make_ingest(out):
    """The large-tensor model: 65536 floats in, their scaled sum out."""
    d = os.path.join(out, "ingest")
    os.makedirs(d, exist_ok=True)
    desc = {
        "name": "ingest",
        "platform": "inferd_mlp",
        "max_batch_size": INGEST_MAX_BATCH,
        "inputs": [{"name": "input", "datatype": "FP32", "dims": [INGEST_WIDTH]}],
        "outputs": [{"name": "sum", "datatype": "FP32", "dims": [1]}],
        "dynamic_batching": {"max_queue_delay_us": 0, "max_queue_size": 64,
                             "default_timeout_us": 10000000},
        "weights": "model.safetensors",
        "layers": [{"name": "fc", "op": "linear", "weight": "fc.weight", "bias": "fc.bias"}],
    }
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump(desc, f, indent=2)
    write_safetensors(os.path.join(d, "model.safetensors"), {
        "fc.weight": ([1, INGEST_WIDTH], array.array("f", [1.0 / INGEST_WIDTH]) * INGEST_WIDTH),
        "fc.bias": ([1], array.array("f", [0.0])),
    })


def make_wide(out):
    """The overlap model: 65536 floats in, 1024 out through one linear layer, so a 256-row batch
    computes for about as long as its 64 MiB copy-in takes (about 0.7 ms against 1.2 ms on an H100)."""
    d = os.path.join(out, "wide")
    os.makedirs(d, exist_ok=True)
    desc = {
        "name": "wide",
        "platform": "inferd_mlp",
        "max_batch_size": INGEST_MAX_BATCH,
        "inputs": [{"name": "input", "datatype": "FP32", "dims": [INGEST_WIDTH]}],
        "outputs": [{"name": "output", "datatype": "FP32", "dims": [WIDE_OUT]}],
        "dynamic_batching": {"max_queue_delay_us": 0, "max_queue_size": 64,
                             "default_timeout_us": 10000000},
        "weights": "model.safetensors",
        "layers": [{"name": "fc", "op": "linear", "weight": "fc.weight", "bias": "fc.bias"},
                   {"name": "act", "op": "relu"}],
    }
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump(desc, f, indent=2)
    # One random row repeated: the values do not change the timing, and this stays fast without numpy.
    rnd = random.Random(0)
    row = array.array("f", [rnd.gauss(0.0, 1.0 / 256) for _ in range(INGEST_WIDTH)])
    write_safetensors(os.path.join(d, "model.safetensors"), {
        "fc.weight": ([WIDE_OUT, INGEST_WIDTH], row * WIDE_OUT),
        "fc.bias": ([WIDE_OUT], array.array("f", [0.0]) * WIDE_OUT),
    })


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="the demo model's directory")
    ap.add_argument("--ingest", action="store_true", help="also make the 64 MiB ingest model")
    ap.add_argument("--wide", action="store_true",
                    help="also make the overlap model (64 MiB in, compute about as long as the copy)")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.source, "model.json")):
        print(f"make_models.py: no model.json in {args.source}", file=sys.stderr)
        return 1
    os.makedirs(args.outdir, exist_ok=True)
    link(args.source, os.path.join(args.outdir, "fashion-mlp"))
    make_nodelay(args.source, args.outdir)
    if args.ingest:
        make_ingest(args.outdir)
    if args.wide:
        make_wide(args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
