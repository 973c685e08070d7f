#!/bin/sh
# test_ipc_hostile.sh: hostile raw clients, each answered with an error, the daemon alive after;
# doorbell words scribbled over, a client that never rings or stops reading its completions;
# idle CPU ~0 after traffic; max_clients + 1 refused; a user outside allow_users refused (as root,
# via setpriv).
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

start_daemon --max_clients=6
fds_before=$(daemon_fds)
refused_before=$(metric inferd_shm_clients_refused_total)
"$top_builddir/tests/helpers/ipc_hostile" "$sock" all 6 || fail "hostile clients"
[ "$(metric inferd_shm_clients_refused_total)" -gt "$refused_before" ] || fail "refusals not counted"
wait_for "metric inferd_shm_clients" 0
wait_for daemon_regions 0
wait_for_at_most daemon_fds "$fds_before"
grep -q 'submission ring corrupt' "$tmp/daemon.log" || fail "garbage ring indices were not logged"

# The daemon's CPU time (utime + stime, clock ticks) over one second.
cpu_ticks_over_1s() {
	t0=$(awk '{ print $14 + $15 }' "/proc/$daemon_pid/stat")
	sleep 1
	t1=$(awk '{ print $14 + $15 }' "/proc/$daemon_pid/stat")
	echo $((t1 - t0))
}
# Idle after traffic: past the polling window the daemon sleeps (at most 2 ticks, 2 % of a core at 100 Hz).
idle=$(cpu_ticks_over_1s)
[ "$idle" -le 2 ] || fail "the daemon used $idle clock ticks in 1 s of idleness after traffic"
echo "ok: idle after traffic: $idle clock ticks in 1 s"

# A client that stops reading its completion ring: the daemon takes no more of its submissions
# (they wait in its ring; libinferd answers its caller EAGAIN), does not spin on them, serves
# others, and takes them once the client reads and rings.
"$top_builddir/tests/helpers/ipc_hostile" "$sock" queue 4 >"$tmp/queue.out" 2>&1 &
hog=$!
wait_for "grep -c '^queued' '$tmp/queue.out'" 1
sleep 0.2
idle=$(cpu_ticks_over_1s)
[ "$idle" -le 2 ] || fail "the daemon used $idle clock ticks in 1 s beside a client that stopped reading"
"$top_builddir/tests/helpers/ipc_hostile" "$sock" allowed || fail "a client was not served beside one that stopped reading"
kill -USR1 $hog
wait $hog || fail "the stalled client's submissions were not all served once it read: $(cat "$tmp/queue.out")"
grep -q 'ok 8, shutdown 0, other 0' "$tmp/queue.out" || fail "stalled client: $(cat "$tmp/queue.out")"
echo "ok: a client that stopped reading: $idle ticks in 1 s beside it, others served; $(tail -n 1 "$tmp/queue.out")"

# libinferd passes the daemon's refusal on: inferctl says why.
"$top_builddir/tests/helpers/ipc_hostile" "$sock" hold 6 >"$tmp/hold.out" 2>&1 &
holder=$!
wait_for "grep -c '^held' '$tmp/hold.out'" 1
"$top_builddir/client/tools/inferctl" --socket="$sock" health 2>"$tmp/refused.txt" && fail "inferctl got in past max_clients"
grep -q 'too many clients (max_clients = 6)' "$tmp/refused.txt" || fail "inferctl: $(cat "$tmp/refused.txt")"
kill -KILL $holder
wait $holder 2>/dev/null
echo "ok: inferctl reports: $(cat "$tmp/refused.txt")"
wait_for_at_most daemon_fds "$fds_before"

# A second daemon must not steal a live socket.
"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$top_srcdir/conf/models" --http_enable=no \
	--shm_socket="$sock" >"$tmp/second.log" 2>&1 && fail "a second daemon started on a live socket"
grep -q 'another daemon is listening on it' "$tmp/second.log" || fail "second daemon: $(cat "$tmp/second.log")"
stop_daemon

# A stale socket file (its daemon killed) is replaced.
"$PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$sock"
[ -S "$sock" ] || fail "could not make a stale socket"
start_daemon
stop_daemon
echo "ok: a live socket is kept, a stale one replaced"

# Another user: the socket's own permissions are opened so that the daemon's check is what refuses.
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: the other-user cases need root and setpriv"
	echo "PASS"
	exit 0
fi
cp "$top_builddir/tests/helpers/ipc_hostile" "$tmp/ipc_hostile"
chmod 0755 "$tmp" "$tmp/ipc_hostile"
if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$tmp/ipc_hostile"; then
	echo "SKIP: uid 65534 cannot reach $tmp"
	echo "PASS"
	exit 0
fi
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/ipc_hostile" "$sock" "$@"
}
start_daemon
chmod 0666 "$sock"
as_nobody denied || fail "uid 65534 was not refused"
stop_daemon
start_daemon --allow_users=root,65534
chmod 0666 "$sock"
as_nobody allowed || fail "uid 65534 in allow_users was refused"
stop_daemon
start_daemon --allow_users=root --allow_groups=65534
chmod 0666 "$sock"
as_nobody allowed || fail "gid 65534 in allow_groups was refused"
stop_daemon

# The socket's own permissions follow the allow lists, with no chmod by hand.
sock_mode() {
	stat -c '%a %g' "$sock"
}
start_daemon
[ "$(sock_mode)" = "600 0" ] || fail "default socket mode/group is $(sock_mode), not 600 0"
setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" -c "
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except PermissionError:
    sys.exit(0)
sys.exit(1)" "$sock" || fail "uid 65534 could connect to the default socket"
stop_daemon
start_daemon --allow_users=65534
[ "$(sock_mode)" = "666 0" ] || fail "allow_users: socket mode/group $(sock_mode), not 666 0"
as_nobody allowed || fail "uid 65534 in allow_users was refused (socket mode $(sock_mode))"
"$top_builddir/client/tools/inferctl" --socket="$sock" health >/dev/null || fail "root was locked out by allow_users"
stop_daemon
# A supplementary group: the natural "add users to group inferd" setup.
start_daemon --allow_groups=4242
[ "$(sock_mode)" = "660 4242" ] || fail "allow_groups: socket mode/group $(sock_mode), not 660 4242"
setpriv --reuid=65534 --regid=65534 --groups=4242 "$tmp/ipc_hostile" "$sock" allowed ||
	fail "uid 65534 with supplementary group 4242 was refused"
chmod 0666 "$sock"
as_nobody denied || fail "uid 65534 outside group 4242 was not refused"
stop_daemon
start_daemon --allow_groups=4242 --shm_socket_mode=0640 --shm_socket_group=0
[ "$(sock_mode)" = "640 0" ] || fail "explicit shm_socket_mode/group: $(sock_mode), not 640 0"
stop_daemon
echo "ok: the socket's mode and group follow allow_users/allow_groups; supplementary groups count"
echo "PASS"
