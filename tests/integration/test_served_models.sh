#!/bin/sh
# test_served_models.sh: the serving suite (tests/helpers/export_suite.py --device cpu) on a few of the models people
# serve: each built with random weights (BatchNorm statistics calibrated), exported by torch.onnx.export (TorchScript
# at opset 17; the dynamo exporter where this torch has it), served by a real inferd daemon (explicit model control:
# load, two input cases over HTTP, unload) and compared with onnxruntime and PyTorch: every export must be right
# (max error <= 1e-4 of the output scale against both, outputs varying with the input, a classifier's top-5
# classes equal); an exporter this torch lacks is recorded as unavailable, not failed.  A daemon crash fails.
# SUITE_MODELS overrides the model list (export_suite.py --list names them).
# Skips without torch, torchvision, transformers, onnx or onnxruntime in /usr/bin/python3.
py=${PYTHON3:-/usr/bin/python3}
[ -x "$py" ] || { echo "SKIP: no $py"; exit 77; }
"$py" -c "import torch, torchvision, transformers, onnx, onnxruntime" 2>/dev/null || {
	echo "SKIP: the exporters are not importable by $py"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/inferd-served-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
models=${SUITE_MODELS:-resnet18,mobilenet_v3_small,lraspp_mobilenet_v3_large,bert,distilbert}
OMP_NUM_THREADS=2 "$py" "${top_srcdir:-.}/tests/helpers/export_suite.py" --device cpu --only "$models" \
	--inferd "${top_builddir:-.}/inferd" --workdir "$dir/work" --out "$dir/suite.json" --jobs 1 --threads 2 \
	--daemon-threads 2 --expect-right >"$dir/suite.log" 2>&1
rc=$?
grep -v -i "warn" "$dir/suite.log" | sed -n '/^| model/,$p'
[ $rc -eq 77 ] && exit 77
if [ $rc -ne 0 ]; then
	grep -v -i "warn" "$dir/suite.log" | tail -n 40
	echo "FAIL: export_suite.py exited with $rc"
	exit 1
fi
# Every model asked for has a right TorchScript export on the CPU (a record missing is a fault of the suite).
"$py" - "$dir/suite.json" "$models" <<'PYEOF' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
want = sys.argv[2].split(",")
right = {r["model"] for r in doc["records"] if r["exporter"] == "torchscript" and r["status"] == "right"}
missing = [m for m in want if m not in right]
if missing:
    sys.exit(f"FAIL: no right TorchScript export for {missing}")
print(f"ok: {len(want)} models right through the daemon; totals {doc['totals']}")
PYEOF
