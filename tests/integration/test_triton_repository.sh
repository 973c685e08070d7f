#!/bin/sh
# test_triton_repository.sh: a Triton-layout repository (config.pbtxt, 1/model.onnx) loaded through the
# load API in explicit mode: config.pbtxt honoured, every field inferd cannot honour refused naming it,
# unknown model.json members refused, the config override with Triton's quoted integers (the checks live
# in triton_repository.py).
. "${top_srcdir:?run through make check}/tests/helpers/test_triton_lib.sh"

"$PY" -c 'import numpy, onnx, onnxruntime' 2>/dev/null || { echo "SKIP: $PY lacks numpy, onnx or onnxruntime"; exit 77; }
"$PY" "$top_srcdir/tests/helpers/triton_repository.py" setup "$tmp/repo" || fail "setup"
start_daemon --model_repository="$tmp/repo" --model_control_mode=explicit
"$PY" "$top_srcdir/tests/helpers/triton_repository.py" check "http://127.0.0.1:$port" "$tmp/repo" ||
	fail "triton_repository.py"
stop_daemon
echo "PASS: test_triton_repository"
