#!/bin/sh
# test_multi_tensor.sh: a model of two inputs (FP32 and INT64 with a variable dim) and three outputs,
# served from ONNX, through HTTP JSON, the binary extension and shared memory (inferctl): the same
# bits everywhere and equal to numpy; shapes batch apart; every refusal a 400 naming the problem.
# Skips (77) when python3 lacks onnx or numpy, or when the daemon serves no ONNX models.
set -u

PY=${PYTHON3:-/usr/bin/python3}
[ -x "$PY" ] || { echo "SKIP: no python3"; exit 77; }
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-multi.XXXXXX") || exit 99
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*"
	[ -f "$tmp/daemon.log" ] && tail -n 30 "$tmp/daemon.log"
	exit 1
}

"$PY" "$top_srcdir/tests/helpers/make_multi_onnx.py" "$tmp/models"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "make_multi_onnx.py"
"$PY" -c "import numpy" 2>/dev/null || { echo "SKIP: python3 cannot import numpy"; exit 77; }

# The model has a variable dim: a plan (on CUDA also a graph) per exact shape on first use.
"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$tmp/models" --http_port=0 \
    --port-file="$tmp/port" --shm_socket="$tmp/sock" --log_level=info >"$tmp/daemon.log" 2>&1 &
pid=$!
i=0
until [ -s "$tmp/port" ] && [ -S "$tmp/sock" ]; do
	i=$((i + 1))
	[ $i -le 600 ] || fail "the daemon did not come up within 60 s"
	kill -0 "$pid" 2>/dev/null || fail "the daemon exited at start"
	sleep 0.1
done
if grep -q "ONNX not supported\|model.onnx.*not supported" "$tmp/daemon.log"; then
	echo "SKIP: this daemon serves no ONNX models"
	exit 77
fi
grep -q "model 'multi' loaded" "$tmp/daemon.log" || fail "model 'multi' did not load"
url="http://127.0.0.1:$(cat "$tmp/port")"
"$PY" "$top_srcdir/tests/helpers/multi_client.py" "$url" "$top_builddir/client/tools/inferctl" "$tmp/sock" "$tmp" ||
    fail "multi_client.py"
kill -TERM "$pid"
wait "$pid"
status=$?
pid=
[ "$status" -eq 0 ] || fail "the daemon exited with status $status"
echo "PASS: multi-tensor model over HTTP JSON, binary and shm"
