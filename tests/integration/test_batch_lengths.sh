#!/bin/sh
# test_batch_lengths.sh: batching across sequence lengths.  Serves the models of
# tests/helpers/masked_encoder.py: a masked encoder (padding detected from its attention_mask), the same with
# "padding" declared, one without a mask and one whose padded warm-up disagrees; 8 HTTP clients (and 4 shm
# clients) send requests of lengths no two clients share, so a batch of several requests is a batch of
# different lengths.  Checks every answer against onnxruntime on the request alone (1e-5 of the output's
# scale, the request's own shape) and against the daemon's answer to it alone; that the masked models batch
# (rows > batches), the others never put two lengths in one batch, the refusal is logged, and a declaration
# naming no input fails that model's load.  Skips (77) without numpy, onnxruntime and torch.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

"$PY" -c 'import numpy, onnxruntime, torch' 2>/dev/null ||
	{ echo "SKIP: $PY cannot import numpy, onnxruntime and torch"; exit 77; }
enc="$top_srcdir/tests/helpers/masked_encoder.py"
mkdir "$tmp/models" || fail "mkdir"
"$PY" "$enc" make "$tmp/models" >"$tmp/make.log" 2>&1 || { tail -n 30 "$tmp/make.log"; fail "masked_encoder.py make"; }
# A declaration whose values leave out an input that has the padded dim.
mkdir "$tmp/models/bad_padding" && cp "$tmp/models/declared_encoder/model.onnx" "$tmp/models/bad_padding/" &&
	"$PY" -c 'import json, sys; c = json.load(open(sys.argv[1])); del c["padding"]["values"]["valid"]; json.dump(c, open(sys.argv[2], "w"))' \
	"$tmp/models/declared_encoder/model.json" "$tmp/models/bad_padding/model.json" || fail "bad_padding"

lib="$top_builddir/client/lib/.libs/libinferd.so.0"
preload=""
shm_sock="$sock"
if [ ! -f "$lib" ]; then
	echo "note: no shared libinferd in this build ($lib): shared memory is not checked"
	shm_sock=""
elif grep -q '^SANITIZER_FLAGS = .*fsanitize=address' "$top_builddir/Makefile"; then
	for rt in libasan.so libubsan.so; do
		f=$(${CC:-cc} -print-file-name=$rt)
		[ -f "$f" ] || { echo "SKIP: sanitizer build, and $rt is not found"; exit 77; }
		preload="$preload $f"
	done
fi

start_daemon --model_repository="$tmp/models"
grep "padd\|lengths\|bad_padding" "$tmp/daemon.log"
grep -q "model 'masked_encoder' version 1: requests of different lengths share batches" "$tmp/daemon.log" ||
	fail "the masked encoder's padding was not detected and confirmed"
grep -q "model 'declared_encoder' version 1: requests of different lengths share batches, padded to 3 buckets" \
	"$tmp/daemon.log" || fail "the declared padding was not confirmed with its 3 buckets"
grep -q "model 'unmasked_pool' version 1: no batching across lengths (output 'pooled'" "$tmp/daemon.log" ||
	fail "the encoder that ignores its mask was not refused padding with a reason"
grep "bad_padding" "$tmp/daemon.log" | grep -q "\"padding\".\"values\" lacks input 'valid'" ||
	fail "a declaration leaving out an input did not fail that model's load naming it"
grep -q "model 'plain_encoder'.*lengths" "$tmp/daemon.log" && fail "a model without a mask mentions padding"

env PYTHONPATH="$top_srcdir/client/python" PYTHONDONTWRITEBYTECODE=1 INFERD_LIB="$lib" \
    LD_PRELOAD="${preload# }" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    "$PY" "$enc" check "http://127.0.0.1:$port" "$tmp/models" ${shm_sock:+"$shm_sock"} >"$tmp/check.log" 2>&1
rc=$?
cat "$tmp/check.log"
[ $rc -eq 0 ] || fail "answers differ from onnxruntime's or from the request alone (or were refused)"

# counts PHASE MODEL: "rows batches" of that phase.
counts() {
	sed -n "s/^$1 $2: rows \([0-9]*\) batches \([0-9]*\)$/\1 \2/p" "$tmp/check.log"
}
# Requests of different lengths share batches (mean batch above 1), and so do HTTP requests of one of two
# lengths without padding; requests of different lengths without padding never do.
for pm in "http masked_encoder" "http-random masked_encoder" "http declared_encoder" "http-two plain_encoder" \
	${shm_sock:+"shm masked_encoder"}; do
	set -- $(counts $pm)
	[ $# -eq 2 ] && [ "$2" -gt 0 ] && [ "$1" -gt "$2" ] || fail "$pm: ${1:-?} rows in ${2:-?} batches: no batching"
done
for pm in "http plain_encoder" "http unmasked_pool"; do
	set -- $(counts $pm)
	[ $# -eq 2 ] && [ "$1" -gt 0 ] && [ "$1" -eq "$2" ] || fail "$pm: ${1:-?} rows in ${2:-?} batches: lengths were mixed"
done
# The padding metrics: padded batches were run, and the padding is a part of what ran.
padded=$(metric 'inferd_batches_padded_total{model="masked_encoder"}')
pad=$(metric 'inferd_padding_positions_total{model="masked_encoder"}')
run=$(metric 'inferd_sequence_positions_total{model="masked_encoder"}')
echo "masked_encoder: $padded padded batches, $pad of $run positions padding"
[ "${padded:-0}" -gt 0 ] && [ "${pad:-0}" -gt 0 ] && [ "$pad" -lt "${run:-0}" ] || fail "padding metrics: $padded $pad $run"
[ "$(metric 'inferd_batches_padded_total{model="plain_encoder"}')" = 0 ] || fail "a model without a mask was padded"
kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died during the checks"
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/daemon.log" && fail "sanitizer report in the daemon"
stop_daemon
echo "PASS: test_batch_lengths"
