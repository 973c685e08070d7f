#!/bin/sh
# soak.sh: a long mixed run against a private CPU daemon (not part of make check):
# HTTP inference from several threads, shared-memory clients checked against
# references, shm clients SIGKILLed with requests in flight, and model reloads
# (POST /v2/repository/models/{m}/load every SOAK_RELOAD_EVERY seconds, default 5,
# in turn over SOAK_RELOAD_MODELS, default "fashion-mlp fashion-cnn": the model
# the clients use and an idle one), all at once for SECONDS (default 600).  A
# daemon that answers the first reload with 404 has no such endpoint: the run goes
# on without reloads and says so.  Every minute it prints the daemon's RSS and
# open descriptors, at the end their drift from the start; it fails when a
# well-behaved client or a reload saw an error, or when descriptors or mapped
# regions did not come back to their baseline.
#
# Usage: tests/soak.sh BUILD_DIR [SECONDS]     e.g. tests/soak.sh _b 600
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
top_srcdir=$src
top_builddir=$(cd "${1:?usage: soak.sh BUILD_DIR [SECONDS]}" && pwd)
SECONDS_TOTAL=${2:-600}
PYTHON3=${PYTHON3:-/usr/bin/python3}
export top_srcdir top_builddir PYTHON3
. "$src/tests/helpers/test_ipc_lib.sh"

rss() { awk '/^VmRSS/ { print $2 }' "/proc/$daemon_pid/status"; }
report() { echo "$(date +%T) t=${1}s rss=$(rss) KiB fds=$(daemon_fds) regions=$(daemon_regions)"; }

# Explicit model control, so the reloads are allowed; every model of conf/models loaded at start.
start_daemon --max_clients=256 --model_control_mode=explicit \
	--load_model="$(ls "$src/conf/models" | while read -r m; do [ -d "$src/conf/models/$m" ] && printf '%s,' "$m"; done | sed 's/,$//')"
end=$(( $(date +%s) + SECONDS_TOTAL ))

# References for the shm clients, over HTTP.
write_shm_references
base_fds=$(daemon_fds)
base_rss=$(rss)
report 0

# HTTP: 4 threads of inference until the end; any status but 200 is an error.
"$PY" - "$port" "$end" >"$tmp/http.log" 2>&1 <<'PYEOF' &
import json, sys, threading, time, urllib.request
port, end = int(sys.argv[1]), int(sys.argv[2])
body = json.dumps({"inputs": [{"name": "input", "shape": [4, 784], "datatype": "FP32",
                               "data": [0.5] * (4 * 784)}]}).encode()
count, errors = [0], []
def run():
    while time.time() < end:
        try:
            req = urllib.request.Request("http://127.0.0.1:%d/v2/models/fashion-mlp/infer" % port, data=body)
            with urllib.request.urlopen(req, timeout=60) as r:
                r.read()
            count[0] += 1
        except Exception as e:
            errors.append(repr(e))
ts = [threading.Thread(target=run) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print("http: %d requests, %d errors %s" % (count[0], len(errors), errors[:3]))
sys.exit(1 if errors else 0)
PYEOF
http_pid=$!

# shm: a checked client in rounds, and victims SIGKILLed mid-request.
(
	round=0
	while [ "$(date +%s)" -lt "$end" ]; do
		round=$((round + 1))
		"$top_builddir/tests/helpers/ipc_client" "$sock" load "$tmp/in.bin" "$tmp/ref.bin" 2000 8 $round \
			>>"$tmp/shm.log" 2>&1 || { echo "round $round failed" >>"$tmp/shm.err"; }
	done
) &
shm_pid=$!
(
	kills=0
	while [ "$(date +%s)" -lt "$end" ]; do
		"$top_builddir/tests/helpers/ipc_hostile" "$sock" hang 32 64 >/dev/null 2>&1 &
		v=$!
		sleep 0.3
		kill -KILL $v 2>/dev/null
		wait $v 2>/dev/null
		kills=$((kills + 1))
	done
	echo "victims killed: $kills" >"$tmp/kills.log"
) &
kill_pid=$!

# Reloads: in turn over the models, each answer must be 200 and the model ready after it.
"$PY" - "$port" "$end" "${SOAK_RELOAD_EVERY:-5}" ${SOAK_RELOAD_MODELS:-fashion-mlp fashion-cnn} \
	>"$tmp/reload.log" 2>&1 <<'PYEOF' &
import sys, time, urllib.error, urllib.request
port, end, every, models = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
base = "http://127.0.0.1:%d/v2" % port
def call(path, method):
    req = urllib.request.Request(base + path, data=b"" if method == "POST" else None, method=method)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
done, errors, n = 0, [], 0
while time.time() + every < end:
    m = models[n % len(models)]
    n += 1
    status, body = call("/repository/models/%s/load" % m, "POST")
    if status == 404 and done == 0 and not errors:
        print("reloads: skipped, POST /v2/repository/models/%s/load answered 404 (this daemon has no reload)" % m)
        sys.exit(0)
    if status != 200:
        errors.append("%s: load answered %d %s" % (m, status, body[:200]))
    else:
        ready, _ = call("/models/%s/ready" % m, "GET")
        if ready != 200:
            errors.append("%s: not ready (%d) after its reload" % (m, ready))
        else:
            done += 1
    time.sleep(every)
print("reloads: %d done, %d errors %s" % (done, len(errors), errors[:3]))
sys.exit(1 if errors else 0)
PYEOF
reload_pid=$!

t=0
while [ "$(date +%s)" -lt "$end" ]; do
	step=$((end - $(date +%s)))
	[ $step -le 60 ] || step=60
	sleep $step
	t=$((t + step))
	kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died"
	report $t
done
wait $http_pid; http_status=$?
wait $reload_pid; reload_status=$?
wait $shm_pid
wait $kill_pid
cat "$tmp/http.log" "$tmp/kills.log" "$tmp/reload.log"
echo "shm rounds: $(grep -c . "$tmp/shm.log" 2>/dev/null || echo 0) lines of output"
[ $http_status -eq 0 ] || fail "HTTP clients saw errors"
[ $reload_status -eq 0 ] || fail "reloads saw errors"
[ ! -s "$tmp/shm.err" ] || fail "shm clients saw errors: $(cat "$tmp/shm.err")"
wait_for daemon_regions 0
wait_for_at_most daemon_fds "$base_fds"
report end
echo "drift: rss $base_rss -> $(rss) KiB ($(( $(rss) - base_rss )) KiB), fds $base_fds -> $(daemon_fds)"
stop_daemon
echo "PASS: soak of $SECONDS_TOTAL s; descriptors back to $base_fds, no region left mapped"
