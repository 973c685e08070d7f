#!/bin/sh
# test_shape_fuzz.sh: output shapes exact per request, never another request's bytes.  A private daemon
# serves (1) the generated graphs of tests/helpers/shape_fuzz.py (variable dims through strided conv/pool,
# Resize, Slice clamping, Reshape 0/-1, Expand, Range, ConstantOfShape, shape arithmetic), each checked at
# random shapes over HTTP JSON, binary and shm against onnxruntime, with its metadata; (2) the exported
# encoders of tests/helpers/shape_encoder.py: a Conv1d audio encoder ([N, 80, T] -> [N, ceil(T/2), 128])
# at several T on the three transports, with request A (3x80x47) then B (1x80x64), and an encoder with a
# 64-row position table that must load at that bound and refuse longer requests naming it.
# SHAPE_FUZZ_SEED picks other graphs and shapes (the seed is printed).  Skips (77) without numpy, onnx
# and onnxruntime; without torch the encoders are skipped and the generated graphs still run.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

"$PY" -c 'import numpy, onnx, onnxruntime' 2>/dev/null ||
	{ echo "SKIP: $PY cannot import numpy, onnx and onnxruntime"; exit 77; }
have_torch=yes
"$PY" -c 'import torch' 2>/dev/null || have_torch=no

fuzz="$top_srcdir/tests/helpers/shape_fuzz.py"
enc="$top_srcdir/tests/helpers/shape_encoder.py"
mkdir "$tmp/models" || fail "mkdir"
"$PY" "$fuzz" make "$tmp/models" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; fail "shape_fuzz.py make"; }
cat "$tmp/make.log"
if [ "$have_torch" = yes ]; then
	"$PY" "$enc" make "$tmp/models" >"$tmp/export.log" 2>&1 ||
		{ tail -n 30 "$tmp/export.log"; fail "shape_encoder.py make"; }
else
	echo "note: $PY cannot import torch: the exported encoders are skipped"
fi

# The shm transport through the Python client and this build's libinferd; under the sanitizers the
# library needs their runtimes loaded first (Python's own leaks are not ours).
lib="$top_builddir/client/lib/.libs/libinferd.so.0"
preload=""
shm_sock="$sock"
if [ ! -f "$lib" ]; then
	echo "note: no shared libinferd in this build ($lib): shared memory is not checked"
	shm_sock=""
elif grep -q '^SANITIZER_FLAGS = .*fsanitize=address' "$top_builddir/Makefile"; then
	for rt in libasan.so libubsan.so; do
		f=$(${CC:-cc} -print-file-name=$rt)
		[ -f "$f" ] || { echo "SKIP: sanitizer build, and $rt is not found"; exit 77; }
		preload="$preload $f"
	done
fi

start_daemon --model_repository="$tmp/models"
if grep -q "ONNX not supported\|model.onnx.*not supported" "$tmp/daemon.log"; then
	echo "SKIP: this daemon serves no ONNX models"
	exit 77
fi
url="http://127.0.0.1:$port"

# Run a helper's check with the client's environment; $1 names it in the summary.
run_check() {
	what=$1
	shift
	env PYTHONPATH="$top_srcdir/client/python" PYTHONDONTWRITEBYTECODE=1 INFERD_LIB="$lib" \
	    LD_PRELOAD="${preload# }" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$PY" "$@" ||
		failed="$failed $what"
}

failed=
run_check shape_fuzz "$fuzz" check "$url" "$tmp/models" ${shm_sock:+"$shm_sock"}
[ "$have_torch" = yes ] && run_check shape_encoder "$enc" check "$url" "$tmp/models" ${shm_sock:+"$shm_sock"}
kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died during the checks"
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/daemon.log" && fail "sanitizer report in the daemon"
[ -z "$failed" ] || fail "answers differ from onnxruntime's (or wrong refusals) in:$failed"
[ -z "$shm_sock" ] || wait_for daemon_regions 0
stop_daemon
echo "PASS: test_shape_fuzz"
