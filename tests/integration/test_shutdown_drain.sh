#!/bin/sh
# test_shutdown_drain.sh: SIGTERM with 16 shm clients holding 64 submissions each
# (32 answered and unread, 32 more still in each ring) and 16 HTTP requests in flight: every one
# gets an answer or an explicit shutdown status before the daemon exits.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

CLIENTS=16
DEPTH=64	# per client: half answered before SIGTERM, half still in the ring
HTTP_REQUESTS=16

# fashion-mlp, and slow-mlp: the same model waiting 2 s for company (eager_dispatch off: even alone), so HTTP
# requests stay in flight.
mkdir -p "$tmp/models" || exit 99
cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/" || exit 99
cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/slow-mlp" || exit 99
"$PY" - "$tmp/models/slow-mlp/model.json" <<'PYEOF' || exit 99
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "slow-mlp"
m["dynamic_batching"]["max_queue_delay_us"] = 2000000
m["dynamic_batching"]["default_timeout_us"] = 20000000
m["dynamic_batching"]["eager_dispatch"] = False
json.dump(m, open(sys.argv[1], "w"))
PYEOF
start_daemon --model_repository="$tmp/models" --max_clients=64

pids=
i=0
while [ $i -lt $CLIENTS ]; do
	"$top_builddir/tests/helpers/ipc_hostile" "$sock" queue $((DEPTH / 2)) >"$tmp/queue.$i" 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
for f in $(seq 0 $((CLIENTS - 1))); do
	n=0
	until grep -q '^queued' "$tmp/queue.$f"; do
		n=$((n + 1))
		[ $n -le 300 ] || fail "client $f never queued: $(cat "$tmp/queue.$f")"
		sleep 0.1
	done
done
echo "ok: $CLIENTS clients queued $DEPTH submissions each"

# HTTP requests in flight on slow-mlp; the script waits for their answers.
"$PY" - "$port" $HTTP_REQUESTS >"$tmp/http.out" 2>&1 <<'PYEOF' &
import json, sys, threading, urllib.error, urllib.request
port, n = int(sys.argv[1]), int(sys.argv[2])
body = json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32",
                               "data": [0.5] * 784}]}).encode()
results = []
def one():
    req = urllib.request.Request("http://127.0.0.1:%d/v2/models/slow-mlp/infer" % port, data=body)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            results.append(r.status)
    except urllib.error.HTTPError as e:
        results.append(e.code)
    except Exception as e:
        results.append(repr(e))
ts = [threading.Thread(target=one) for _ in range(n)]
for t in ts: t.start()
print("sent", flush=True)
for t in ts: t.join()
print("answers:", " ".join(str(r) for r in sorted(results, key=str)))
sys.exit(0 if all(r in (200, 503) for r in results) and len(results) == n else 1)
PYEOF
http_pid=$!
n=0
until grep -q '^sent' "$tmp/http.out"; do
	n=$((n + 1)); [ $n -le 100 ] || fail "the HTTP clients did not start"; sleep 0.1
done
sleep 0.5

kill -TERM "$daemon_pid" || fail "the daemon is gone"
for p in $pids; do kill -USR1 "$p"; done
bad=0
i=0
for p in $pids; do
	wait "$p" || { echo "client $i: $(cat "$tmp/queue.$i")"; bad=1; }
	i=$((i + 1))
done
[ $bad -eq 0 ] || fail "shm submissions were lost at shutdown"
total=$(cat "$tmp"/queue.* | awk '/^completions/ { s += $2 } END { print s }')
[ "$total" -eq $((CLIENTS * DEPTH)) ] || fail "only $total of $((CLIENTS * DEPTH)) shm submissions completed"
echo "ok: all $total shm submissions completed: $(cat "$tmp"/queue.* | awk '/^completions/ { ok += $6; sd += $8 } END { print ok " ok, " sd " shutdown" }')"
wait $http_pid || fail "HTTP requests in flight were lost: $(cat "$tmp/http.out")"
echo "ok: HTTP in flight: $(tail -n 1 "$tmp/http.out")"
wait "$daemon_pid"
status=$?
daemon_pid=
[ "$status" -eq 0 ] || fail "the daemon exited with status $status"
echo "PASS"
