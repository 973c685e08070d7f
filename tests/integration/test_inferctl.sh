#!/bin/sh
# test_inferctl.sh: inferctl as the README uses it: --version; every option as --key=value and
# --key value alike; the README's .npy command (its file ships in docs/examples) answering
# the label docs/examples/fashion-request.expected names; `model` the same over shm and HTTP.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
ctl=$top_builddir/client/tools/inferctl
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-ctl.XXXXXX") || exit 99
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
failed=0
fail() { echo "FAIL: $*"; failed=1; }
die() { echo "FAIL: $*"; tail -n 30 "$tmp/inferd.log"; exit 1; }

"$ctl" --version >"$tmp/v" 2>&1 || fail "--version: status $?"
grep -q "^inferctl (inferd) [0-9]" "$tmp/v" && grep -q "^libinferd [0-9]" "$tmp/v" || fail "--version printed: $(cat "$tmp/v")"
for tool in "$top_builddir/client/bench/inferd-bench" "$top_builddir/inferd"; do
	"$tool" --version >"$tmp/v" 2>&1 && grep -q "^inferd" "$tmp/v" || fail "$tool --version: $(cat "$tmp/v")"
done
"$ctl" --socket >"$tmp/o" 2>&1 && fail "--socket without a value succeeded"
grep -q -- "--socket needs a value" "$tmp/o" || fail "--socket without a value: $(cat "$tmp/o")"

"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$top_srcdir/conf/models" \
    --http_port=0 --port-file="$tmp/port" --shm_socket="$tmp/s.sock" >"$tmp/inferd.log" 2>&1 &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
	kill -0 "$pid" 2>/dev/null || die "inferd exited at start-up"
	i=$((i + 1)); [ $i -le 600 ] || die "inferd did not start in 60 s"
	sleep 0.1
done
hp=127.0.0.1:$(cat "$tmp/port")

# The README's command, as written but for the socket, run where the README runs it.
readme=$(grep -o 'client/tools/inferctl --socket=[^ ]* infer fashion-mlp --input [^ ]*' "$top_srcdir/README.md" | head -n 1)
[ -n "$readme" ] || die "no inferctl infer command in README.md"
npy=${readme##* }
[ -f "$top_srcdir/$npy" ] || die "README's $npy does not ship"
want=$(sed 's/^\([0-9]*\) \(.*\) (label.*/class \1 "\2"/' "$top_srcdir/docs/examples/fashion-request.expected")
(cd "$top_srcdir" && "$ctl" --socket="$tmp/s.sock" infer fashion-mlp --input "$npy") >"$tmp/readme.out" 2>&1 ||
	fail "README's inferctl command: $(cat "$tmp/readme.out")"
grep -q "row 0: $want" "$tmp/readme.out" || fail "README's command answered $(tail -n 1 "$tmp/readme.out"), want $want"

# Each option both ways: the same answer.
run() { "$ctl" "$@" >"$tmp/out" 2>&1 || echo "status $?" >>"$tmp/out"; cat "$tmp/out"; }
npy=$top_srcdir/$npy
for pair in "--socket=$tmp/s.sock infer fashion-mlp --input=$npy|--socket $tmp/s.sock infer fashion-mlp --input $npy" \
    "--http=$hp infer fashion-mlp --input=$npy|--http $hp infer fashion-mlp --input $npy" \
    "--http=$hp model fashion-mlp|--http $hp model fashion-mlp"; do
	a=$(run ${pair%%|*}) b=$(run ${pair#*|})
	[ "$a" = "$b" ] || fail "'${pair%%|*}' and '${pair#*|}' differ: '$a' vs '$b'"
	echo "$a" | grep -q "status" && fail "'${pair%%|*}' failed: $a"
done
run --http "$hp" infer fashion-mlp --input "$npy" | grep -q "row 0: $want" || fail "over HTTP: $(cat "$tmp/out")"

# model over HTTP shows what shm shows: max_batch_size and the labels too.
shm=$(run --socket "$tmp/s.sock" model fashion-mlp) http=$(run --http "$hp" model fashion-mlp)
[ "$shm" = "$http" ] || fail "model differs: shm '$shm', HTTP '$http'"
echo "$http" | grep -q '^max_batch_size: 256$' || fail "model over HTTP has no max_batch_size: $http"
echo "$http" | grep -q '9="Ankle boot"' || fail "model over HTTP has no labels: $http"

kill -TERM "$pid"; wait "$pid" || fail "inferd exited with $? on SIGTERM"; pid=
exit $failed
