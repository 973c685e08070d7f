#!/bin/sh
# test_static_batch.sh: a model exported with a fixed batch (inputs [2, 3, 4, 4], no batch axis) is served at
# that shape; its load says so in the log with the re-export to make (a dynamic batch axis), and a request of
# another batch gets a 400 naming the input, its dim, the fixed size and that re-export (static_batch.py).
# Skips (77) when python3 lacks onnx or numpy.
set -u

PY=${PYTHON3:-/usr/bin/python3}
[ -x "$PY" ] || { echo "SKIP: no python3"; exit 77; }
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-static.XXXXXX") || exit 99
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

"$PY" "$top_srcdir/tests/helpers/static_batch.py" make "$tmp/models"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "static_batch.py make"
"$top_builddir/inferd" --device=cpu --model_repository="$tmp/models" --http_port=0 --port-file="$tmp/port" \
    --shm_socket= --log_level=info >"$tmp/daemon.log" 2>&1 &
pid=$!
i=0
until [ -s "$tmp/port" ] && grep -q "model 'fixed' loaded" "$tmp/daemon.log"; do
	i=$((i + 1))
	[ $i -le 600 ] || fail "the daemon did not load the model within 60 s"
	kill -0 "$pid" 2>/dev/null || fail "the daemon exited at start"
	sleep 0.1
done
grep -q "model 'fixed' has a fixed batch of 2 .*dynamic_axes={\"x\": {0: \"batch\"}}" "$tmp/daemon.log" ||
    fail "no log line saying the model has a fixed batch of 2 and how to re-export it"
"$PY" "$top_srcdir/tests/helpers/static_batch.py" check "http://127.0.0.1:$(cat "$tmp/port")" ||
    fail "static_batch.py check"
kill -TERM "$pid"
wait "$pid"
status=$?
pid=
[ "$status" -eq 0 ] || fail "the daemon exited with status $status"
echo "PASS: a fixed-batch model served at its batch, other batches refused naming the re-export"
