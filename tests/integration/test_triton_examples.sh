#!/bin/sh
# test_triton_examples.sh: Triton's Python HTTP client examples, unchanged, against a CPU inferd serving
# the models they expect as ONNX in a Triton-layout repository (config.pbtxt).  The examples are
# Triton's, not inferd's: set TRITON_CLIENT_EXAMPLES to src/python/examples of a checkout of
# github.com/triton-inference-server/client.  Skips without it or without tritonclient[http].
# The daemon takes port 8000 when it is free, for memory_growth_test.py, which has no URL option.
# image_client.py runs where $PY also has tritonclient[grpc], attrdict and PIL (its imports).
. "${top_srcdir:?run through make check}/tests/helpers/test_triton_lib.sh"

ex=${TRITON_CLIENT_EXAMPLES:-}
[ -n "$ex" ] && [ -f "$ex/simple_http_infer_client.py" ] || {
	echo "SKIP: set TRITON_CLIENT_EXAMPLES to triton-inference-server/client's src/python/examples"
	exit 77
}
"$PY" -c 'import numpy, onnx, tritonclient.http, tritonclient.utils.shared_memory' 2>/dev/null || {
	echo "SKIP: $PY lacks numpy, onnx or tritonclient[http]"
	exit 77
}
"$PY" "$top_srcdir/tests/helpers/triton_examples.py" setup "$tmp/repo" || fail "setup"
on8000=
"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 8000)); s.close()' 2>/dev/null && on8000=1
if [ -n "$on8000" ]; then
	start_daemon --model_repository="$tmp/repo" --model_control_mode=explicit \
		--load_model=simple,simple_string,simple_identity,custom_identity_int32,densenet_onnx --http_port=8000 --listen_address=127.0.0.1
else
	start_daemon --model_repository="$tmp/repo" --model_control_mode=explicit \
		--load_model=simple,simple_string,simple_identity,custom_identity_int32,densenet_onnx
fi
"$PY" "$top_srcdir/tests/helpers/triton_examples.py" run "$ex" "127.0.0.1:$port" "$tmp/repo" ${on8000:+--port8000} ||
	fail "an example inferd supports failed"
stop_daemon
echo "PASS: test_triton_examples"
