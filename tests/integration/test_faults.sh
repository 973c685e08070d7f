#!/bin/sh
# test_faults.sh: injected failures (a build with --enable-fault-injection; skipped otherwise).
# A failing copy or kernel launch fails only its batch's requests (500) and the daemon keeps
# serving; a failing device allocation in a model's batch contexts fails only that model's load
# (at start-up or over HTTP), or, built in the background, leaves that context out; a failing
# heap allocation (malloc:N) while a model loads refuses only that model, one during an HTTP
# request (its record and body buffer included) fails only that request with an error message,
# and one during an shm client's model query fails only that query with a message; the daemon
# still exits 0 (under ASan: without a leak).
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

# Every context is built before its model is ready (the GPU default builds all but the first in the
# background, which would make the order of allocations vary); the background builder has its own part below.
fg=--background_contexts=no
# Two copies of fashion-mlp: a-mlp loads first (directory order), b-mlp second.
mkdir -p "$tmp/models" || exit 99
for m in a-mlp b-mlp; do
	cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/$m" || exit 99
	sed -i "s/\"fashion-mlp\"/\"$m\"/" "$tmp/models/$m/model.json" || exit 99
done

# Count the calls of each site during start-up, one request and shutdown.
INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models" $fg
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
INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models" $fg $explicit
stop_daemon
before=$(count device_alloc)
: >"$tmp/daemon.log"
INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models" $fg $explicit
[ "$(post /v2/repository/models/b-mlp/load | tail -n 1)" = 200 ] || fail "loading b-mlp"
stop_daemon
per_load=$(( $(count device_alloc) - before ))
echo "b-mlp's load: $per_load device allocations (after $before)"
[ "$per_load" -ge 2 ] || fail "b-mlp's load counted $per_load device allocations"
# Its last allocation is a batch context of its batcher queue: fail that one.
: >"$tmp/daemon.log"
INFERD_FAULT=device_alloc:$((before + per_load)) start_daemon --model_repository="$tmp/models" $fg $explicit
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
INFERD_FAULT=device_alloc:$((before + per_load)) start_daemon --model_repository="$tmp/models" $fg
grep -q "model 'b-mlp' version 1 not loaded: .*batch context.*injected" "$tmp/daemon.log" ||
	fail "b-mlp's start-up load did not fail in its batch context"
[ "$(infer a-mlp)" = 200 ] || fail "a-mlp after b-mlp failed at start-up"
[ "$(infer b-mlp)" = 503 ] || fail "b-mlp answered though it failed to load"
stop_daemon
echo "ok: the same failure at start-up refused only b-mlp"

# Background contexts: b-mlp is ready on its first context, and a thread builds its second.  Counted
# the same way, b-mlp's last device allocation is then the builder's: the load succeeds, the log names
# the context left out, and both models serve on (b-mlp on one context).
fg="--background_contexts=yes --log_level=debug"
a_built() {	# wait until a-mlp's builder has ended, so that its allocations all come before b-mlp's
	wait_for "grep -c \"model 'a-mlp': 1 more batch contexts built in the background\" '$tmp/daemon.log'" 1
}
: >"$tmp/daemon.log"
INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models" $fg $explicit
a_built
stop_daemon
before=$(count device_alloc)
: >"$tmp/daemon.log"
INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models" $fg $explicit
a_built
[ "$(post /v2/repository/models/b-mlp/load | tail -n 1)" = 200 ] || fail "loading b-mlp (background contexts)"
wait_for "grep -c \"model 'b-mlp': 1 more batch contexts built in the background\" '$tmp/daemon.log'" 1
[ "$(infer b-mlp)" = 200 ] || fail "b-mlp with its contexts built in the background"
stop_daemon
per_load=$(( $(count device_alloc) - before ))
echo "b-mlp's load with background contexts: $per_load device allocations (after $before)"
: >"$tmp/daemon.log"
INFERD_FAULT=device_alloc:$((before + per_load)) start_daemon --model_repository="$tmp/models" $fg $explicit
a_built
[ "$(post /v2/repository/models/b-mlp/load | tail -n 1)" = 200 ] ||
	fail "a failing background context failed b-mlp's load"
wait_for "grep -c \"model 'b-mlp': batch context 2 of 2 was not built (.*injected.*): it serves with 1\" '$tmp/daemon.log'" 1
[ "$(infer b-mlp)" = 200 ] && [ "$(infer b-mlp)" = 200 ] && [ "$(infer a-mlp)" = 200 ] ||
	fail "after a background context failed to build"
stop_daemon
echo "ok: a failing background context left b-mlp serving on one context"
fg=--background_contexts=no

