#!/bin/sh
# test_http_triton.sh: Triton's GET /v2/models/{m}/config and /stats, and a 400 naming each
# request parameter inferd does not implement (priority, sequence_id, classification...).
set -u
PY=${PYTHON3:-$(command -v python3)}
[ -x "$PY" ] || { echo "SKIP: no python3"; exit 77; }
: "${top_srcdir:?}" "${top_builddir:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-triton.XXXXXX") || exit 99
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
fail() { echo "FAIL: $*"; tail -n 30 "$tmp/inferd.log"; exit 1; }

"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$top_srcdir/conf/models" \
    --http_port=0 --port-file="$tmp/port" --shm_socket= >"$tmp/inferd.log" 2>&1 &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
	kill -0 "$pid" 2>/dev/null || fail "inferd exited at start-up"
	i=$((i + 1)); [ $i -le 600 ] || fail "inferd did not start in 60 s"
	sleep 0.1
done
"$PY" "$top_srcdir/tests/helpers/http_triton.py" "http://127.0.0.1:$(cat "$tmp/port")" \
    "$top_srcdir/conf/models/fashion-mlp" "$top_srcdir/docs/examples/fashion-request.json" || fail "http_triton.py"
kill -TERM "$pid"; wait "$pid" || fail "inferd exited with $? on SIGTERM"; pid=
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/inferd.log" && fail "sanitizer report"
exit 0
