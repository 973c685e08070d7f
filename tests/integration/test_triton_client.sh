#!/bin/sh
# test_triton_client.sh: Triton's own clients against inferd, unchanged: tritonclient[http] from
# PyPI (metadata, infer with JSON and binary data, gzip, system shared memory), and perf_analyzer
# with and without --shared-memory=system when it is installed, and CUDA shared memory on a GPU
# run.  Skips without tritonclient.
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

# perf_analyzer: PyPI's wheels need glibc 2.38; where it runs, a short bounded run must have no errors.
if command -v perf_analyzer >/dev/null 2>&1; then
	for mode in none system; do
		timeout 120 perf_analyzer -m fashion-mlp -u "127.0.0.1:$port" -i http --shared-memory=$mode \
			--measurement-interval=1000 --concurrency-range=1:2 --stability-percentage=100 >"$tmp/pa-$mode.log" 2>&1 ||
			{ cat "$tmp/pa-$mode.log"; fail "perf_analyzer --shared-memory=$mode"; }
		grep -qi "error" "$tmp/pa-$mode.log" && { cat "$tmp/pa-$mode.log"; fail "perf_analyzer reported errors"; }
		grep "Throughput" "$tmp/pa-$mode.log" | sed "s/^/perf_analyzer ($mode): /"
	done
else
	echo "perf_analyzer not installed: its part is not run"
fi
stop_daemon
echo "PASS: test_triton_client"
