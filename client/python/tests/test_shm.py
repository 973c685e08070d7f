"""The shared-memory client against a real daemon: arrays in the region, sync, futures, asyncio, threads, errors."""

import asyncio
import concurrent.futures
import os
import threading

import numpy as np
import pytest

import inferd
from conftest import MODEL, close_to


def test_models_and_metadata(client):
    assert MODEL in client.models()
    m = client.metadata(MODEL)
    assert m.name == MODEL
    assert [(s.name, s.datatype, s.shape) for s in m.inputs] == [("input", "FP32", (-1, 784))]
    assert [(s.name, s.datatype, s.shape) for s in m.outputs] == [("logits", "FP32", (-1, 10))]
    assert m.max_batch_size == 256
    assert len(m.labels) == 10 and m.labels[9] == "Ankle boot"
    assert m.input().dtype == np.float32


def test_models_leaves_out_a_model_that_failed_to_load(client, http_client):
    broken = os.environ.get("INFERD_TEST_BROKEN_MODEL")
    if not broken:
        pytest.skip("INFERD_TEST_BROKEN_MODEL names no model that failed to load")
    # The daemon names it (its load failed), but serves it not: both clients list the served ones alone.
    assert broken not in client.models() and MODEL in client.models()
    assert client.models() == http_client.models()
    with pytest.raises(inferd.ModelNotFound, match="failed to load"):
        client.metadata(broken)


def test_empty_is_in_the_region_and_the_daemon_reads_it(client, http_client, rng, reference):
    x = client.empty(MODEL, 3)
    assert x.shape == (3, 784) and x.dtype == np.float32 and client.in_region(x)
    x[:] = rng.random((3, 784), dtype=np.float32)
    allocations = client._r.allocations
    y = client.infer(MODEL, x)
    # Zero copy: the only new block is the output's; the input was used where it is.
    assert client._r.allocations == allocations + 1
    assert client.in_region(y) and y.shape == (3, 10)
    # What the daemon read is what was written: HTTP sends the same bytes, same batch alone.
    assert np.array_equal(y.view(np.uint32), http_client.infer(MODEL, x, binary=False).view(np.uint32))
    assert close_to(y, reference(x))
    x[1] = 0.0  # written in place again: the next answer follows
    y2 = client.infer(MODEL, x)
    assert np.array_equal(y2[0], y[0]) and not np.array_equal(y2[1], y[1])
    assert close_to(y2, reference(x))


def test_array_from_outside_the_region_is_copied(client, rng, reference):
    x = rng.random((5, 784), dtype=np.float32)
    assert not client.in_region(x)
    allocations, blocks = client._r.allocations, client._r.blocks
    y = client.infer(MODEL, x)
    assert client._r.allocations == allocations + 2  # the input's copy and the output
    with client._r.lock:
        client._r.drain()
        assert client._r.blocks == blocks + 1  # the copy went back once the answer came
    assert np.array_equal(y, client.infer(MODEL, client.array(x)))
    assert close_to(y, reference(x))
    # float64, a list and a non-contiguous view are converted or copied, not refused
    assert np.array_equal(client.infer(MODEL, x.astype(np.float64)), y)
    assert np.array_equal(client.infer(MODEL, x.tolist()), y)
    wide = np.zeros((5, 784 * 2), np.float32)
    wide[:, ::2] = x
    assert np.array_equal(client.infer(MODEL, wide[:, ::2]), y)


def test_empty_like_array_and_views(client, rng):
    x = rng.random((4, 784), dtype=np.float32)
    a = client.array(x)
    assert client.in_region(a) and np.array_equal(a, x)
    e = client.empty_like(x)
    assert client.in_region(e) and e.shape == x.shape and e.dtype == x.dtype
    e[:] = x
    # A contiguous slice of a region array is still in the region and used in place.
    assert client.in_region(a[1:3])
    assert np.array_equal(client.infer(MODEL, a[1:3]), client.infer(MODEL, x[1:3]))


