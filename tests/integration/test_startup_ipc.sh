#!/bin/sh
# test_startup_ipc.sh: the shm socket is up before the start-up loads.  In a build with
# --enable-fault-injection (skipped otherwise), with held-mlp's start-up load held by
# INFERD_FAULT_HOLD_LOAD (a-mlp loads first): a libinferd client connects; a-mlp serves it; a lookup
# of held-mlp fails with INFERD_ENOMODEL naming held-mlp and that it is loading (inferctl's too);
# inferctl's model list over the socket leaves held-mlp out, as HTTP's served models do.  Once the
# load is released, the same connection finds held-mlp and its request gives a-mlp's answer (the same
# files).  A SIGTERM while the load is held and a client is connected ends the daemon with status 0,
# never ready.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

ctl="$top_builddir/client/tools/inferctl"
for m in a-mlp held-mlp; do
	mkdir -p "$tmp/models" && cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/$m" || exit 99
	sed -i "s/\"fashion-mlp\"/\"$m\"/" "$tmp/models/$m/model.json" || exit 99
done

# --- a client connected while held-mlp loads -------------------------------------------------------
start_held
grep -q "ipc: listening on $sock" "$tmp/daemon.log" || fail "no 'ipc: listening' line before the loads finished"
"$ctl" --socket="$sock" health >"$tmp/ctl.out" 2>&1 || fail "inferctl health over the socket: $(cat "$tmp/ctl.out")"
"$ctl" --socket="$sock" models >"$tmp/ctl.out" 2>&1 || fail "inferctl models over the socket: $(cat "$tmp/ctl.out")"
[ "$(cat "$tmp/ctl.out")" = a-mlp ] || fail "the models served while held-mlp loads: $(cat "$tmp/ctl.out")"
"$ctl" --socket="$sock" model held-mlp >"$tmp/ctl.out" 2>&1 && fail "inferctl found held-mlp while it loads"
grep -q "no such model: .*'held-mlp'.*it is loading" "$tmp/ctl.out" ||
	fail "inferctl's error for held-mlp while it loads: $(cat "$tmp/ctl.out")"

mkfifo "$tmp/client.in" || exit 99
"$top_builddir/tests/helpers/ipc_client" "$sock" hold a-mlp <"$tmp/client.in" >"$tmp/client.out" 2>&1 &
client=$!
exec 7>"$tmp/client.in"
echo infer >&7
wait_for "grep -c '^ok' $tmp/client.out" 1
echo "model held-mlp" >&7
wait_for "grep -c '^error' $tmp/client.out" 1
grep -q "^error: no such model (.*'held-mlp'.*it is loading" "$tmp/client.out" ||
	fail "the client's error for held-mlp while it loads: $(cat "$tmp/client.out")"
[ -e "$tmp/port" ] && fail "the port file was written before the start-up loads finished"

touch "$tmp/release" || exit 99
wait_for "grep -c ' ready$' $tmp/daemon.log" 1
echo "model held-mlp" >&7
echo infer >&7
wait_for "grep -c '^ok' $tmp/client.out" 3
exec 7>&-
wait "$client" || fail "the client connected during the load failed: $(cat "$tmp/client.out")"
grep -q '^ok model held-mlp$' "$tmp/client.out" || fail "no held-mlp after the release: $(cat "$tmp/client.out")"
answers=$(grep '^ok [0-9]' "$tmp/client.out" | sort -u | wc -l)
[ "$answers" -eq 1 ] || fail "held-mlp and a-mlp (the same files) answer differently: $(cat "$tmp/client.out")"
stop_daemon
echo "ok: a client connected during the start-up load is told held-mlp is loading, then is served by it"

# --- a SIGTERM while the load is held and a client is connected -------------------------------------
start_held
mkfifo "$tmp/term.in" || exit 99
"$top_builddir/tests/helpers/ipc_client" "$sock" hold a-mlp <"$tmp/term.in" >"$tmp/term.out" 2>&1 &
client=$!
exec 8>"$tmp/term.in"
echo infer >&8
wait_for "grep -c '^ok' $tmp/term.out" 1
kill -TERM "$daemon_pid" || fail "the daemon is gone"
wait "$daemon_pid"
status=$?
daemon_pid=
[ "$status" -eq 0 ] || fail "a SIGTERM during a held start-up load with a client connected: exit status $status"
grep -q " ready$" "$tmp/daemon.log" && fail "the daemon said ready after a SIGTERM during the start-up load"
grep -q "never ready, shutting down" "$tmp/daemon.log" || fail "no log line says the start-up was cut short"
exec 8>&-
wait "$client"
echo "ok: a SIGTERM during a held start-up load with a client connected ends the daemon"
exit 0
