#!/bin/sh
# test_shutdown_loads.sh: a SIGTERM that comes while models load is acted on at the next step of the
# load, not once every queued load is done.  During the start-up load, during a SIGHUP rescan (with
# a request in flight, which is still answered) and during an explicit load of several versions over
# HTTP, the daemon exits 0 with fewer of the N queued loads done than N, and logs that it abandoned
# the rest.  Each load is made slow by its warm-up (ten batches of 256 through the Fashion CNN);
# before the stop was checked between loads, all N loaded first.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

N=6
cnn="$top_srcdir/conf/models/fashion-cnn"

# make_slow DIR NAME [POLICY]: the Fashion CNN as model NAME in DIR, its warm-up ten batches of 256 (the
# batches' compute is what takes the time: a warm-up compiles only the batch sizes it runs).
make_slow() {
	mkdir -p "$1/$2" && cp "$cnn/model.onnx" "$1/$2/" || exit 99
	"$PY" - "$cnn/model.json" "$1/$2/model.json" "$2" <<'PYEOF' || exit 99
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = sys.argv[3]
m["warmup"] = [{"batch_sizes": [256] * 10, "data": "zeros"}]
m["version_policy"] = {"all": {}}
json.dump(m, open(sys.argv[2], "w"))
PYEOF
}

# How many of the slow loads the log shows done.
loaded() { grep -c "model 'slow[0-9]*' loaded (version\|model 'multi' loaded (version" "$tmp/daemon.log"; }
some_loaded() { [ "$(loaded)" -ge 1 ] && echo yes; }

# Wait (bounded, 120 s: the bound of a hung daemon, not the measure) for the daemon to exit 0.
await_exit() {
	i=0
	while kill -0 "$daemon_pid" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 1200 ] || fail "the daemon did not exit within 120 s of SIGTERM"
		sleep 0.1
	done
	wait "$daemon_pid"
	status=$?
	daemon_pid=
	[ "$status" -eq 0 ] || fail "the daemon exited with status $status"
}

# stop_while_loading WHAT: SIGTERM once the first of the N slow loads is done; the daemon must exit 0
# with loads left undone, saying so.
stop_while_loading() {
	wait_for some_loaded yes
	before=$(loaded)
	[ "$before" -lt $N ] || fail "$1: all $N loads were done before the SIGTERM (the loads are too fast for this test)"
	kill -TERM "$daemon_pid" || fail "$1: the daemon is gone"
	await_exit
	after=$(loaded)
	echo "$1: $before of $N loads done at the SIGTERM, $after at the exit"
	[ "$after" -lt $N ] || fail "$1: the daemon did all $N loads before acting on the SIGTERM"
	grep -q "the daemon is stopping" "$tmp/daemon.log" || fail "$1: no log line says the loads were abandoned"
}

# --- the start-up load (none mode: every model directory) ----------------------------------------
mkdir -p "$tmp/startup" || exit 99
for k in $(seq 1 $N); do make_slow "$tmp/startup" "slow$k"; done
"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$tmp/startup" --http_port=0 \
	--port-file="$tmp/port" --shm_socket="$sock" >>"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
stop_while_loading "start-up load"
grep -q "the start-up load abandons its remaining loads" "$tmp/daemon.log" || fail "start-up: no abandon line"
grep -q "never ready, shutting down" "$tmp/daemon.log" || fail "start-up: no line says it shuts down, never ready"
grep -q " ready$" "$tmp/daemon.log" && fail "start-up: the daemon said ready after the SIGTERM"
[ -e "$tmp/port" ] && fail "start-up: the port file was written"
echo "ok: a SIGTERM during the start-up load stopped it"

# --- a SIGHUP rescan, with a request in flight ------------------------------------------------------
# held-mlp waits 3 s for company before it runs a batch: its request is in flight during the stop.
: >"$tmp/daemon.log"
mkdir -p "$tmp/rescan" && cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/rescan/held-mlp" || exit 99
"$PY" - "$tmp/rescan/held-mlp/model.json" <<'PYEOF' || exit 99
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "held-mlp"
m["dynamic_batching"]["max_queue_delay_us"] = 3000000
m["dynamic_batching"]["default_timeout_us"] = 30000000
m["dynamic_batching"]["eager_dispatch"] = False
json.dump(m, open(sys.argv[1], "w"))
PYEOF
start_daemon --model_repository="$tmp/rescan"
for k in $(seq 1 $N); do make_slow "$tmp/rescan" "slow$k"; done
curl -s -o "$tmp/held.out" -w '%{http_code}\n' -d "@$top_srcdir/docs/examples/fashion-request.json" \
	"http://127.0.0.1:$port/v2/models/held-mlp/infer" >"$tmp/held.status" 2>&1 &
held=$!
kill -HUP "$daemon_pid"
stop_while_loading "SIGHUP rescan"
grep -q "the rescan abandons its remaining loads" "$tmp/daemon.log" || fail "rescan: no abandon line"
wait "$held"
case "$(cat "$tmp/held.status")" in
200) grep -q '"outputs"' "$tmp/held.out" || fail "the request in flight: 200 without outputs: $(cat "$tmp/held.out")" ;;
503) grep -q "shutting down" "$tmp/held.out" || fail "the request in flight: 503: $(cat "$tmp/held.out")" ;;
*) fail "the request in flight got $(cat "$tmp/held.status"): $(cat "$tmp/held.out")" ;;
esac
echo "ok: a SIGTERM during a SIGHUP rescan stopped it; the request in flight got $(cat "$tmp/held.status")"

# --- an explicit load of N versions over HTTP ---------------------------------------------------------
: >"$tmp/daemon.log"
mkdir -p "$tmp/explicit" || exit 99
make_slow "$tmp/explicit" multi
for k in $(seq 1 $N); do mkdir "$tmp/explicit/multi/$k" && cp "$cnn/model.onnx" "$tmp/explicit/multi/$k/" || exit 99; done
rm "$tmp/explicit/multi/model.onnx"
start_daemon --model_repository="$tmp/explicit" --model_control_mode=explicit
curl -s -o "$tmp/load.out" -w '%{http_code}\n' -X POST "http://127.0.0.1:$port/v2/repository/models/multi/load" \
	>"$tmp/load.status" 2>&1 &
load=$!
stop_while_loading "explicit load"
wait "$load"
grep -q "model 'multi': the daemon is stopping: [0-9]* more versions\{0,1\} not loaded\|model 'multi' version [0-9]* not loaded: abandoned" \
	"$tmp/daemon.log" || fail "explicit load: no line for the versions left out"
# The load's answer says why, unless the connection closed with the server first.
case "$(cat "$tmp/load.status")" in
400) grep -q "stopping" "$tmp/load.out" || fail "the load's answer: $(cat "$tmp/load.out")" ;;
000) ;;
*) fail "the load's answer: $(cat "$tmp/load.status") $(cat "$tmp/load.out")" ;;
esac
echo "ok: a SIGTERM during an explicit load stopped it (its answer: $(cat "$tmp/load.status"))"
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/daemon.log" && fail "sanitizer report"
echo "PASS"