def test_dict_inputs_and_out(client, rng):
    x = rng.random((2, 784), dtype=np.float32)
    y = client.infer(MODEL, x)
    assert np.array_equal(client.infer(MODEL, {"input": x}), y)
    out = client.empty_like(y)
    r = client.infer(MODEL, x, out=out)
    assert r is out and np.array_equal(out, y)
    plain = np.zeros((2, 10), np.float32)
    assert client.infer(MODEL, x, out={"logits": plain}) is plain and np.array_equal(plain, y)
    with pytest.raises(inferd.InvalidRequest, match="no input called image"):
        client.infer(MODEL, {"image": x})
    with pytest.raises(inferd.InvalidRequest, match="missing input input"):
        client.infer(MODEL, {})
    with pytest.raises(inferd.InvalidRequest, match="out 'logits'"):
        client.infer(MODEL, x, out=np.zeros((3, 10), np.float32))


def test_submit_many_in_flight(client, rng, reference):
    # More than the rings hold (cq 512): the rest wait in the client and go out as room frees.
    xs = [rng.random((1 + i % 4, 784), dtype=np.float32) for i in range(1500)]
    futures = [client.submit(MODEL, x) for x in xs]
    assert all(isinstance(f, concurrent.futures.Future) for f in futures)
    for x, f in zip(xs, futures):
        y = f.result(timeout=60)
        assert y.shape == (x.shape[0], 10) and close_to(y, reference(x))
    assert not client._pending and not client._backlog


def test_asyncio(client, rng, reference):
    xs = [rng.random((2, 784), dtype=np.float32) for _ in range(200)]

    async def main():
        return await asyncio.gather(*(client.infer_async(MODEL, x) for x in xs))
    for x, y in zip(xs, asyncio.run(main())):
        assert close_to(y, reference(x))


def test_threads_share_one_client(client, rng, reference):
    xs = [rng.random((3, 784), dtype=np.float32) for _ in range(8)]
    refs = [reference(x) for x in xs]
    bad = []

    def work(i):
        x = client.array(xs[i]) if i % 2 else xs[i]
        for _ in range(150):
            y = client.infer(MODEL, x)
            if not close_to(y, refs[i]):
                bad.append(i)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


def test_errors_carry_the_message(client, socket_path, rng):
    x = rng.random((1, 784), dtype=np.float32)
    with pytest.raises(inferd.ModelNotFound, match="no-such-model") as e:
        client.infer("no-such-model", x)
    assert e.value.code == -9
    with pytest.raises(inferd.ModelNotFound):
        client.metadata("no-such-model")
    with pytest.raises(inferd.InvalidRequest, match=r"input 'input' dim 1 is 783, the model's is 784"):
        client.infer(MODEL, np.zeros((1, 783), np.float32))
    with pytest.raises(inferd.InvalidRequest, match="257 rows, it takes 1 .. 256"):
        client.infer(MODEL, np.zeros((257, 784), np.float32))
    with pytest.raises(inferd.InvalidRequest, match=r"shape \[784\], the model expects \[N, 784\]"):
        client.infer(MODEL, np.zeros(784, np.float32))
    with pytest.raises(inferd.InvalidRequest, match="input 'input'"):
        client.infer(MODEL, np.zeros((1, 784), np.complex64))
    with pytest.raises(inferd.ConnectFailed, match="nothing.sock") as e:
        inferd.connect(socket_path + ".nothing.sock")
    assert str(e.value).count("nothing.sock") == 1, "the socket is named more than once: %s" % e.value


