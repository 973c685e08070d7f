# test_ipc_lib.sh: sourced by the test_ipc_*.sh tests: a private inferd with an shm socket, and helpers.
# Set INFERD_TEST_KEEP=1 to keep the temporary directory for a look afterwards.

set -u
PY=${PYTHON3:-}
[ -n "$PY" ] && [ -x "$PY" ] || { echo "SKIP: no python3 (configure found none)"; exit 77; }
: "${top_srcdir:?run through make check}" "${top_builddir:?run through make check}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-ipc.XXXXXX") || exit 99
daemon_pid=
sock="$tmp/inferd.sock"
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
	if [ -f "$tmp/daemon.log" ]; then
		echo "--- daemon log (last 30 lines) ---"
		tail -n 30 "$tmp/daemon.log"
	fi
	exit 1
}

# Start inferd on the CPU with any extra flags; wait (bounded) until both doors answer.
# INFERD_TEST_COPY_MODE (auto, dma, mapped) sets its copy_mode (test_ipc_copy_modes.sh runs the tests in each);
# INFERD_TEST_INLINE (yes, no) its inline_dispatch.
start_daemon() {
	rm -f "$tmp/port"
	"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$top_srcdir/conf/models" \
		--http_port=0 --port-file="$tmp/port" --shm_socket="$sock" \
		${INFERD_TEST_COPY_MODE:+--copy_mode="$INFERD_TEST_COPY_MODE"} \
		${INFERD_TEST_INLINE:+--inline_dispatch="$INFERD_TEST_INLINE"} "$@" \
		>>"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	await_daemon daemon_answers
	# The readiness probe (inferctl health over the socket) is a client itself: wait until the daemon
	# has let it go, so a test's first look at regions and descriptors sees none of it (on an H200
	# under make -j16 check the probe's region was still mapped when test_ipc_kill.sh looked).
	wait_for "metric inferd_shm_clients" 0
}

# 0 when the daemon has written its port file and answers on the shm socket.
daemon_answers() {
	[ -s "$tmp/port" ] && "$top_builddir/client/tools/inferctl" --socket="$sock" health >/dev/null 2>&1
}

# Wait (bounded, 120 s) until the command "$@" succeeds while the daemon runs; then read its port.
# The bound is wide because a GPU daemon builds its cuDNN plans before it answers: the Fashion CNN's
# took 27 s with 16 test daemons starting at once on an H200 (make -j16 check), against 30 s allowed.
await_daemon() {
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -le 1200 ] || fail "the daemon did not come up within 120 s"
		kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon exited at start"
		sleep 0.1
	done
	port=$(cat "$tmp/port")
}

# Start the daemon on $tmp/models with model held-mlp's start-up load held (INFERD_FAULT_HOLD_LOAD) until
# $tmp/release exists; wait until it is held and read the HTTP port from the log.  A build without
# --enable-fault-injection turns ready instead: the test is skipped (exit 77).
start_held() {
	: >"$tmp/daemon.log"
	rm -f "$tmp/release" "$tmp/port"
	INFERD_FAULT_HOLD_LOAD="held-mlp:$tmp/release" "$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" \
		--model_repository="$tmp/models" --http_port=0 --port-file="$tmp/port" --shm_socket="$sock" \
		>>"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	held_or_ready() { grep -q "holding the load of model 'held-mlp'\| ready$" "$tmp/daemon.log" && echo yes; }
	wait_for held_or_ready yes
	if ! grep -q "holding the load of model 'held-mlp'" "$tmp/daemon.log"; then
		stop_daemon
		echo "SKIP: inferd built without --enable-fault-injection"
		exit 77
	fi
	port=$(sed -n 's/.*http: listening on port \([0-9]*\) .*/\1/p' "$tmp/daemon.log")
	[ -n "$port" ] || fail "no 'http: listening on port' line before the loads finished"
}

# SIGTERM the daemon and require a clean exit (under ASan that includes no leaks).
stop_daemon() {
	kill -TERM "$daemon_pid" || fail "the daemon is gone"
	wait "$daemon_pid"
	status=$?
	daemon_pid=
	[ "$status" -eq 0 ] || fail "the daemon exited with status $status"
}

# Number of open descriptors of the daemon.
daemon_fds() {
	ls "/proc/$daemon_pid/fd" | wc -l
}

