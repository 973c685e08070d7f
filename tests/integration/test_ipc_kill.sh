#!/bin/sh
# test_ipc_kill.sh: clients SIGKILLed with requests queued and in flight; the daemon
# releases their regions and descriptors and keeps serving everyone else.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

start_daemon
fds_before=$(daemon_fds)
[ "$(daemon_regions)" -eq 0 ] || fail "regions mapped before any client"

# A well-behaved client running throughout, checked against references from HTTP.
write_shm_references
"$top_builddir/tests/helpers/ipc_client" "$sock" load "$tmp/in.bin" "$tmp/ref.bin" 3000 4 1 >"$tmp/bystander.log" 2>&1 &
bystander=$!

# Kill a client once the daemon has taken all its requests and not finished them.
# $1 requests of $2 rows each.
kill_client() {
	"$top_builddir/tests/helpers/ipc_hostile" "$sock" hang "$1" "$2" >"$tmp/hang.out" 2>&1 &
	victim=$!
	i=0
	until grep -q '^accepted' "$tmp/hang.out"; do
		i=$((i + 1))
		[ $i -le 300 ] || fail "the victim never saw its requests accepted: $(cat "$tmp/hang.out")"
		kill -0 $victim 2>/dev/null || fail "the victim died: $(cat "$tmp/hang.out")"
		sleep 0.1
	done
	kill -KILL $victim
	wait $victim 2>/dev/null
	echo "killed a client: $(cat "$tmp/hang.out")"
	wait_for daemon_regions 0
}

kill_client 256 256
grep -q 'accepted 256, completed 256$' "$tmp/hang.out" && fail "the burst finished before the kill: nothing was queued"
kill_client 1 256
kill_client 64 1

wait "$bystander" || { cat "$tmp/bystander.log"; fail "the bystander saw errors"; }
cat "$tmp/bystander.log"
"$top_builddir/tests/helpers/ipc_client" "$sock" load "$tmp/in.bin" "$tmp/ref.bin" 200 8 2 || fail "serving after the kills"
wait_for "metric inferd_shm_clients" 0
wait_for_at_most daemon_fds "$fds_before"
echo "ok: descriptors back to $fds_before, no region mapped"

# SIGTERM with a client busy: the daemon finishes what it accepted, exits cleanly,
# and the client is told (it must not hang, and no answer it got may be wrong).
"$top_builddir/tests/helpers/ipc_client" "$sock" load "$tmp/in.bin" "$tmp/ref.bin" 1000000 16 3 >"$tmp/late.log" 2>&1 &
late=$!
sleep 1
stop_daemon
i=0
while kill -0 $late 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 300 ] || { kill -KILL $late; fail "the client hung after the daemon stopped"; }
	sleep 0.1
done
wait $late && fail "the client did not notice the daemon stopping"
grep -q 'wrong output' "$tmp/late.log" && fail "wrong answers around shutdown: $(cat "$tmp/late.log")"
echo "ok: shutdown under load: $(tail -n 1 "$tmp/late.log")"
echo "PASS"
