#!/bin/sh
# test_http.sh: a real inferd over HTTP: every KServe v2 endpoint and error status, hostile and
# oversized bodies, concurrency on 2 HTTP threads, SIGTERM with requests in flight.
#
# The checks live in http_client.py; to run them against a daemon you started yourself (under gdb,
# say) on a repository made by "http_client.py setup-repo DIR conf/models/fashion-mlp":
#   python3 tests/helpers/http_client.py endpoints --url http://127.0.0.1:PORT --example docs/examples/fashion-request.json
set -u

PY=${PYTHON3:-$(command -v python3)}
if [ ! -x "$PY" ]; then
	echo "SKIP: $PY is missing"
	exit 77
fi
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
client="$top_srcdir/tests/helpers/http_client.py"
example="$top_srcdir/docs/examples/fashion-request.json"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-http.XXXXXX") || exit 1
pids=""
cleanup() {
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.log; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
	done
	exit 1
}

# start_daemon NAME FLAGS...: start inferd, wait (at most 60 s) for its port; sets pid and url.
# strict_readiness = no: the repository's broken model fails to load on purpose, and the checks
# expect the server ready beside it (test_startup_http.sh checks strict readiness).
start_daemon() {
	name=$1
	shift
	"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$tmp/models" --http_port=0 \
	    --port-file="$tmp/$name.port" --shm_socket= --log_level=info --strict_readiness=no "$@" >"$tmp/$name.log" 2>&1 &
	pid=$!
	pids="$pids $pid"
	tries=0
	while [ ! -s "$tmp/$name.port" ]; do
		kill -0 "$pid" 2>/dev/null || fail "inferd ($name) exited at start-up"
		tries=$((tries + 1))
		[ "$tries" -le 600 ] || fail "inferd ($name) did not start within 60 s"
		sleep 0.1
	done
	url="http://127.0.0.1:$(cat "$tmp/$name.port")"
}

# stop_daemon NAME PID [signalled]: SIGTERM (unless the test already sent it: one is what
# systemd sends), wait at most 60 s, require exit status 0.
stop_daemon() {
	[ $# -ge 3 ] || kill -TERM "$2" 2>/dev/null
	tries=0
	while kill -0 "$2" 2>/dev/null; do
		tries=$((tries + 1))
		[ "$tries" -le 600 ] || fail "inferd ($1) still running 60 s after SIGTERM"
		sleep 0.1
	done
	wait "$2"
	status=$?
	[ "$status" -eq 0 ] || fail "inferd ($1) exited with status $status"
}

"$PY" "$client" setup-repo "$tmp/models" "$top_srcdir/conf/models/fashion-mlp" || fail "setup-repo"

# The main daemon: 2 HTTP threads, so that 64 concurrent requests only work if waiting holds none.
start_daemon main --http_threads=2
main_pid=$pid
main_url=$url
"$PY" "$client" endpoints --url "$main_url" --example "$example" || fail "endpoints"
kill -0 "$main_pid" 2>/dev/null || fail "inferd died during the endpoint checks"
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/main.log" && fail "sanitizer report"

# A second daemon with a small body limit: 413 before buffering, and for chunked bodies.
start_daemon small --max_body_bytes=4096
"$PY" "$client" small-body --url "$url" --example "$example" || fail "small-body"
stop_daemon small "$pid"

# SIGTERM with requests waiting in fashion-slow's queue: all answered, then a clean exit.
"$PY" "$client" shutdown --url "$main_url" --pid "$main_pid" --example "$example" || fail "shutdown"
stop_daemon main "$main_pid" signalled
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/main.log" "$tmp/small.log" && fail "sanitizer report"
echo "PASS: test_http"
exit 0
