#!/bin/sh
# test_triton_client.sh: Triton's own clients against inferd, unchanged: tritonclient[http] from
# PyPI (metadata, infer with JSON and binary data, gzip, system shared memory); perf_analyzer has its
# own test (test_perf_analyzer.sh), and CUDA shared memory from PyTorch is in test_http_extras.sh.  Skips without tritonclient.
. "${top_srcdir:?run through make check}/tests/helpers/test_triton_lib.sh"

"$PY" -c 'import numpy, tritonclient.http, tritonclient.utils.shared_memory' 2>/dev/null || {
	echo "SKIP: tritonclient[http] is not importable by $PY (pip install 'tritonclient[http]')"
	exit 77
}
start_daemon
"$PY" "$client" tritonclient --port "$port" --ref "$ref" --shm-infer || fail "tritonclient"


stop_daemon
echo "PASS: test_triton_client"
