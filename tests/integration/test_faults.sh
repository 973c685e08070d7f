#!/bin/sh
# test_faults.sh: injected device failures (a build with --enable-fault-injection; skipped
# otherwise).  A failing copy or kernel launch fails only its batch's requests (500) and the
# daemon keeps serving; the daemon still exits 0 (under ASan: without a leak).
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

# A failing load is not checked here: since the engine allocates each model's batch arenas in
# batcher_create, a failing device allocation at start-up stops the whole daemon (reported in
# docs/SECURITY.md as a known gap), where it should refuse only that model.

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
