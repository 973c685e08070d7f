#!/bin/sh
# test_client_usability.sh: tests/helpers/client_usability (libinferd's wait, last-error and
# message promises) against a private daemon serving the demo model over shared memory.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-client.XXXXXX") || exit 99
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
fail() { echo "FAIL: $*"; tail -n 30 "$tmp/inferd.log"; exit 1; }

"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$top_srcdir/conf/models" \
    --http_enable=no --shm_socket="$tmp/s.sock" >"$tmp/inferd.log" 2>&1 &
pid=$!
i=0
until grep -q "ready" "$tmp/inferd.log" 2>/dev/null; do
	kill -0 "$pid" 2>/dev/null || fail "inferd exited at start-up"
	i=$((i + 1)); [ $i -le 600 ] || fail "inferd did not start in 60 s"
	sleep 0.1
done
"$top_builddir/tests/helpers/client_usability" "$tmp/s.sock" || fail "client_usability"
kill -TERM "$pid"; wait "$pid" || fail "inferd exited with $? on SIGTERM"; pid=
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/inferd.log" && fail "sanitizer report"
exit 0
