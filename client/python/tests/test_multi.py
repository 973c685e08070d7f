"""A model of two named inputs (FP32, and INT64 with a variable dim) and three outputs, over shm and HTTP.

The model is tests/helpers/make_multi_onnx.py's "multi": y = 2 x, s = sum(float(ids)) over the sequence,
z = float(ids) / 2.  Every value used is exact in float32, so every path must give the same bits as numpy.
"""

import numpy as np
import pytest

import inferd

MULTI = "multi"


@pytest.fixture
def multi(client):
    if MULTI not in client.models():
        pytest.skip("the daemon serves no model 'multi' (make_multi_onnx.py needs the onnx package)")
    return client


def make(rows, seq, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-1000, 1000, size=(rows, 4)).astype(np.float32) / np.float32(8)
    ids = rng.integers(0, 30000, size=(rows, seq)).astype(np.int64)
    return x, ids


def reference(x, ids):
    f = ids.astype(np.float32)
    return {"y": x * np.float32(2), "s": f.sum(axis=1, keepdims=True, dtype=np.float64).astype(np.float32),
            "z": f * np.float32(0.5)}


def same_bits(got, want):
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        assert np.array_equal(got[k].view(np.uint32), want[k].view(np.uint32)), k


def test_metadata(multi, http_client):
    m = multi.metadata(MULTI)
    assert [(s.name, s.datatype, s.shape) for s in m.inputs] == [("x", "FP32", (-1, 4)), ("ids", "INT64", (-1, -1))]
    assert [(s.name, s.shape) for s in m.outputs] == [("y", (-1, 4)), ("s", (-1, 1)), ("z", (-1, -1))]
    h = http_client.metadata(MULTI)
    assert [s.name for s in h.inputs] == ["x", "ids"] and [s.name for s in h.outputs] == ["y", "s", "z"]


def test_dict_of_named_arrays(multi):
    x, ids = make(3, 5, 1)
    same_bits(multi.infer(MULTI, {"ids": ids, "x": x}), reference(x, ids))


def test_region_arrays_zero_copy(multi):
    x, ids = make(4, 7, 2)
    rx = multi.empty(MULTI, 4, name="x")
    rx[:] = x
    rids = multi.array(ids)
    assert multi.in_region(rx) and multi.in_region(rids)
    allocations = multi._r.allocations
    got = multi.infer(MULTI, {"x": rx, "ids": rids})
    assert multi._r.allocations == allocations + 3  # the three outputs only
    assert all(multi.in_region(a) for a in got.values())
    same_bits(got, reference(x, ids))


def test_sequence_lengths_in_flight_at_once(multi):
    # Different sequence lengths cannot share a batch: each answer must still be its own.
    cases = [make(1 + i % 3, 1 + i % 16, 10 + i) for i in range(60)]
    futures = [multi.submit(MULTI, {"x": x, "ids": ids}) for x, ids in cases]
    for (x, ids), f in zip(cases, futures):
        same_bits(f.result(timeout=60), reference(x, ids))


def test_http_json_and_binary_equal_shm(multi, http_client):
    x, ids = make(2, 9, 3)
    shm = multi.infer(MULTI, {"x": x, "ids": ids})
    for binary in (True, False):
        same_bits(http_client.infer(MULTI, {"x": x, "ids": ids}, binary=binary), shm)


def test_refusals_name_the_problem(multi, http_client):
    x, ids = make(1, 17, 4)
    with pytest.raises(inferd.InvalidRequest, match="2 inputs"):
        multi.infer(MULTI, x)
    with pytest.raises(inferd.InvalidRequest, match="missing input ids"):
        multi.infer(MULTI, {"x": x})
    with pytest.raises(inferd.InvalidRequest, match="ids.*16"):
        multi.infer(MULTI, {"x": x, "ids": ids})
    with pytest.raises(inferd.InvalidRequest, match="ids") as e:
        http_client.infer(MULTI, {"x": x, "ids": ids})
    assert e.value.status == 400
    with pytest.raises(inferd.InvalidRequest, match="variable dims"):
        multi.empty(MULTI, 1)
    with pytest.raises(inferd.InvalidRequest, match="variable dims"):
        http_client.empty(MULTI, 1)
    rx = multi.empty(MULTI, 2, name="x")
    assert rx.shape == (2, 4) and rx.dtype == np.float32
