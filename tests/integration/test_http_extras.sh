#!/bin/sh
# test_http_extras.sh: Triton's shared-memory endpoints over plain HTTP (register, status, bounds,
# owner and mode checks, unregister-all leaving other mappings alone), gzip/deflate both ways with a
# zip bomb refused, only inference answers compressed, keep-alive and pipelined requests, and
# http_shared_memory off answering 403.
. "${top_srcdir:?run through make check}/tests/helpers/test_triton_lib.sh"

start_daemon
"$PY" "$client" http --port "$port" --ref "$ref" --pid "$daemon_pid" || fail "HTTP extras"
# CUDA shared memory, on a GPU run (INFERD_TEST_DEVICE=cuda:N): a PyTorch tensor's IPC handle, with
# CUDA_SHM_PYTHON naming a python that has torch with CUDA (default: $PY).
case "${INFERD_TEST_DEVICE:-cpu}" in
cuda*)
	"${CUDA_SHM_PYTHON:-$PY}" "$top_srcdir/tests/helpers/cuda_shm_client.py" "http://127.0.0.1:$port" "$ref"
	rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "CUDA shared memory"
	;;
esac

# Only inference answers are compressed, as in Triton: every other body goes as it is whatever
# Accept-Encoding allows (tritonclient.http.aio reads them without decompressing).
base="http://127.0.0.1:$port"
for path in /v2 /v2/models /v2/models/fashion-mlp /v2/models/fashion-mlp/config /v2/models/fashion-mlp/stats \
	/v2/models/fashion-mlp/ready /v2/health/live /v2/health/ready /v2/systemsharedmemory/status /metrics \
	"POST /v2/repository/index"; do
	case "$path" in
	POST*) url="$base${path#POST }"; set -- -X POST -d '' ;;
	*) url="$base$path"; set -- ;;
	esac
	code=$(curl -s --raw -H 'Accept-Encoding: gzip, deflate' "$@" -D "$tmp/hdr" -o "$tmp/body" -w '%{http_code}' "$url")
	[ "$code" = 200 ] || fail "$path answered $code"
	! grep -qi '^content-encoding:' "$tmp/hdr" || fail "$path was sent $(grep -i '^content-encoding:' "$tmp/hdr")"
	first=$(head -c 1 "$tmp/body" | od -An -tx1 | tr -d ' ')
	[ "$first" != 1f ] && [ "$first" != 78 ] || fail "$path: the body starts with 0x$first (compressed)"
done
"$PY" -c 'import json; print(json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32", "data": [0.5] * 784}]}))' >"$tmp/infer.json"
code=$(curl -s --raw -H 'Accept-Encoding: gzip' -H 'Content-Type: application/json' --data-binary @"$tmp/infer.json" \
	-D "$tmp/hdr" -o "$tmp/body" -w '%{http_code}' "$base/v2/models/fashion-mlp/infer")
[ "$code" = 200 ] || fail "infer with Accept-Encoding: gzip answered $code"
grep -qi '^content-encoding: gzip' "$tmp/hdr" || fail "the inference answer is not gzip-encoded: $(cat "$tmp/hdr")"
[ "$(head -c 2 "$tmp/body" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "the inference answer does not start with gzip's magic"
gzip -dc <"$tmp/body" | grep -q '"outputs"' || fail "the gzip-encoded inference answer does not inflate to outputs"

stop_daemon

# Off: every shared-memory path is refused with 403, the rest still serves.
start_daemon --http_shared_memory=off
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "http://127.0.0.1:$port/v2/systemsharedmemory/status")
[ "$code" = 403 ] && grep -q "http_shared_memory" "$tmp/body" || fail "off: status answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2/health/live")
[ "$code" = 200 ] || fail "off: live answered $code"
stop_daemon

# auto on a non-loopback address is off; every address is 0.0.0.0 here, bound for a moment only.
start_daemon --listen_address=0.0.0.0
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2/cudasharedmemory/status")
[ "$code" = 403 ] || fail "auto on 0.0.0.0: status answered $code"
stop_daemon
echo "PASS: test_http_extras"
