#!/bin/sh
# test_batch_invariant_gpu.sh: on a GPU, a request's fp16 answer does not depend on the requests batched with it.
# BERT-base (transformers, random weights, onnx_reference.py's export) served at fp16 with max_batch_size 16 and
# max_dims 256; inferd-bench-mix sends mixed lengths 16..256 from 16 HTTP clients with --check: the answers kept
# under load must equal the same requests run alone within 1e-3 of the output's scale (cuBLAS chooses split-K
# GEMMs for some batch sizes and not others, which alone broke this: 0.00365 on an H200).  The same weights with
# "batch_invariant": false are served beside it and their worst difference only reported.  Skips (77) without a
# GPU, transformers or onnxruntime.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "${gpus:-0}" -ge 1 ] || { echo "SKIP: this test needs a GPU (nvidia-smi lists none)"; exit 77; }
"$PY" -c 'import numpy, onnx, onnxruntime, torch, transformers' 2>/dev/null ||
	{ echo "SKIP: $PY cannot import numpy, onnx, onnxruntime, torch and transformers"; exit 77; }
bench="$top_builddir/client/bench/inferd-bench-mix"
[ -x "$bench" ] || fail "no $bench"

"$PY" "$top_srcdir/tests/helpers/onnx_reference.py" --out "$tmp/export" --model bert --opset 17 --batch 1 --seq 64 \
	>"$tmp/export.log" 2>&1 || { tail -n 20 "$tmp/export.log"; fail "exporting BERT-base"; }
for m in bert_invariant bert_variant; do
	mkdir -p "$tmp/models/$m" && ln "$tmp/export/bert/model.onnx" "$tmp/models/$m/" || fail "model folder $m"
done
cfg='"platform": "onnx", "max_batch_size": 16, "precision": "fp16", "max_dims": {"input_ids": [256], "attention_mask": [256]}'
echo "{$cfg}" >"$tmp/models/bert_invariant/model.json"
echo "{$cfg, \"batch_invariant\": false}" >"$tmp/models/bert_variant/model.json"

INFERD_TEST_DEVICE=cuda:0 start_daemon --model_repository="$tmp/models"
url="http://127.0.0.1:$port"

# mix MODEL: 16 clients for 6 s with --check; prints the worst difference, fails on a refused or failed request.
mix() {
	"$bench" --model="$1" --url="$url" --protocol=http-binary --concurrency=16 --duration=6 --warmup=1 \
	    --lengths=16:256 --check --tol=1e-3 --json >"$tmp/$1.json" 2>"$tmp/$1.err"
	echo "$1: exit $? ($(tail -n 1 "$tmp/$1.err"))"
	"$PY" - "$tmp/$1.json" <<'PYEOF' || fail "inferd-bench-mix $1: report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] > 0 and r["ok"] == r["sent"] and r["failed"] == 0, "answered %s of %s" % (r["ok"], r["sent"])
assert r["server"]["mean_batch"] > 1.5, "mean batch %.2f: too little batching to test" % r["server"]["mean_batch"]
print("%s: %d ok, mean batch %.2f, %d lengths, %d checked, worst difference %.3g of the output's scale" % (
    sys.argv[1], r["ok"], r["server"]["mean_batch"], r["distinct_lengths"], r["check"]["checked"],
    r["check"]["worst_diff"]))
open(sys.argv[1] + ".worst", "w").write("%r" % r["check"]["worst_diff"])
PYEOF
}
mix bert_variant
mix bert_invariant
worst=$(cat "$tmp/bert_invariant.json.worst")
"$PY" -c "import sys; sys.exit(0 if float('$worst') <= 1e-3 else 1)" ||
	fail "batch-invariant fp16 answers under load differ from the requests alone by $worst of the output's scale (> 1e-3)"
# The statistics say which model is batch-invariant.
for m in bert_invariant:True bert_variant:False; do
	got=$("$PY" -c 'import json, sys, urllib.request
r = json.load(urllib.request.urlopen(sys.argv[1] + "/v2/models/" + sys.argv[2] + "/stats", timeout=30))
print(r["model_stats"][0]["precision"]["batch_invariant"])' "$url" "${m%%:*}")
	[ "$got" = "${m#*:}" ] || fail "${m%%:*}: statistics say batch_invariant $got"
done
kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died"
stop_daemon
echo "PASS: test_batch_invariant_gpu"
