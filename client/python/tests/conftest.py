"""Fixtures: the daemon tests/integration/test_python_client.sh started, and a numpy reference of the demo model.

Environment (set by the script): INFERD_TEST_SOCKET, INFERD_TEST_URL,
INFERD_TEST_MODEL_DIR (conf/models/fashion-mlp), INFERD_ABI_PROBE
(tests/helpers/inferd_abi), INFERD_TEST_IPC_CLIENT (tests/helpers/ipc_client).
"""

import json
import os
import struct

import numpy as np
import pytest

import inferd

MODEL = "fashion-mlp"


def _env(name):
    v = os.environ.get(name)
    if not v:
        pytest.skip("%s is not set: run through tests/integration/test_python_client.sh" % name)
    return v


@pytest.fixture(scope="session")
def socket_path():
    return _env("INFERD_TEST_SOCKET")


@pytest.fixture(scope="session")
def url():
    return _env("INFERD_TEST_URL")


@pytest.fixture
def client(socket_path):
    with inferd.connect(socket_path) as c:
        yield c


@pytest.fixture
def http_client(url):
    with inferd.http.Client(url) as h:
        yield h


def _safetensors(path):
    """{name: float64 array} from a safetensors file, read by hand (8-byte length, JSON header, data)."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", t
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(t["shape"]).astype(np.float64)
    return out


@pytest.fixture(scope="session")
def reference():
    """The demo MLP in float64 numpy, from the model's own weights: x -> logits."""
    d = _env("INFERD_TEST_MODEL_DIR")
    w = _safetensors(os.path.join(d, "model.safetensors"))

    def run(x):
        h = np.asarray(x, dtype=np.float64)
        h = np.maximum(h @ w["fc1.weight"].T + w["fc1.bias"], 0)
        h = np.maximum(h @ w["fc2.weight"].T + w["fc2.bias"], 0)
        return h @ w["fc3.weight"].T + w["fc3.bias"]
    return run


def close_to(y, ref):
    """float32 logits against the float64 reference: within 1e-4 of the largest logit."""
    return np.abs(y - ref).max() <= 1e-4 * max(1.0, np.abs(ref).max())


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)