# A failing batch, by copy and by launch: the first request after start-up gets 500, the next 200.
for site in copy launch; do
	: >"$tmp/daemon.log"
	INFERD_FAULT=launch:1000000000 start_daemon --model_repository="$tmp/models" $fg
	stop_daemon
	n=$(( $(count $site) + 1 ))
	# The run above made one request fewer: its counts are start-up and shutdown only.
	: >"$tmp/daemon.log"
	INFERD_FAULT=$site:$n start_daemon --model_repository="$tmp/models" $fg
	first=$(infer b-mlp)
	second=$(infer b-mlp)
	other=$(infer a-mlp)
	[ "$first" = 500 ] || fail "$site fault: the failing batch's request got $first, not 500"
	[ "$second" = 200 ] && [ "$other" = 200 ] || fail "$site fault: after it, $second and $other, not 200"
	grep -q "injected" "$tmp/daemon.log" || fail "$site fault: no injected failure in the log"
	stop_daemon
	echo "ok: a failing $site failed only its batch (500), then 200"
done

# Heap allocations.  These daemons are awaited through their port file, not polled, so nothing
# but the test's own requests allocates after "ready"; the shm socket is off unless
# shm_socket is set.
shm_socket=
start_http_daemon() {
	rm -f "$tmp/port"
	"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$tmp/models" $fg \
		--http_port=0 --port-file="$tmp/port" --shm_socket="$shm_socket" >>"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	await_daemon test -s "$tmp/port"
}
mark() {	# mark LABEL: the malloc count logged by FAULT_MARK at LABEL
	sed -n "s/.*fault injection: at $1: .*malloc \([0-9]*\).*/\1/p" "$tmp/daemon.log" | head -n 1
}
spread() {	# spread FIRST LAST: FIRST, FIRST+1, FIRST+2, the quarters and LAST, once each
	span=$(( $2 - $1 ))
	for k in 0 1 2 $((span / 4)) $((span / 2)) $((3 * span / 4)) "$span"; do
		[ "$k" -le "$span" ] && echo $(( $1 + k ))
	done | sort -nu
}
ready_status() {	# ready_status MODEL: the HTTP status of GET /v2/models/MODEL/ready
	"$PY" - "$port" "$1" <<'PYEOF'
import sys, urllib.error, urllib.request
try:
    with urllib.request.urlopen("http://127.0.0.1:%s/v2/models/%s/ready" % (sys.argv[1], sys.argv[2]), timeout=30) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
PYEOF
}

# While b-mlp loads: the marks around its load name its calls; each of several fails in turn.
: >"$tmp/daemon.log"
start_http_daemon
stop_daemon
first=$(( $(mark "start of model b-mlp") + 1 )); last=$(mark "end of model b-mlp")
echo "b-mlp's load makes malloc calls $first to $last"
[ "$last" -ge "$first" ] || fail "no heap allocation counted while b-mlp loads"
for n in $(spread "$first" "$last"); do
	: >"$tmp/daemon.log"
	INFERD_FAULT=malloc:$n start_http_daemon
	grep -q "fault injection: failing call $n of malloc" "$tmp/daemon.log" || fail "malloc:$n was not injected"
	why=$(sed -n "s/.*model 'b-mlp' \(version [0-9]* \)\{0,1\}not loaded: //p" "$tmp/daemon.log")
	[ -n "$why" ] || fail "malloc:$n: b-mlp loaded although an allocation of its load failed"
	[ "$(ready_status b-mlp)" = 400 ] || fail "malloc:$n: b-mlp is not reported as failed to load"
	[ "$(infer a-mlp)" = 200 ] || fail "malloc:$n: a-mlp does not serve"
	stop_daemon
	echo "ok: malloc:$n refused b-mlp ($why); a-mlp served"
done

# During HTTP requests: count the calls one inference makes after "ready", then fail each of
# several; that request fails with an error body (or, where the allocation was optional, is
# answered correctly), the next is answered correctly, and the daemon exits cleanly.
request() {	# request MODEL: "STATUS BODY" of one inference (the same input every time)
	"$PY" - "$port" "$1" <<'PYEOF'
import json, sys, urllib.error, urllib.request
body = json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32", "data": [0.25] * 784}]}).encode()
req = urllib.request.Request("http://127.0.0.1:%s/v2/models/%s/infer" % (sys.argv[1], sys.argv[2]), data=body)
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        out = json.loads(r.read())["outputs"][0]
        print(r.status, json.dumps([round(v, 5) for v in out["data"]]))
except urllib.error.HTTPError as e:
    err = e.read().decode(errors="replace")
    try:
        err = json.loads(err)["error"]
    except (ValueError, KeyError, TypeError):
        err = "NO-ERROR-MESSAGE " + err
    print(e.code, err)
except Exception as e:
    print("NO-ANSWER", repr(e))
PYEOF
}
total() { sed -n 's/.*fault injection: malloc called \([0-9]*\) times.*/\1/p' "$tmp/daemon.log" | tail -n 1; }
: >"$tmp/daemon.log"
start_http_daemon
stop_daemon
idle=$(total); ready=$(mark ready)
: >"$tmp/daemon.log"
start_http_daemon
want=$(request b-mlp)
stop_daemon
[ "$(mark ready)" = "$ready" ] || fail "start-up allocations differ between runs ($ready, then $(mark ready))"
case $want in 200\ *) ;; *) fail "an inference without a fault answered $want" ;; esac
per=$(( $(total) - idle ))
echo "start-up makes $ready malloc calls, one inference $per"
[ "$per" -ge 1 ] || fail "an inference made no heap allocation"
failed=0 answers=
for n in $(spread $((ready + 1)) $((ready + per))); do
	: >"$tmp/daemon.log"
	INFERD_FAULT=malloc:$n start_http_daemon
	got=$(request b-mlp)
	next=$(request b-mlp)
	other=$(request a-mlp)
	grep -q "fault injection: failing call $n of malloc" "$tmp/daemon.log" || fail "malloc:$n was not injected"
	case $got in
	"$want") echo "ok: malloc:$n: an optional allocation; the request was answered correctly" ;;
	200\ *) fail "malloc:$n: a wrong answer: $got" ;;
	*NO-ERROR-MESSAGE*) fail "malloc:$n: an error without a message: $got" ;;
	*NO-ANSWER*) fail "malloc:$n: no answer: $got" ;;
	*) failed=$((failed + 1)); echo "ok: malloc:$n: the request failed: $got" ;;
	esac
	answers="$answers|$got"
	[ "$next" = "$want" ] || fail "malloc:$n: the next request got $next"
	case $other in 200\ *) ;; *) fail "malloc:$n: a-mlp got $other" ;; esac
	stop_daemon
