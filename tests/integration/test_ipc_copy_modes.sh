#!/bin/sh
# test_ipc_copy_modes.sh: the shared-memory correctness tests (shm == HTTP bit for bit, 16 x 1,000 correct
# answers, hostile clients, SIGKILL mid-request) once per copy_mode, dma and mapped; INFERD_TEST_DEVICE=cuda:0
# runs them on the GPU, where the two modes take different paths (on the CPU both are memcpy).
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

for mode in dma mapped; do
	# The daemon says which mode it took.
	INFERD_TEST_COPY_MODE=$mode start_daemon
	grep -q "copy mode: $mode" "$tmp/daemon.log" || fail "copy_mode=$mode: the daemon does not report it"
	stop_daemon
	for t in test_ipc_compare.sh test_ipc_load.sh test_ipc_hostile.sh test_ipc_kill.sh; do
		INFERD_TEST_COPY_MODE=$mode sh "$top_srcdir/tests/integration/$t" >"$tmp/$mode-$t.log" 2>&1
		rc=$?
		[ $rc -eq 77 ] && { echo "SKIP: $t skipped"; cat "$tmp/$mode-$t.log"; exit 77; }
		[ $rc -eq 0 ] || { cat "$tmp/$mode-$t.log"; fail "copy_mode=$mode: $t failed"; }
		echo "ok: copy_mode=$mode: $t"
	done
done