# Number of client regions the daemon has mapped.
daemon_regions() {
	grep -c 'memfd:inferd-region' "/proc/$daemon_pid/maps"
}

# Wait (bounded, 10 s) until "$1" prints a number no larger than "$2".
# Descriptors are compared this way: the CUDA runtime opens and closes some of its own.
wait_for_at_most() {
	i=0
	while [ "$(eval "$1")" -gt "$2" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "waited 10 s for '$1' to be at most $2 (it is $(eval "$1"))"
		sleep 0.1
	done
}

# Wait (bounded, 60 s) until "$1" prints "$2".  Wide for the same reason as await_daemon's: a (re)load
# on a GPU builds the version's plans and graphs first (fashion-mlp with two instances loaded in
# 2.7-5.4 s under make -j8 check on an H200; under -j16 a reload outlasted the 10 s allowed before).
wait_for() {
	i=0
	while [ "$(eval "$1")" != "$2" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "waited 60 s for '$1' to be $2 (it is $(eval "$1"))"
		sleep 0.1
	done
}

# Value of an unlabelled metric from GET /metrics.
metric() {
	"$PY" - "$port" "$1" <<'PYEOF'
import sys, urllib.request
port, name = sys.argv[1], sys.argv[2]
for line in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10).read().decode().splitlines():
    if line.split(" ")[0] == name:
        print(line.split(" ")[1])
        break
else:
    print("missing")
PYEOF
}

# 64 distinct fashion-mlp rows from seed $1 (an LCG) and their answers from model $2 over HTTP:
# $tmp/in.bin and $tmp/body.json (the rows, raw FP32 and as a KServe request), $tmp/ref.bin and
# $tmp/ref.json (the 640 logits, raw FP32 and as a JSON list).
write_row_references() {
	"$PY" - "$port" "$tmp" "$1" "$2" <<'PYEOF' || fail "references over HTTP"
import json, struct, sys, urllib.request
port, tmp, seed, model = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = []
for r in range(64):
    row = []
    for i in range(784):
        seed = (seed * 1103515245 + 12345) % 2**31
        row.append(struct.unpack("<f", struct.pack("<f", (seed >> 7) / 2**24))[0])
    rows.append(row)
open(tmp + "/in.bin", "wb").write(b"".join(struct.pack("<784f", *r) for r in rows))
body = json.dumps({"inputs": [{"name": "input", "shape": [64, 784], "datatype": "FP32",
                               "data": [v for r in rows for v in r]}]})
open(tmp + "/body.json", "w").write(body)
req = urllib.request.Request("http://127.0.0.1:%s/v2/models/%s/infer" % (port, model), data=body.encode(),
                             headers={"Content-Type": "application/json"})
data = json.load(urllib.request.urlopen(req, timeout=60))["outputs"][0]["data"]
assert len(data) == 640, len(data)
open(tmp + "/ref.bin", "wb").write(struct.pack("<640f", *data))
open(tmp + "/ref.json", "w").write(json.dumps(data))
PYEOF
}

# Write $tmp/in.bin (8 rows of fashion-mlp input) and $tmp/ref.bin (their 80 logits, from
# the daemon over HTTP), the input and references of tests/helpers/ipc_client's load mode.
write_shm_references() {
	"$PY" - "$port" "$tmp" <<'PYEOF' || fail "references over HTTP"
import json, struct, sys, urllib.request
port, tmp = sys.argv[1], sys.argv[2]
rows = [[((r * 784 + i) * 2654435761 % 1000) / 1000.0 for i in range(784)] for r in range(8)]
rows = [[struct.unpack("<f", struct.pack("<f", v))[0] for v in r] for r in rows]
open(tmp + "/in.bin", "wb").write(b"".join(struct.pack("<784f", *r) for r in rows))
body = {"inputs": [{"name": "input", "shape": [8, 784], "datatype": "FP32", "data": [v for r in rows for v in r]}]}
req = urllib.request.Request("http://127.0.0.1:%s/v2/models/fashion-mlp/infer" % port, data=json.dumps(body).encode())
data = json.load(urllib.request.urlopen(req, timeout=60))["outputs"][0]["data"]
open(tmp + "/ref.bin", "wb").write(struct.pack("<80f", *data))
PYEOF
}
