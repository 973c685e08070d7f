#!/bin/sh
# test_ipc_threads.sh: one libinferd connection shared by 4 and 16 threads (synchronous
# runs, callbacks, handles, and inferd_submit/inferd_wait beside them), every answer
# equal to the single-thread one; threads' synchronous requests meet in one batch (they
# are not serialized behind a lock); cancel of queued requests; the threaded example.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

threads="$top_builddir/tests/helpers/ipc_threads"

# A repository with fashion-mlp and a copy that waits 3 s for company before batching.
repo="$tmp/models"
mkdir -p "$repo/fashion-mlp" "$repo/fashion-mlp-slow"
for d in fashion-mlp fashion-mlp-slow; do
	ln -s "$top_srcdir/conf/models/fashion-mlp/model.safetensors" "$repo/$d/model.safetensors"
done
cp "$top_srcdir/conf/models/fashion-mlp/model.json" "$repo/fashion-mlp/model.json"
sed -e 's/"name": "fashion-mlp"/"name": "fashion-mlp-slow"/' \
    -e 's/"max_queue_delay_us": [0-9]*/"max_queue_delay_us": 3000000/' \
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

stop_daemon
echo "PASS"
