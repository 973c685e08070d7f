#!/bin/sh
# test_http_extras.sh: Triton's shared-memory endpoints over plain HTTP (register, status, bounds,
# owner and mode checks, unregister-all leaving other mappings alone), gzip/deflate both ways with a
# zip bomb refused, keep-alive and pipelined requests, and http_shared_memory off answering 403.
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
