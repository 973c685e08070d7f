#!/usr/bin/env python3
"""Triton's CUDA shared memory against inferd on a GPU: a CUDA IPC handle of a PyTorch tensor registered
over HTTP, the demo model run with its input and output in device memory, compared with
tests/data/fashion_ref.json.  Usage: cuda_shm_client.py URL REF.  Exit 0 pass, 1 fail, 77 skip."""
import base64
import json
import sys
import urllib.error
import urllib.request

try:
    import torch
except ImportError:
    print("SKIP: torch is not importable")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch sees no GPU")
    sys.exit(77)
url, ref = sys.argv[1], json.load(open(sys.argv[2]))


def post(path, body=None, method="POST"):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def register(name, t):
    """Register t's CUDA allocation; returns the tensor's offset in it."""
    _, handle, _, offset = t.untyped_storage()._share_cuda_()[:4]
    # Recent PyTorch puts a type byte before the cudaIpcMemHandle_t (64 bytes) of a plain
    # cudaMalloc block; the handle itself is the last 64 bytes either way.
    if len(handle) < 64:
        sys.exit("PyTorch's IPC handle is %d bytes, not a cudaIpcMemHandle_t" % len(handle))
    handle = handle[-64:]
    st, body = post("/v2/cudasharedmemory/region/%s/register" % name, {
        "raw_handle": {"b64": base64.b64encode(handle).decode()}, "device_id": t.device.index,
        "byte_size": offset + t.numel() * 4})
    if st != 200:
        sys.exit("register %s: %d %s" % (name, st, body))
    return offset


x = torch.tensor(ref["inputs"][0:2], dtype=torch.float32, device="cuda")
y = torch.full((2, 10), float("nan"), dtype=torch.float32, device="cuda")
torch.cuda.synchronize()
xo, yo = register("cx", x), register("cy", y)
shm = lambda r, o, n: {"shared_memory_region": r, "shared_memory_offset": o, "shared_memory_byte_size": n}
st, body = post("/v2/models/fashion-mlp/infer", {
    "inputs": [{"name": "input", "shape": [2, 784], "datatype": "FP32", "parameters": shm("cx", xo, 2 * 784 * 4)}],
    "outputs": [{"name": "logits", "parameters": shm("cy", yo, 80)}]})
ok = st == 200 and "data" not in body["outputs"][0]
got = y.cpu().tolist()
for i in range(2):
    ok = ok and all(abs(g - w) <= 1e-4 * max(1, abs(w)) for g, w in zip(got[i], ref["logits"][i]))
st2, status = post("/v2/cudasharedmemory/status", method="GET")
ok = ok and st2 == 200 and {r["name"] for r in status} == {"cx", "cy"}
post("/v2/cudasharedmemory/unregister")
st3, status = post("/v2/cudasharedmemory/status", method="GET")
ok = ok and status == []
print("CUDA shared memory: %s (answer %d %s, logits %s)" % ("ok" if ok else "FAIL", st, body, got[0][:3]))
sys.exit(0 if ok else 1)
