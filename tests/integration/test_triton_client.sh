#!/bin/sh
# test_triton_client.sh: Triton's own clients against inferd, unchanged: tritonclient[http] from
# PyPI (metadata, infer with JSON and binary data, gzip, system shared memory), and CUDA shared
# memory on a GPU run (perf_analyzer has its own test, test_perf_analyzer.sh).  Skips without tritonclient.
. "${top_srcdir:?run through make check}/tests/helpers/test_triton_lib.sh"

"$PY" -c 'import numpy, tritonclient.http, tritonclient.utils.shared_memory' 2>/dev/null || {
	echo "SKIP: tritonclient[http] is not importable by $PY (pip install 'tritonclient[http]')"
	exit 77
}
start_daemon
"$PY" "$client" tritonclient --port "$port" --ref "$ref" --shm-infer || fail "tritonclient"

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
echo "PASS: test_triton_client"
