#!/bin/sh
# test_inferctl_repository.sh: inferctl load, reload (--config), unload and index: the requests they send
# (method, path, body) to a stand-in server (tests/helpers/fake_repository_server.py), what they print, the
# server's error passed on, usage errors, and a clear error when nothing listens.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=${PYTHON3:-/usr/bin/python3}
[ -x "$PY" ] || { echo "SKIP: no python3"; exit 77; }
ctl=$top_builddir/client/tools/inferctl
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-ctlrepo.XXXXXX") || exit 99
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
failed=0
fail() { echo "FAIL: $*"; failed=1; }

"$PY" "$top_srcdir/tests/helpers/fake_repository_server.py" "$tmp/port" "$tmp/requests" &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
	kill -0 "$pid" 2>/dev/null || { echo "FAIL: the stand-in server exited"; exit 1; }
	i=$((i + 1)); [ $i -le 300 ] || { echo "FAIL: the stand-in server did not start"; exit 1; }
	sleep 0.1
done
hp=127.0.0.1:$(cat "$tmp/port")

# run EXPECTED_STATUS ARGS...: inferctl's output in $tmp/out, its status checked.
run() {
	want=$1; shift
	"$ctl" "$@" >"$tmp/out" 2>&1
	got=$?
	[ "$got" = "$want" ] || fail "inferctl $*: status $got, want $want: $(cat "$tmp/out")"
}
# last_request METHOD PATH: the newest logged request must be that one; its body in $tmp/body.
last_request() {
	tail -n 1 "$tmp/requests" >"$tmp/last"
	"$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
open(sys.argv[2], "w").write(r["body"])
sys.exit(0 if (r["method"], r["path"]) == (sys.argv[3], sys.argv[4]) else 1)' "$tmp/last" "$tmp/body" "$1" "$2" ||
		fail "last request $(cat "$tmp/last"), want $1 $2"
}

run 0 --http="$hp" load fashion-mlp
grep -qx "loaded fashion-mlp" "$tmp/out" || fail "load printed: $(cat "$tmp/out")"
last_request POST /v2/repository/models/fashion-mlp/load
"$PY" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])) == {} else 1)' "$tmp/body" ||
	fail "load without --config sent $(cat "$tmp/body")"

printf '{"max_batch_size": 8,\n "dynamic_batching": {"max_queue_delay_us": 50}}\n' >"$tmp/cfg.json"
run 0 --http "$hp" reload fashion-mlp --config "$tmp/cfg.json"
grep -qx "reloaded fashion-mlp" "$tmp/out" || fail "reload printed: $(cat "$tmp/out")"
last_request POST /v2/repository/models/fashion-mlp/load
"$PY" -c 'import json, sys
b = json.load(open(sys.argv[1]))
assert list(b) == ["parameters"] and list(b["parameters"]) == ["config"], b
assert isinstance(b["parameters"]["config"], str), b
assert json.loads(b["parameters"]["config"]) == json.load(open(sys.argv[2])), b' "$tmp/body" "$tmp/cfg.json" ||
	fail "reload --config sent $(cat "$tmp/body")"

run 1 --http="$hp" load bad
grep -q "HTTP 400: failed to load 'bad': bad/1/model.onnx: truncated" "$tmp/out" || fail "load bad printed: $(cat "$tmp/out")"

run 0 --http="$hp" unload fashion-mlp
grep -qx "unloaded fashion-mlp" "$tmp/out" || fail "unload printed: $(cat "$tmp/out")"
last_request POST /v2/repository/models/fashion-mlp/unload

run 0 --http="$hp" index
last_request POST /v2/repository/index
grep -Eq '^NAME +VERSION +STATE +REASON$' "$tmp/out" &&
grep -Eq '^fashion-mlp +2 +READY +-$' "$tmp/out" &&
grep -Eq '^broken +- +UNAVAILABLE +model.onnx: truncated$' "$tmp/out" || fail "index printed: $(cat "$tmp/out")"

# Usage errors are refused before anything is sent.
n=$(wc -l <"$tmp/requests")
run 2 --http="$hp" load
grep -q "load needs a model name" "$tmp/out" || fail "load without a name: $(cat "$tmp/out")"
run 2 --http="$hp" index extra
run 2 --http="$hp" unload fashion-mlp --config "$tmp/cfg.json"
grep -q -- "--config FILE goes with load and reload only" "$tmp/out" || fail "unload --config: $(cat "$tmp/out")"
printf '[1, 2]' >"$tmp/array.json"
run 1 --http="$hp" load fashion-mlp --config "$tmp/array.json"
grep -q "must be a JSON object" "$tmp/out" || fail "array config: $(cat "$tmp/out")"
printf '{"max_batch_size": ' >"$tmp/cut.json"
run 1 --http="$hp" load fashion-mlp --config "$tmp/cut.json"
grep -q "cut.json: line 1" "$tmp/out" || fail "truncated config: $(cat "$tmp/out")"
run 1 --http="$hp" load fashion-mlp --config "$tmp/absent.json"
grep -q "absent.json: No such file" "$tmp/out" || fail "missing config: $(cat "$tmp/out")"
run 1 --http="$hp" load '../etc'
[ "$(wc -l <"$tmp/requests")" = "$n" ] || fail "a refused command sent a request"

# Nothing listening: a clear error naming the address.
kill "$pid"; wait "$pid" 2>/dev/null; pid=
for cmd in "load fashion-mlp" "unload fashion-mlp" "index"; do
	run 1 --http="$hp" $cmd
	grep -q "$hp.*Connection refused" "$tmp/out" || fail "$cmd without a server: $(cat "$tmp/out")"
done
exit $failed
