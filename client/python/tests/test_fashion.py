"""Fashion-MNIST through the Python client equals the C client (libinferd driven from C) on the same images."""

import gzip
import os
import struct
import subprocess

import numpy as np
import pytest

from conftest import MODEL

IMAGES = 1000
BATCH = 100


def _idx(path):
    """An IDX file (gzipped) as a uint8 array of its items."""
    raw = gzip.open(path).read()
    magic, n = struct.unpack(">II", raw[:8])
    if magic == 0x803:
        rows, cols = struct.unpack(">II", raw[8:16])
        return np.frombuffer(raw[16:], np.uint8).reshape(n, rows * cols)
    assert magic == 0x801, hex(magic)
    return np.frombuffer(raw[8:], np.uint8)


@pytest.fixture(scope="module")
def fashion():
    d = os.environ.get("INFERD_FASHION_DIR") or "/usr/share/datasets/fashion-mnist"
    try:
        images = _idx(os.path.join(d, "t10k-images-idx3-ubyte.gz"))[:IMAGES]
        labels = _idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz"))[:IMAGES]
    except OSError as e:
        pytest.skip("Fashion-MNIST test set not available (%s): install dataset-fashion-mnist" % e)
    return (images / np.float32(255)).astype(np.float32), labels


def test_accuracy_equals_the_c_path(client, socket_path, fashion, tmp_path):
    ipc_client = os.environ.get("INFERD_TEST_IPC_CLIENT")
    if not ipc_client:
        pytest.skip("INFERD_TEST_IPC_CLIENT is not set: run through tests/integration/test_python_client.sh")
    images, labels = fashion
    # Python: batches written into a region array, answers read from the region.
    x = client.empty(MODEL, BATCH)
    py = []
    for i in range(0, IMAGES, BATCH):
        x[:] = images[i:i + BATCH]
        py.append(client.infer(MODEL, x).copy())
    py = np.concatenate(py)
    # C: tests/helpers/ipc_client runs the same batches through libinferd.
    (tmp_path / "in.bin").write_bytes(images.tobytes())
    subprocess.run([ipc_client, socket_path, "seq", str(tmp_path / "in.bin"), str(tmp_path / "out.bin")]
                   + [str(BATCH)] * (IMAGES // BATCH), check=True)
    c = np.frombuffer((tmp_path / "out.bin").read_bytes(), "<f4").reshape(IMAGES, 10)
    acc_py = float(np.mean(np.argmax(py, axis=1) == labels))
    acc_c = float(np.mean(np.argmax(c, axis=1) == labels))
    print("accuracy on the first %d test images: Python shm %.4f, C %.4f" % (IMAGES, acc_py, acc_c))
    assert acc_py == acc_c
    assert acc_py >= 0.85
    # Each batch ran alone: on the CPU the logits agree to the bit (on a GPU, batching may differ in rounding).
    if os.environ.get("INFERD_TEST_DEVICE", "cpu") == "cpu":
        assert np.array_equal(py.view(np.uint32), c.view(np.uint32))
