#!/bin/sh
# test_fold_growth.sh: constant folding keeps a BERT export's plans small.  transformers' BertModel (random
# weights, 2 layers of 128) exported by torch.onnx.export with input_ids and attention_mask only, so its
# token_type_ids are an all-zero buffer expanded to [rows, length] inside the graph; served at up to 64 rows
# of 256 tokens.  Folded naively, the token-type lookup alone is a [64, 256, 128] constant (8 MB, 3.5 times
# the parameters) in every plan.  The daemon's debug line for its largest plan must report folded
# constants of at most a quarter of the parameter bytes, and its answers (padded rows among them) must
# match onnxruntime's.  Skips without torch, transformers, onnx or onnxruntime in /usr/bin/python3.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

"$PY" -c "import torch, transformers, onnx, onnxruntime" 2>/dev/null || {
	echo "SKIP: torch, transformers, onnx or onnxruntime is not importable by $PY"; exit 77; }

mkdir -p "$tmp/models/bert" || exit 99
OMP_NUM_THREADS=1 "$PY" - "$tmp/models/bert" >"$tmp/export.log" 2>&1 <<'PYEOF' || { cat "$tmp/export.log"; fail "export"; }
import inspect, json, os, sys
import torch
from transformers import BertConfig, BertModel

d = sys.argv[1]
torch.manual_seed(0)
bert = BertModel(BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=512, max_position_embeddings=512)).eval()


class Wrap(torch.nn.Module):
    def __init__(self, b):
        super().__init__()
        self.b = b

    def forward(self, ids, mask):
        out = self.b(input_ids=ids, attention_mask=mask)
        return out.last_hidden_state, out.pooler_output


extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
axes = {"input_ids": {0: "N", 1: "T"}, "attention_mask": {0: "N", 1: "T"}, "last_hidden_state": {0: "N", 1: "T"},
        "pooled": {0: "N"}}
torch.onnx.export(Wrap(bert), (torch.randint(0, 1000, (2, 9)), torch.ones(2, 9, dtype=torch.int64)),
                  os.path.join(d, "model.onnx"), opset_version=17, input_names=["input_ids", "attention_mask"],
                  output_names=["last_hidden_state", "pooled"], dynamic_axes=axes, **extra)
with open(os.path.join(d, "model.json"), "w") as f:
    json.dump({"max_batch_size": 64, "max_dims": {"input_ids": [256], "attention_mask": [256]}}, f)
with open(os.path.join(d, "..", "params"), "w") as f:
    f.write("%d\n" % sum(p.numel() * p.element_size() for p in bert.parameters()))
PYEOF
params=$(cat "$tmp/models/params")
rm "$tmp/models/params"

start_daemon --model_repository="$tmp/models" --log_level=debug
grep -q "model 'bert' loaded" "$tmp/daemon.log" || fail "bert did not load"
folded=$(sed -n "s/.*model 'bert': the plan at input shape \[64,256\] folded [0-9]* constants of \([0-9]*\) bytes.*/\1/p" \
	"$tmp/daemon.log" | sort -n | tail -n 1)
[ -n "$folded" ] || fail "no debug line gives the folded bytes of the plan at 64 x 256"
echo "parameters $params bytes; the plan at 64 x 256 folded $folded bytes"
[ "$folded" -le $((params / 4)) ] ||
	fail "the plan at 64 x 256 folded $folded bytes of constants, more than a quarter of the $params parameter bytes"

"$PY" - "$port" "$tmp/models/bert/model.onnx" <<'PYEOF' || fail "the daemon's answers differ from onnxruntime's"
import json, sys, urllib.request
import numpy as np
import onnxruntime as ort

port, path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(1)
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
for rows, length in ((1, 5), (3, 37), (4, 256)):
    ids = rng.integers(0, 1000, (rows, length)).astype(np.int64)
    mask = np.ones((rows, length), np.int64)
    mask[0, length // 2:] = 0
    body = {"inputs": [{"name": n, "datatype": "INT64", "shape": [rows, length], "data": v.ravel().tolist()}
                       for n, v in (("input_ids", ids), ("attention_mask", mask))]}
    req = urllib.request.Request("http://127.0.0.1:%s/v2/models/bert/infer" % port, json.dumps(body).encode())
    outs = json.load(urllib.request.urlopen(req, timeout=120))["outputs"]
    refs = dict(zip(["last_hidden_state", "pooled"], sess.run(None, {"input_ids": ids, "attention_mask": mask})))
    for o in outs:
        ref = refs[o["name"]]
        got = np.array(o["data"], np.float32).reshape(o["shape"])
        if got.shape != ref.shape:
            sys.exit("%s at %d x %d: shape %s, onnxruntime %s" % (o["name"], rows, length, got.shape, ref.shape))
        err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
        if err > 1e-4:
            sys.exit("%s at %d x %d: relative error %g" % (o["name"], rows, length, err))
print("ok: answers match onnxruntime at 1 x 5, 3 x 37 and 4 x 256")
PYEOF
stop_daemon
echo "PASS: the plan at 64 x 256 folds $folded bytes (parameters $params)"
