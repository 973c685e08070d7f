#!/bin/sh
# test_bench_mix.sh: inferd-bench-mix against a private daemon serving a small masked encoder exported
# from PyTorch (token embedding, two post-norm attention layers with an additive attention mask, inputs
# input_ids and attention_mask INT64 [N, T], outputs last_hidden_state [N, T, 32] and pooled [N, 32]).
# Four clients send mixed-length requests (lengths 5..40) for ~3 s over HTTP binary tensors and over shm
# with --check: each run must exit 0, report answered requests and no refusals, and the answers kept under
# load must equal the same requests run alone afterwards within 1e-5 of the output's scale.  The daemon's
# answers at a few lengths are also compared with onnxruntime's, so the "alone" reference is itself right.
# Skips (77) without torch, onnx or onnxruntime.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

"$PY" -c 'import numpy, onnx, onnxruntime, torch' 2>/dev/null ||
	{ echo "SKIP: $PY cannot import numpy, onnx, onnxruntime and torch"; exit 77; }
bench="$top_builddir/client/bench/inferd-bench-mix"
[ -x "$bench" ] || fail "no $bench"

mkdir -p "$tmp/models/mix_encoder" || fail "mkdir"
"$PY" - "$tmp/models/mix_encoder" >"$tmp/export.log" 2>&1 <<'PYEOF' || { tail -n 30 "$tmp/export.log"; fail "exporting the encoder"; }
import inspect, json, os, sys
import torch
from torch import nn

torch.manual_seed(7)
D, HEADS, VOCAB = 32, 4, 1000


class Layer(nn.Module):
    """Attention written out (MatMul, mask Add, Softmax, MatMul) so that the export keeps T variable."""

    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.ff1, self.ff2 = nn.Linear(D, 2 * D), nn.Linear(2 * D, D)
        self.n1, self.n2 = nn.LayerNorm(D), nn.LayerNorm(D)

    def forward(self, x, bias):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        split = lambda t: t.reshape(t.shape[0], -1, HEADS, D // HEADS).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        a = torch.softmax(q @ k.transpose(-1, -2) / (D // HEADS) ** 0.5 + bias, dim=-1) @ v
        x = self.n1(x + self.out(a.transpose(1, 2).reshape(x.shape[0], -1, D)))
        return self.n2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([Layer(), Layer()])

    def forward(self, input_ids, attention_mask):
        bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        h = self.emb(input_ids)
        for layer in self.layers:
            h = layer(h, bias)
        return h, torch.tanh(h[:, 0])


d = sys.argv[1]
ids = torch.randint(0, VOCAB, (2, 9))
mask = torch.ones(2, 9, dtype=torch.int64)
extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
axes = {"input_ids": {0: "N", 1: "T"}, "attention_mask": {0: "N", 1: "T"},
        "last_hidden_state": {0: "N", 1: "T"}, "pooled": {0: "N"}}
torch.onnx.export(Encoder().eval(), (ids, mask), os.path.join(d, "model.onnx"), opset_version=17,
                  input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state", "pooled"],
                  dynamic_axes=axes, **extra)
with open(os.path.join(d, "model.json"), "w") as f:
    json.dump({"platform": "onnx", "max_batch_size": 8, "dynamic_batching": {"max_queue_delay_us": 2000},
               "max_dims": {"input_ids": [64], "attention_mask": [64]}}, f)
PYEOF

start_daemon --model_repository="$tmp/models"
grep -q "not supported" "$tmp/daemon.log" && { echo "SKIP: this daemon serves no ONNX models"; exit 77; }
url="http://127.0.0.1:$port"

# Run the bench with the common flags and any others; its JSON report in $tmp/$1.json.
run_bench() {
	what=$1
	shift
	"$bench" --model=mix_encoder --url="$url" --concurrency=4 --duration=3 --warmup=0.5 --lengths=5:40 \
	    --check --tol=1e-5 --json "$@" >"$tmp/$what.json" 2>"$tmp/$what.err"
	status=$?
	cat "$tmp/$what.json" "$tmp/$what.err"
	[ "$status" -eq 0 ] || fail "inferd-bench-mix $what exited $status"
	"$PY" - "$tmp/$what.json" <<'PYEOF' || fail "inferd-bench-mix $what: report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] > 0 and r["ok"] == r["sent"], "answered %s of %s" % (r["ok"], r["sent"])
assert r["refused"]["kinds"] == [] and r["refused"]["outside_window"] == 0, r["refused"]
assert r["distinct_lengths"] > 1, r["distinct_lengths"]
c = r["check"]
assert c["checked"] > 0 and c["ok"] and c["worst_diff"] <= 1e-5, c
assert r["latency_ms"]["p50"] > 0 and r["latency_ms"]["max"] >= r["latency_ms"]["p99"]
assert "server" in r and r["server"]["executions"] > 0, "no server counters"
print("%s: %d ok, %.1f rows/s, mean batch %.2f, %d lengths, %d checked, worst %.2g" % (
    r["protocol"], r["ok"], r["rows_per_s"], r["server"]["mean_batch"], r["distinct_lengths"],
    c["checked"], c["worst_diff"]))
PYEOF
}

run_bench http --protocol=http-binary
run_bench shm --protocol=shm --socket="$sock"

# The daemon's answers alone, which --check takes as the reference, against onnxruntime's.
"$PY" - "$url" "$tmp/models/mix_encoder/model.onnx" <<'PYEOF' || fail "daemon's answer differs from onnxruntime's"
import json, sys, urllib.request
import numpy as np, onnxruntime as ort
url, path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(3)
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
for t in (5, 17, 40):
    ids = rng.integers(0, 1000, (1, t)).astype(np.int64)
    mask = np.ones((1, t), np.int64)
    body = {"inputs": [{"name": "input_ids", "shape": [1, t], "datatype": "INT64", "data": ids.ravel().tolist()},
                       {"name": "attention_mask", "shape": [1, t], "datatype": "INT64", "data": mask.ravel().tolist()}]}
    req = urllib.request.Request(url + "/v2/models/mix_encoder/infer", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    outs = {o["name"]: np.array(o["data"], np.float32).reshape(o["shape"])
            for o in json.load(urllib.request.urlopen(req, timeout=60))["outputs"]}
    ref = dict(zip(["last_hidden_state", "pooled"], sess.run(None, {"input_ids": ids, "attention_mask": mask})))
    for k, v in ref.items():
        assert outs[k].shape == v.shape, (k, outs[k].shape, v.shape)
        err = np.abs(outs[k] - v).max() / np.abs(v).max()
        assert err <= 1e-4, (k, t, err)
print("the daemon's answers match onnxruntime's at T = 5, 17, 40")
PYEOF

kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died"
wait_for daemon_regions 0
stop_daemon
echo "PASS: test_bench_mix"
