#!/bin/sh
# test_bytes.sh: BYTES (string) tensors end to end against a CPU inferd through Triton's client:
# simple_string (Triton's example model, built as ONNX) over JSON, the binary extension and system
# shared memory, requests in flight together, Cast between strings and numbers and the ops that move
# strings against onnxruntime, malformed BYTES refused with 400s naming the input, and a model that
# hands a string to an op that cannot take one refused at load naming the node and the op; inferd's own
# Python client refuses BYTES models by name, and libinferd's door refuses them saying why.
. "${top_srcdir:?run through make check}/tests/helpers/test_triton_lib.sh"

"$PY" -c 'import numpy, onnx, onnxruntime, tritonclient.http, tritonclient.utils.shared_memory' 2>/dev/null || {
	echo "SKIP: $PY lacks numpy, onnx, onnxruntime or tritonclient[http]"
	exit 77
}
check="$top_srcdir/tests/helpers/bytes_check.py"
"$PY" "$check" setup "$tmp/repo" || fail "setup"
start_daemon --model_repository="$tmp/repo" --model_control_mode=explicit \
	--load_model=simple_string,simple_identity,string_warm,string_casts,string_moves,string_const \
	--shm_socket="$tmp/sock"
"$PY" "$check" check "127.0.0.1:$port" "$tmp/repo" "$top_srcdir/client/python" || fail "BYTES checks"
# libinferd: the shared-memory door does not offer a BYTES model, and says why.
out=$("$top_builddir/client/tools/inferctl" --socket="$tmp/sock" model simple_string 2>&1) &&
	fail "inferctl got simple_string over shared memory: $out"
case $out in
*"BYTES (string) tensors"*HTTP*) ;;
*) fail "the shared-memory refusal does not say why: $out" ;;
esac

stop_daemon
echo "PASS: test_bytes"
