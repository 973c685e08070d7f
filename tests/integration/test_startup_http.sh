#!/bin/sh
# test_startup_http.sh: HTTP is up before the start-up loads.  With strict_readiness (the default)
# a start-up where a model failed to load never turns ready, while live answers 200 and the good
# model serves; with strict_readiness = no it is ready.  In a build with --enable-fault-injection
# (skipped otherwise) a start-up load held by INFERD_FAULT_HOLD_LOAD shows live 200, ready 503 and
# the held model and the one queued behind it LOADING in the repository index, a log line and a
# progress line for its load,
# and turns ready (the model READY and serving) once released; a SIGTERM while it is held ends
# the daemon with status 0, never ready.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

status_of() {	# status_of PATH: the HTTP status of GET PATH
	curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port$1"
}

state_of() {	# state_of MODEL: its state in the repository index (or "absent")
	curl -s -X POST "http://127.0.0.1:$port/v2/repository/index" | "$PY" -c '
import json, sys
rows = [r for r in json.load(sys.stdin) if r["name"] == sys.argv[1]]
print(rows[0]["state"] if rows else "absent")' "$1"
}

infer() {	# infer MODEL: the HTTP status of one inference
	curl -s -o /dev/null -w '%{http_code}' -d "@$top_srcdir/docs/examples/fashion-request.json" \
		"http://127.0.0.1:$port/v2/models/$1/infer"
}

mkdir -p "$tmp/models/empty" || exit 99
for m in a-mlp held-mlp z-mlp; do
	cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/$m" || exit 99
	sed -i "s/\"fashion-mlp\"/\"$m\"/" "$tmp/models/$m/model.json" || exit 99
done

# --- strict_readiness: a model directory that fails to load -----------------------------------
start_daemon --model_repository="$tmp/models"
[ "$(status_of /v2/health/live)" = 200 ] || fail "live is not 200 with a failed model"
[ "$(status_of /v2/health/ready)" = 503 ] || fail "ready is not 503 with a failed model (strict_readiness = yes)"
curl -s "http://127.0.0.1:$port/v2/health/ready" | grep -q strict_readiness ||
	fail "the 503 does not name strict_readiness"
grep -q "ready answers 503: a start-up model failed to load and strict_readiness is yes" "$tmp/daemon.log" ||
	fail "the log does not say why the daemon is not ready"
[ "$(infer a-mlp)" = 200 ] || fail "a-mlp does not serve beside the failed model"
stop_daemon
start_daemon --model_repository="$tmp/models" --strict_readiness=no
[ "$(status_of /v2/health/ready)" = 200 ] || fail "ready is not 200 with strict_readiness = no"
stop_daemon
rmdir "$tmp/models/empty" || exit 99
echo "ok: strict_readiness"

# --- a start-up load held on the fault hook (start_held: test_ipc_lib.sh) --------------------------
start_held
[ "$(status_of /v2/health/live)" = 200 ] || fail "live is not 200 while a start-up load is held"
[ "$(status_of /v2/health/ready)" = 503 ] || fail "ready is not 503 while a start-up load is held"
[ "$(state_of held-mlp)" = LOADING ] || fail "held-mlp is $(state_of held-mlp) in the index, not LOADING"
[ "$(status_of /v2/models/held-mlp/ready)" = 200 ] && fail "held-mlp says ready while it loads"
[ -e "$tmp/port" ] && fail "the port file was written before the start-up loads finished"
grep -q "start-up load 2 of 3: model 'held-mlp'" "$tmp/daemon.log" || fail "no progress line for held-mlp"
[ "$(state_of z-mlp)" = LOADING ] || fail "z-mlp, loaded after held-mlp, is $(state_of z-mlp) in the index, not LOADING"
grep -q "model 'held-mlp' version 1: loading from" "$tmp/daemon.log" || fail "no log line as held-mlp's load starts"
touch "$tmp/release" || exit 99
wait_for "status_of /v2/health/ready" 200
[ "$(state_of held-mlp)" = READY ] || fail "held-mlp is $(state_of held-mlp) after the release"
[ "$(infer held-mlp)" = 200 ] || fail "held-mlp does not serve after the release"
[ "$(state_of z-mlp)" = READY ] || fail "z-mlp is $(state_of z-mlp) after the release"
[ -s "$tmp/port" ] || fail "no port file once ready"
stop_daemon
echo "ok: live 200, ready 503 and the model LOADING while held; ready 200 after the release"

start_held
kill -TERM "$daemon_pid" || fail "the daemon is gone"
wait "$daemon_pid"
status=$?
daemon_pid=
[ "$status" -eq 0 ] || fail "a SIGTERM during a held start-up load: exit status $status"
grep -q " ready$" "$tmp/daemon.log" && fail "the daemon said ready after a SIGTERM during the start-up load"
grep -q "never ready, shutting down" "$tmp/daemon.log" || fail "no log line says the start-up was cut short"
echo "ok: a SIGTERM during a held start-up load ends the daemon"
exit 0
