#!/bin/sh
# test_ipc_load.sh: 16 client processes x 1,000 pipelined requests at once, every answer checked;
# then one client's doorbells and wake-ups with the daemon polling and not, and that a lone client's
# batches are launched inline (inline_dispatch, INFERD_TEST_INLINE=no checks they are not).
# The loaded daemon builds its batch contexts after the first in the background (the GPU default),
# four of them, so the others join while it serves and the allocation count starts once they are built.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

start_daemon --background_contexts=yes --inflight_batches=4 --log_level=debug

# 64 distinct rows and their reference outputs, computed once over HTTP.
write_row_references 777 fashion-mlp

fds_before=$(daemon_fds)
pids=
for i in $(seq 1 16); do
	"$top_builddir/tests/helpers/ipc_client" "$sock" load "$tmp/in.bin" "$tmp/ref.bin" 1000 16 "$i" \
		>"$tmp/client$i.log" 2>&1 &
	pids="$pids $!"
done
failed=0
for p in $pids; do
	wait "$p" || failed=$((failed + 1))
done
[ $failed -eq 0 ] || { cat "$tmp"/client*.log; fail "$failed of 16 clients saw errors"; }
grep -h 'requests' "$tmp"/client*.log | sort | uniq -c
[ "$(cat "$tmp"/client*.log | grep -c '1000 requests, 0 wrong')" -eq 16 ] || fail "not every client finished"

# Under load batches still form (inline dispatch or not).
rows=$(metric 'inferd_inference_count{model="fashion-mlp"}') batches=$(metric 'inferd_execution_count{model="fashion-mlp"}')
echo "16 clients: $rows rows in $batches batches, $(metric 'inferd_batches_inline_total{model="fashion-mlp"}') launched inline"
[ "$batches" -gt 0 ] && [ "$rows" -gt $((batches + batches / 2)) ] || fail "16 clients: $rows rows in $batches batches: mean batch under 1.5"

wait_for "metric inferd_shm_clients" 0
wait_for_at_most daemon_fds "$fds_before"
[ "$(metric inferd_allocations_after_startup)" = 0 ] || fail "allocations after start-up under shm load"
grep -q "model 'fashion-mlp': 3 more batch contexts built in the background" "$tmp/daemon.log" ||
	fail "fashion-mlp's contexts were not built in the background"
stop_daemon

# Doorbells: with the daemon polling (a window wide enough for a loaded machine), one client's
# back-to-back requests ring almost never; with polling off every request rings.  Wake-ups:
# at most one per sleep, so completions landing in one batch wake their client once.
# run_load NREQ DEPTH: one client; prints "doorbells wakeups executions inline-executions" over the run.
run_load() {
	d0=$(metric inferd_shm_doorbells_total) w0=$(metric inferd_shm_wakeups_total)
	e0=$(metric 'inferd_execution_count{model="fashion-mlp"}') i0=$(metric 'inferd_batches_inline_total{model="fashion-mlp"}')
	"$top_builddir/tests/helpers/ipc_client" "$sock" load "$tmp/in.bin" "$tmp/ref.bin" "$1" "$2" 7 \
		>"$tmp/one.log" 2>&1 || { cat "$tmp/one.log"; fail "one client, depth $2: errors"; }
	echo $(($(metric inferd_shm_doorbells_total) - d0)) $(($(metric inferd_shm_wakeups_total) - w0)) \
		$(($(metric 'inferd_execution_count{model="fashion-mlp"}') - e0)) \
		$(($(metric 'inferd_batches_inline_total{model="fashion-mlp"}') - i0))
}
start_daemon --shm_poll_us=10000
set -- $(run_load 1000 1)
echo "polling, 1000 requests one at a time: $1 doorbells, $2 wake-ups, $3 batches, $4 inline"
# A lone client's request finds the scheduler idle: the IPC thread launches it (no hand-off).
# Not every one: where the previous batch's slot is still being released by the completion thread
# the request is handed off, and on a loaded machine (CI's 2 cores: 855 of 1000 once) that is
# common.  Most must be inline; with inline dispatch off none may be.
if [ "${INFERD_TEST_INLINE:-yes}" = no ]; then
	[ "$4" -eq 0 ] || fail "inline_dispatch=no: $4 of $3 batches launched inline"
else
	[ "$4" -ge $(($3 / 2)) ] || fail "a lone client: only $4 of $3 batches launched inline"
fi
[ "$1" -le 100 ] || fail "$1 doorbells for 1000 back-to-back requests while the daemon polls"
[ "$2" -le 1000 ] || fail "$2 wake-ups for 1000 requests (more than one each)"
set -- $(run_load 4000 64)
echo "polling, 4000 requests 64 in flight: $1 doorbells, $2 wake-ups, $3 batches"
# A batch's completions wake a sleeping client once.  A busy machine can preempt the completion thread in the
# middle of a batch long enough for the client to sleep again (CI's 2 cores running two tests: 359 wake-ups for
# 108 batches once), so an excess is measured once more; a client woken per request fails both runs.
if [ "$2" -gt $(($3 + $3 / 10 + 5)) ]; then
	set -- $(run_load 4000 64)
	echo "polling, 4000 requests 64 in flight, again: $1 doorbells, $2 wake-ups, $3 batches"
fi
[ "$2" -le $(($3 + $3 / 10 + 5)) ] || fail "$2 wake-ups for $3 batches of one client (not one a batch)"
stop_daemon
start_daemon --shm_poll_us=0
set -- $(run_load 300 1)
echo "not polling, 300 requests one at a time: $1 doorbells"
[ "$1" -ge 150 ] || fail "only $1 doorbells for 300 requests with polling off (clients must ring)"
stop_daemon
echo "PASS"