def test_daemon_timeout_is_reported(client, rng):
    # A model without eager dispatch waits out its window: a 1 us deadline has passed by then.
    # (The demo model runs a lone request at once, so it may well make the deadline.)
    slow = os.environ.get("INFERD_TEST_SLOW_MODEL")
    if not slow:
        pytest.skip("INFERD_TEST_SLOW_MODEL names no model with eager_dispatch false")
    x = rng.random((1, 784), dtype=np.float32)
    with pytest.raises(inferd.Timeout, match="timed out") as e:
        client.infer(slow, x, timeout_us=1)
    assert e.value.code == inferd._lib.ETIMEDOUT
    assert client.infer(MODEL, x).shape == (1, 10)  # the connection is still good


def test_region_full_and_freed(socket_path):
    with inferd.connect(socket_path, region_bytes=1 << 20) as c:
        held = []
        with pytest.raises(inferd.NoSpace, match="shared region"):
            while True:
                held.append(c.empty(MODEL, 64))
        assert len(held) >= 2
        held.clear()  # collected: the blocks go back
        assert c.empty(MODEL, 64).shape == (64, 784)


def test_close(socket_path, rng):
    c = inferd.connect(socket_path)
    x = c.array(rng.random((1, 784), dtype=np.float32))
    futures = [c.submit(MODEL, x) for _ in range(50)]
    c.close()  # waits for the requests in flight
    assert all(f.result().shape == (1, 10) for f in futures)
    assert c.closed
    assert x.sum() > 0  # the region stays mapped while its arrays live
    with pytest.raises(inferd.Closed):
        c.infer(MODEL, x)
    with pytest.raises(inferd.Closed):
        c.models()
    c.close()  # twice is fine


def test_sync_and_async_callers_mixed(client, rng, reference):
    # Threads in infer() take turns reaping for everyone while another thread keeps futures in flight.
    xs = [rng.random((1 + i % 3, 784), dtype=np.float32) for i in range(6)]
    refs = [reference(x) for x in xs]
    bad = []

    def sync(i):
        for _ in range(100):
            if not close_to(client.infer(MODEL, xs[i]), refs[i]):
                bad.append(("sync", i))

    def asynchronous():
        for _ in range(5):
            fs = [(i, client.submit(MODEL, xs[i])) for i in range(6) for _ in range(40)]
            bad.extend(("async", i) for i, f in fs if not close_to(f.result(timeout=60), refs[i]))
    threads = [threading.Thread(target=sync, args=(i,)) for i in range(4)] + [threading.Thread(target=asynchronous)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and bad == []


def test_daemon_going_away_fails_requests(tmp_path, rng):
    # A daemon of our own, killed with requests in flight: every caller gets Closed, none hangs.
    import os
    import signal
    import subprocess
    import time
    binary, models = os.environ.get("INFERD_TEST_DAEMON"), os.environ.get("INFERD_TEST_MODEL_DIR")
    if not binary:
        pytest.skip("INFERD_TEST_DAEMON is not set")
    sock = str(tmp_path / "s.sock")
    p = subprocess.Popen([binary, "--device=cpu", "--model_repository=" + os.path.dirname(models),
                          "--http_enable=no", "--shm_socket=" + sock], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if os.path.exists(sock):
                break
            time.sleep(0.1)
        c = inferd.connect(sock)
        x = c.array(rng.random((64, 784), dtype=np.float32))
        # The socket accepts clients before the start-up load has finished: wait until the model serves.
        for _ in range(600):
            try:
                c.infer(MODEL, x)
                break
            except inferd.ModelNotFound:
                time.sleep(0.1)
        futures = [c.submit(MODEL, x) for _ in range(400)]
        p.send_signal(signal.SIGKILL)
        p.wait()
        outcomes = set()
        for f in futures:
            try:
                f.result(timeout=30)
                outcomes.add("ok")
            except inferd.Closed:
                outcomes.add("closed")
        assert "closed" in outcomes
        with pytest.raises(inferd.Closed, match="daemon closed the connection"):
            c.infer(MODEL, x)
        assert c.closed
        c.close()
    finally:
        p.kill()
        p.wait()
