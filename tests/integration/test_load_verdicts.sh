#!/bin/sh
# test_load_verdicts.sh: the load checks' verdicts are remembered for the same bytes.  Serves the masked
# encoder of tests/helpers/masked_encoder.py with a compile_cache_dir: the first start runs the padding check
# and confirms padding; a restart takes that verdict from the cache (its log line says so, no check runs); a
# model directory whose model.onnx is replaced by the encoder that ignores its mask (same inputs, same
# model.json, same name) is checked afresh and refused padding, never handed the remembered verdict; a changed
# model.json is checked afresh too.  Skips (77) without numpy, onnxruntime and torch.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

"$PY" -c 'import numpy, onnxruntime, torch' 2>/dev/null ||
	{ echo "SKIP: $PY cannot import numpy, onnxruntime and torch"; exit 77; }
mkdir "$tmp/all" "$tmp/models" || fail "mkdir"
"$PY" "$top_srcdir/tests/helpers/masked_encoder.py" make "$tmp/all" >"$tmp/make.log" 2>&1 ||
	{ tail -n 30 "$tmp/make.log"; fail "masked_encoder.py make"; }
cp -r "$tmp/all/masked_encoder" "$tmp/models/" || fail "copy"
m="model 'masked_encoder' version 1"
earlier="as the check at an earlier load of the same files and settings"

# start_log: start the daemon on the repository with the cache, then keep this start's log lines in $tmp/start.log.
start_log() {
	: >"$tmp/daemon.log"
	start_daemon --model_repository="$tmp/models" --compile_cache_dir="$tmp/cache"
	cp "$tmp/daemon.log" "$tmp/start.log"
	grep "masked_encoder.*\(padd\|lengths\|compile cache\)" "$tmp/start.log"
}

start_log
grep -q "$m: requests of different lengths share batches" "$tmp/start.log" || fail "first start: padding not confirmed"
grep -q "$earlier" "$tmp/start.log" && fail "first start: a verdict was recalled from an empty cache"
stop_daemon
[ -f "$tmp/cache/load_checks.cache" ] || fail "no load_checks.cache after the first start: $(ls "$tmp/cache")"
echo "ok: the first start checked padding and stored its verdict"

start_log
grep -q "$m: requests of different lengths share batches, padded to [0-9]* buckets up to 64 ($earlier found)" \
	"$tmp/start.log" || fail "restart: the verdict was not taken from the cache"
stop_daemon
echo "ok: a restart took the padding verdict from the cache"

# The same name, inputs and model.json, other bytes: a model whose padded rows disagree.
cp "$tmp/all/unmasked_pool/model.onnx" "$tmp/models/masked_encoder/model.onnx" || fail "swap"
start_log
grep -q "$m: no batching across lengths (output 'pooled'" "$tmp/start.log" ||
	fail "replaced model: not checked afresh (or not refused padding)"
grep -q "$earlier" "$tmp/start.log" && fail "replaced model: a remembered verdict was used for other bytes"
stop_daemon
echo "ok: a replaced model file was checked again and refused padding"

# Back to the masked encoder, with a model.json that differs by a space: checked afresh, padding confirmed.
cp "$tmp/all/masked_encoder/model.onnx" "$tmp/models/masked_encoder/model.onnx" &&
	printf ' ' >>"$tmp/models/masked_encoder/model.json" || fail "edit"
start_log
grep -q "$m: requests of different lengths share batches" "$tmp/start.log" || fail "edited config: padding not confirmed"
grep -q "$earlier" "$tmp/start.log" && fail "edited config: a verdict was recalled for another model.json"
stop_daemon
echo "ok: a changed model.json was checked again"
exit 0
