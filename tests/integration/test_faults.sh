#!/bin/sh
# test_faults.sh: injected device failures (a build with --enable-fault-injection; skipped
# otherwise).  A failing copy or kernel launch fails only its batch's requests (500) and the
# daemon keeps serving; a failing device allocation in a model's batch contexts fails only that
# model's load (at start-up or over HTTP); the daemon still exits 0 (under ASan: without a leak).
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

infer() {	# infer MODEL: print the HTTP status of one inference
	"$PY" - "$port" "$1" <<'PYEOF'
import json, sys, urllib.error, urllib.request
body = json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32", "data": [0.5] * 784}]}).encode()
req = urllib.request.Request("http://127.0.0.1:%s/v2/models/%s/infer" % (sys.argv[1], sys.argv[2]), data=body)
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
PYEOF
}

# Two copies of fashion-mlp: a-mlp loads first (directory order), b-mlp second.
mkdir -p "$tmp/models" || exit 99
for m in a-mlp b-mlp; do
	cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/$m" || exit 99
	sed -i "s/\"fashion-mlp\"/\"$m\"/" "$tmp/models/$m/model.json" || exit 99
done

# Count the calls of each site during start-up, one request and shutdown.
INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models"
grep -q "fault injection: call 1000000000 of launch will fail" "$tmp/daemon.log" || {
	stop_daemon
	echo "SKIP: inferd built without --enable-fault-injection"
	exit 77
}
[ "$(infer a-mlp)" = 200 ] || fail "a-mlp without a fault"
stop_daemon
count() { sed -n "s/.*fault injection: $1 called \([0-9]*\) times.*/\1/p" "$tmp/daemon.log" | tail -n 1; }
allocs=$(count device_alloc); launches=$(count launch); copies=$(count copy)
echo "one run: $allocs device allocations, $launches launches, $copies copies"
[ "$allocs" -gt 1 ] && [ "$launches" -ge 1 ] && [ "$copies" -ge 2 ] || fail "the sites were not counted"

# A failing load refuses only that model.  Count the device allocations of b-mlp's load: a run
# that loads a-mlp only, and one that then loads b-mlp over HTTP (explicit mode).
post() {	# post PATH: print the body, then the HTTP status on a line
	curl -s -w '\n%{http_code}\n' -X POST "http://127.0.0.1:$port$1"
}
explicit="--model_control_mode=explicit --load_model=a-mlp"
: >"$tmp/daemon.log"
INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models" $explicit
stop_daemon
before=$(count device_alloc)
: >"$tmp/daemon.log"
INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models" $explicit
[ "$(post /v2/repository/models/b-mlp/load | tail -n 1)" = 200 ] || fail "loading b-mlp"
stop_daemon
per_load=$(( $(count device_alloc) - before ))
echo "b-mlp's load: $per_load device allocations (after $before)"
[ "$per_load" -ge 2 ] || fail "b-mlp's load counted $per_load device allocations"
# Its last allocation is a batch context of its batcher queue: fail that one.
: >"$tmp/daemon.log"
INFERD_FAULT=device_alloc:$((before + per_load)) start_daemon --model_repository="$tmp/models" $explicit
out=$(post /v2/repository/models/b-mlp/load)
[ "$(echo "$out" | tail -n 1)" = 400 ] && echo "$out" | grep -q "batch context.*injected" ||
	fail "a failing batch context allocation: $out"
[ "$(infer a-mlp)" = 200 ] || fail "a-mlp stopped serving after b-mlp's load failed"
post /v2/repository/index | grep -q '"name":"b-mlp","version":"1","state":"UNAVAILABLE","reason":"[^"]*injected' ||
	fail "the index lacks b-mlp's failure: $(post /v2/repository/index)"
[ "$(post /v2/repository/models/b-mlp/load | tail -n 1)" = 200 ] || fail "b-mlp's second load"
[ "$(infer b-mlp)" = 200 ] && [ "$(infer a-mlp)" = 200 ] || fail "after the second load"
stop_daemon
echo "ok: a failing batch context allocation failed only b-mlp's load; the daemon served on"
# The same at start-up: both models load at start, b-mlp's last allocation fails, a-mlp serves.
: >"$tmp/daemon.log"
INFERD_FAULT=device_alloc:$((before + per_load)) start_daemon --model_repository="$tmp/models"
grep -q "model 'b-mlp' version 1 not loaded: .*batch context.*injected" "$tmp/daemon.log" ||
	fail "b-mlp's start-up load did not fail in its batch context"
[ "$(infer a-mlp)" = 200 ] || fail "a-mlp after b-mlp failed at start-up"
[ "$(infer b-mlp)" = 503 ] || fail "b-mlp answered though it failed to load"
stop_daemon
echo "ok: the same failure at start-up refused only b-mlp"

# A failing batch, by copy and by launch: the first request after start-up gets 500, the next 200.
for site in copy launch; do
	: >"$tmp/daemon.log"
	INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models"
	stop_daemon
	n=$(( $(count $site) + 1 ))
	# The run above made one request fewer: its counts are start-up and shutdown only.
	: >"$tmp/daemon.log"
	INFERD_FAULT=$site:$n start_daemon --model_repository="$tmp/models"
	first=$(infer b-mlp)
	second=$(infer b-mlp)
	other=$(infer a-mlp)
	[ "$first" = 500 ] || fail "$site fault: the failing batch's request got $first, not 500"
	[ "$second" = 200 ] && [ "$other" = 200 ] || fail "$site fault: after it, $second and $other, not 200"
	grep -q "injected" "$tmp/daemon.log" || fail "$site fault: no injected failure in the log"
	stop_daemon
	echo "ok: a failing $site failed only its batch (500), then 200"
done
echo "PASS"