done
[ "$failed" -ge 1 ] || fail "no injected allocation failure reached a request"
# The first allocations after "ready" are the connection's (optional), the request's record and its
# body buffer: failing either of the last two is answered 500, saying so.
case "$answers|" in *"|500 out of memory|"*) ;; *) fail "no request whose record failed was answered: $answers" ;; esac
case $answers in *"|500 out of memory for the body"*) ;; *) fail "no request whose body buffer failed was answered: $answers" ;; esac

# While an shm client connects: the first client after "ready" is refused with a message
# when its record cannot be allocated, and the next one is served.
shm_socket=$sock
: >"$tmp/daemon.log"
start_http_daemon
stop_daemon
n=$(( $(mark ready) + 1 ))
: >"$tmp/daemon.log"
INFERD_FAULT=malloc:$n start_http_daemon
out=$("$top_builddir/client/tools/inferctl" --socket="$sock" health 2>&1) &&
	fail "malloc:$n: the shm client was served although its record could not be allocated"
grep -q "fault injection: failing call $n of malloc" "$tmp/daemon.log" || fail "malloc:$n was not injected"
case $out in *"out of memory"*) ;; *) fail "malloc:$n: the refused shm client read '$out'" ;; esac
"$top_builddir/client/tools/inferctl" --socket="$sock" health >/dev/null 2>&1 ||
	fail "malloc:$n: the next shm client was not served"
stop_daemon
echo "ok: malloc:$n refused the connecting shm client ($out); the next was served"

# While an shm client asks for a model's description (MODEL_QUERY): count the calls of one
# `inferctl model a-mlp` over the socket after "ready", then fail each in turn.  The client reads
# why (or, where the allocation was optional, the description), and the next shm client and an
# HTTP client are served.
ctl_model() { "$top_builddir/client/tools/inferctl" --socket="$sock" model a-mlp 2>&1; }
: >"$tmp/daemon.log"
start_http_daemon
stop_daemon
idle=$(total)
: >"$tmp/daemon.log"
start_http_daemon
want=$(ctl_model) || fail "inferctl model a-mlp without a fault: $want"
stop_daemon
ready=$(mark ready) per=$(( $(total) - idle ))
echo "one shm model query makes $per malloc calls"
queries=0
for n in $(seq $((ready + 1)) $((ready + per))); do
	: >"$tmp/daemon.log"
	INFERD_FAULT=malloc:$n start_http_daemon
	got=$(ctl_model) && rc=0 || rc=$?
	next=$(ctl_model) || fail "malloc:$n: the next shm client was not served: $next"
	other=$(infer a-mlp)
	grep -q "fault injection: failing call $n of malloc" "$tmp/daemon.log" || fail "malloc:$n was not injected"
	if [ $rc = 0 ]; then
		[ "$got" = "$want" ] || fail "malloc:$n: a wrong description: $got"
		echo "ok: malloc:$n: an optional allocation; the description was right"
	else
		case $got in *"out of memory"*) ;; *) fail "malloc:$n: the client read '$got'" ;; esac
		case $got in *"describing model a-mlp"*) queries=$((queries + 1)) ;; esac
		echo "ok: malloc:$n: the client was refused: $got"
	fi
	[ "$next" = "$want" ] && [ "$other" = 200 ] || fail "malloc:$n: then the shm client read $next, HTTP got $other"
	stop_daemon
done
[ "$queries" -ge 1 ] || fail "no injected allocation failure reached the model query"
echo "PASS"
