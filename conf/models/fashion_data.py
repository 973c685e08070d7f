"""Fashion-MNIST data and the reference files, shared by the training scripts beside it.

read_idx/load_split read the gzipped IDX files directly (gzip + numpy; no
network, no torchvision); write_reference, write_request and write_expected
write what the C tests and docs/examples read for a trained model.
"""

import gzip
import json
import os
import struct

import numpy as np

LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
IDX_MAGIC_IMAGES = 0x00000803
IDX_MAGIC_LABELS = 0x00000801


def read_idx(path, expect_magic):
    """Read a gzipped IDX file and return a uint8 numpy array.

    Images come back as (N, rows, cols), labels as (N,).
    """
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: {len(raw)} bytes, too short for an IDX header")
    magic, count = struct.unpack(">II", raw[:8])
    if magic != expect_magic:
        raise ValueError(f"{path}: bad IDX magic 0x{magic:08x}")
    if magic == IDX_MAGIC_IMAGES:
        if len(raw) < 16:
            raise ValueError(f"{path}: {len(raw)} bytes, too short for an image header")
        rows, cols = struct.unpack(">II", raw[8:16])
        shape, offset = (count, rows, cols), 16
    else:
        shape, offset = (count,), 8
    expected = offset + int(np.prod(shape))
    if len(raw) != expected:
        raise ValueError(f"{path}: {len(raw)} bytes, expected {expected}")
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(shape)


def load_split(data_dir, split):
    """Return (images float32 [N,28,28] = pixel / 255, labels int64 [N]) for a split."""
    images = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"),
                      IDX_MAGIC_IMAGES)
    labels = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"),
                      IDX_MAGIC_LABELS)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{split}: {images.shape[0]} images but "
                         f"{labels.shape[0]} labels")
    if images.shape[1:] != (28, 28):
        raise ValueError(f"{split}: images are {images.shape[1:]}, not 28x28")
    return images.astype(np.float32) / np.float32(255.0), labels.astype(np.int64)


def fmt_floats(values):
    """Format floats with %.9g, enough digits to round-trip float32."""
    return "[" + ",".join("%.9g" % float(v) for v in values) + "]"


def write_json_text(path, text):
    """Check text is JSON, then write it."""
    json.loads(text)
    with open(path, "w") as f:
        f.write(text)


def write_reference(path, model_name, indices, labels, inputs, logits, input_shape=None):
    """Write the reference inputs/logits JSON used by the C tests (inputs flattened per row)."""
    rows_in = ",\n    ".join(fmt_floats(np.reshape(r, -1)) for r in inputs)
    rows_out = ",\n    ".join(fmt_floats(r) for r in logits)
    compact = {"separators": (",", ":")}
    shape = "" if input_shape is None else \
        ' "input_shape":%s,\n' % json.dumps(list(input_shape), **compact)
    text = ('{"model":"%s",\n%s'
            ' "indices":%s,\n'
            ' "labels":%s,\n'
            ' "inputs":[\n    %s],\n'
            ' "logits":[\n    %s]}\n') % (
        model_name, shape, json.dumps([int(i) for i in indices], **compact),
        json.dumps([int(v) for v in labels], **compact), rows_in, rows_out)
    write_json_text(path, text)


def write_request(path, request_id, shape, image):
    """Write a KServe v2 inference request body for one image of this shape (batch included)."""
    text = ('{"id":"%s","inputs":[{"name":"input","shape":%s,'
            '"datatype":"FP32","data":%s}]}\n') % (
        request_id, json.dumps(list(shape), separators=(",", ":")),
        fmt_floats(np.reshape(image, -1)))
    write_json_text(path, text)


def write_expected(sample_path, logits, label):
    """Write "<pred> <name> (label <label>)" beside the request body; print it."""
    pred = int(np.argmax(logits))
    label = int(label)
    with open(os.path.splitext(sample_path)[0] + ".expected", "w") as f:
        f.write(f"{pred} {LABELS[pred]} (label {label})\n")
    print(f"image 0: predicted {pred} {LABELS[pred]}, label {label} {LABELS[label]}")
