#!/bin/sh
# test_onnx_ops_ort.sh: random one-node models of the mask, index and scan ops (make_onnx_ops_cases.py, expected
# outputs from onnxruntime) imported and run by the engine; a refusal fails.  Skips without onnx/onnxruntime.
# INFERD_TEST_DEVICE=cuda:0 runs them on the GPU (the CUDA backend has every op of the list).
py=${PYTHON3:-/usr/bin/python3}
seed=${ONNX_OPS_SEED:-1}
[ -x "$py" ] || { echo "skip: no $py"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/inferd-onnx-ops-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$py" "${top_srcdir:-.}/tests/helpers/make_onnx_ops_cases.py" "$dir" "$seed" >"$dir/generate.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
	tail -n 20 "$dir/generate.log"
	[ $rc -eq 77 ] && exit 77
	exit 1
fi
"${top_builddir:-.}/tests/helpers/onnx_node_engine" "$dir"
