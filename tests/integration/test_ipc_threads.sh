#!/bin/sh
# test_ipc_threads.sh: one libinferd connection shared by 4 and 16 threads (synchronous
# runs, callbacks, handles, and inferd_submit/inferd_wait beside them), every answer
# equal to the single-thread one; threads' synchronous requests meet in one batch (they
# are not serialized behind a lock); cancel of queued requests; the threaded example;
# reconnect after a daemon restart (on: the next call succeeds; off: INFERD_ECLOSED).
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

threads="$top_builddir/tests/helpers/ipc_threads"

# A repository with fashion-mlp and a copy that waits 3 s for company before batching (even alone).
repo="$tmp/models"
mkdir -p "$repo/fashion-mlp" "$repo/fashion-mlp-slow"
for d in fashion-mlp fashion-mlp-slow; do
	ln -s "$top_srcdir/conf/models/fashion-mlp/model.safetensors" "$repo/$d/model.safetensors"
done
cp "$top_srcdir/conf/models/fashion-mlp/model.json" "$repo/fashion-mlp/model.json"
sed -e 's/"name": "fashion-mlp"/"name": "fashion-mlp-slow"/' \
    -e 's/"max_queue_delay_us": [0-9]*/"max_queue_delay_us": 3000000, "eager_dispatch": false/' \
    "$top_srcdir/conf/models/fashion-mlp/model.json" >"$repo/fashion-mlp-slow/model.json"
grep -q '"max_queue_delay_us": 3000000' "$repo/fashion-mlp-slow/model.json" || fail "cannot make the slow model"

start_daemon --model_repository="$repo"

# Rows per batch beyond one, summed: inference_count - execution_count of fashion-mlp.
extra_rows() {
	echo $(( $(metric 'inferd_inference_count{model="fashion-mlp"}') - $(metric 'inferd_execution_count{model="fashion-mlp"}') ))
}

# Structure, not timing: one thread's synchronous requests never share a batch; four
# threads' do, which they can only if their requests are in the daemon at once.
before=$(extra_rows)
"$threads" "$sock" sync 1 100 || fail "one thread, synchronous"
one=$(extra_rows)
[ "$one" -eq "$before" ] || fail "one synchronous thread made batches of more than one row ($before -> $one)"
"$threads" "$sock" sync 4 300 || fail "four threads, synchronous"
four=$(extra_rows)
[ "$four" -gt "$one" ] || fail "four threads sharing a connection never had two requests in the daemon at once"
echo "ok: four synchronous threads shared batches ($((four - one)) rows joined another's batch)"

"$threads" "$sock" share 4 300 || fail "four threads sharing a connection"
"$threads" "$sock" share 16 60 || fail "sixteen threads sharing a connection"

"$threads" "$sock" cancel fashion-mlp-slow || fail "cancel"

"$top_builddir/client/examples/threads" "$sock" fashion-mlp 4 50 >"$tmp/example.out" || fail "the threaded example: $(cat "$tmp/example.out")"
cat "$tmp/example.out"
[ "$(grep -c ', 0 failed$' "$tmp/example.out")" -eq 4 ] || fail "the threaded example's output"

# Reconnect: clients connected, the daemon restarted on the same socket; with the
# option the next call succeeds on the same connection, without it it says ECLOSED.
for mode in on off; do
	rm -f "$tmp/go"
	"$threads" "$sock" reconnect $mode "$tmp/go" >"$tmp/reconnect-$mode.out" 2>&1 &
	eval "client_$mode=\$!"
done
for mode in on off; do
	i=0
	until grep -q '^ready' "$tmp/reconnect-$mode.out"; do
		i=$((i + 1))
		[ $i -le 300 ] || fail "reconnect $mode client not ready: $(cat "$tmp/reconnect-$mode.out")"
		sleep 0.1
	done
done
stop_daemon
start_daemon --model_repository="$repo"
touch "$tmp/go"
wait "$client_on" || fail "reconnect on: $(cat "$tmp/reconnect-on.out")"
wait "$client_off" || fail "reconnect off: $(cat "$tmp/reconnect-off.out")"
cat "$tmp/reconnect-on.out" "$tmp/reconnect-off.out"

stop_daemon
echo "PASS"
