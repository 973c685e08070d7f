"""The HTTP client: the same surface over KServe v2, JSON and binary, equal to the shared-memory answers."""

import asyncio
import threading

import numpy as np
import pytest

import inferd
from conftest import MODEL, close_to


def test_models_and_metadata(http_client, client):
    assert http_client.ready()
    assert http_client.models() == client.models()
    m, s = http_client.metadata(MODEL), client.metadata(MODEL)
    assert m.inputs == s.inputs and m.outputs == s.outputs
    assert m.max_batch_size is None and m.labels == []


@pytest.mark.parametrize("rows", [1, 3, 7])
def test_json_and_binary_equal_shm_bit_for_bit(http_client, client, rng, rows):
    # One request at a time, so each batch runs alone: on the CPU the three doors agree to the bit.
    x = rng.random((rows, 784), dtype=np.float32)
    shm = client.infer(MODEL, client.array(x))
    binary = http_client.infer(MODEL, x, binary=True)
    js = http_client.infer(MODEL, x, binary=False)
    for y in (binary, js):
        assert y.dtype == np.float32 and y.shape == (rows, 10)
        assert np.array_equal(y.view(np.uint32), shm.view(np.uint32))


def test_example_image_is_an_ankle_boot(http_client, client):
    import json
    import os
    example = os.path.join(os.environ["INFERD_TEST_MODEL_DIR"], "..", "..", "..", "docs", "examples",
                           "fashion-request.json")
    x = np.array(json.load(open(example))["inputs"][0]["data"], np.float32).reshape(1, 784)
    labels = client.metadata(MODEL).labels
    assert labels[int(np.argmax(client.infer(MODEL, x)))] == "Ankle boot"
    assert labels[int(np.argmax(http_client.infer(MODEL, {"input": x})))] == "Ankle boot"


def test_same_surface(http_client, rng, reference):
    x = http_client.empty(MODEL, 2)
    assert x.shape == (2, 784) and x.dtype == np.float32
    x[:] = rng.random((2, 784), dtype=np.float32)
    assert close_to(http_client.infer(MODEL, x), reference(x))
    a = http_client.array(x)
    e = http_client.empty_like(a)
    e[:] = a
    assert np.array_equal(http_client.infer(MODEL, a), http_client.infer(MODEL, e))
    dst = np.zeros((2, 10), np.float32)
    assert http_client.infer(MODEL, x, out=dst) is dst and close_to(dst, reference(x))
    with pytest.raises(inferd.InvalidRequest, match="out"):
        http_client.infer(MODEL, x, out=np.zeros((3, 10), np.float32))
    named = {"logits": np.zeros((2, 10), np.float32)}
    assert http_client.infer(MODEL, x, out=named) is named["logits"]
    futures = [http_client.submit(MODEL, x) for _ in range(40)]
    assert all(close_to(f.result(timeout=60), reference(x)) for f in futures)

    async def main():
        return await asyncio.gather(*(http_client.infer_async(MODEL, x, binary=i % 2 == 0) for i in range(20)))
    assert all(close_to(y, reference(x)) for y in asyncio.run(main()))


def test_threads_share_one_client(http_client, rng, reference):
    xs = [rng.random((2, 784), dtype=np.float32) for _ in range(4)]
    bad = []

    def work(i):
        for _ in range(30):
            if not close_to(http_client.infer(MODEL, xs[i]), reference(xs[i])):
                bad.append(i)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


def test_errors_carry_the_daemons_message(http_client, url):
    x = np.zeros((1, 784), np.float32)
    with pytest.raises(inferd.ModelNotFound, match="Request for unknown model: 'no-such-model' is not found") as e:
        http_client.infer("no-such-model", x)
    assert e.value.status == 404
    for binary in (True, False):
        with pytest.raises(inferd.InvalidRequest, match="shape\\[1\\] is 783, the model expects 784") as e:
            http_client.infer(MODEL, np.zeros((1, 783), np.float32), binary=binary)
        assert e.value.status == 400
    with pytest.raises(inferd.InvalidRequest, match="no input called image"):
        http_client.infer(MODEL, {"image": x})
    with pytest.raises(inferd.ConnectFailed):
        inferd.http.Client("http://127.0.0.1:1").models()
    with pytest.raises(ValueError, match="expected http"):
        inferd.http.Client("https://example.org")


@pytest.mark.parametrize("message", [
    "busy: the model's queue is full",
    "server busy: 2105344 bytes of HTTP staging memory (pinned_pool_bytes = 1048576) were not free "
    "within the request's timeout of 1000 ms; retry later or raise pinned_pool_bytes",
])
def test_busy_answers_raise_busy(message):
    err = inferd.errors.from_http(503, message)
    assert isinstance(err, inferd.Busy) and err.status == 503
    assert isinstance(inferd.errors.from_http(503, "timed out waiting for inference"), inferd.Timeout)
    assert isinstance(inferd.errors.from_http(503, "server is shutting down"), inferd.ShuttingDown)
