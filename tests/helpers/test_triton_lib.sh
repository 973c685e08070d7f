# test_triton_lib.sh: sourced by test_http_extras.sh and test_triton_client.sh: a private CPU
# inferd over HTTP only, and helpers.  INFERD_TEST_KEEP=1 keeps the temporary directory.

set -u
PY=${PYTHON3:-}
[ -n "$PY" ] && [ -x "$PY" ] || { echo "SKIP: no python3 (configure found none)"; exit 77; }
: "${top_srcdir:?run through make check}" "${top_builddir:?run through make check}"
client="$top_srcdir/tests/helpers/triton_client.py"
ref="$top_srcdir/tests/data/fashion_ref.json"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-triton.XXXXXX") || exit 99
daemon_pid=
port=

# Stop the daemon (if still running) and remove the temporary directory.
cleanup() {
	if [ -n "$daemon_pid" ]; then
		kill -KILL "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	[ -n "${INFERD_TEST_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Report a failure with the daemon's last log lines and stop.
fail() {
	echo "FAIL: $*"
	[ -f "$tmp/daemon.log" ] && { echo "--- daemon log (last 30 lines) ---"; tail -n 30 "$tmp/daemon.log"; }
	exit 1
}

# Start inferd with any extra flags; wait (at most 60 s) for its port.
start_daemon() {
	rm -f "$tmp/port"
	"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$top_srcdir/conf/models" \
		--http_port=0 --port-file="$tmp/port" --shm_socket= "$@" >>"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	i=0
	until [ -s "$tmp/port" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "the daemon did not come up within 60 s"
		kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon exited at start"
		sleep 0.1
	done
	port=$(cat "$tmp/port")
}

# SIGTERM the daemon and require a clean exit (under ASan that includes no leaks).
stop_daemon() {
	kill -TERM "$daemon_pid" || fail "the daemon is gone"
	wait "$daemon_pid"
	status=$?
	daemon_pid=
	[ "$status" -eq 0 ] || fail "the daemon exited with status $status"
	grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/daemon.log" && fail "sanitizer report"
	return 0
}
