#!/bin/sh
# test_file_change.sh: nothing done to a served version's files changes or crashes what it computes, and a
# rescan never loads files that are still being written.
#  - three models: fashion-mlp (the layer format: model.safetensors), onnx-ext (ONNX, its weights in the
#    external data file weights.bin) and onnx-inline (ONNX, weights inside model.onnx); every batch is one
#    row, so a model answers the same row with the same bytes each time;
#  - while 8 HTTP clients (binary outputs) and 2 shm clients (fashion-mlp) send requests, each model's file
#    is renamed away, overwritten in place, truncated to 1000 bytes and to 0, deleted, and a new file put
#    in its place: every answer stays the loaded files' byte for byte (when the CPU backend computed from
#    the mapped file, the overwrite changed the answers and the truncation killed the daemon with SIGBUS),
#    until an explicit load, after which it is the new files' (checked against numpy);
#  - a file being appended to is left alone by SIGHUP rescans while it grows (logged once, never loaded);
#    once the new file is complete, one SIGHUP loads it when the settle interval has passed;
#  - no request fails, and each client sees each model's files in order: old, new, newer.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"
# The clients and the writer run in the background: a failure stops them with the daemon.
background=
trap 'for p in $background; do kill "$p" 2>/dev/null; done; cleanup' EXIT

repo="$tmp/models" stage="$tmp/stage"
clients="$top_srcdir/tests/helpers/file_change_clients.py"
mlp="$top_srcdir/conf/models/fashion-mlp"
settle=4
mkdir -p "$repo/fashion-mlp" "$stage" "$tmp/ref" || exit 99
cp "$mlp/model.safetensors" "$repo/fashion-mlp/" || exit 99
# Batches of one row: a row's answer is the same bits however the requests arrive.
sed -e 's/"max_batch_size": 256/"max_batch_size": 1/' \
	-e 's/"preferred_batch_sizes": \[64, 256\]/"preferred_batch_sizes": [1]/' \
	"$mlp/model.json" >"$repo/fashion-mlp/model.json" || exit 99
grep -q '"max_batch_size": 1,.*' "$repo/fashion-mlp/model.json" && grep -q '"preferred_batch_sizes": \[1\]' \
	"$repo/fashion-mlp/model.json" || fail "fashion-mlp's model.json did not take one-row batches"
"$PY" "$top_srcdir/tests/helpers/make_file_change_models.py" "$repo" "$stage" || fail "making the models"
models=$("$PY" -c 'import json, sys; print(" ".join(sorted(json.load(open(sys.argv[1])))))' "$stage/inputs.json")
log_count() { grep -c "$1" "$tmp/daemon.log"; }

start_daemon --model_repository="$repo" --model_control_mode=explicit --load_model="$(echo "$models" | tr ' ' ,)" \
	--repository_settle_secs=$settle
for m in $models; do
	grep -q "model '$m' loaded" "$tmp/daemon.log" || fail "$m did not load"
done

# The SHA-256 of model $1's answer, which must be its $2 files' (old, new, new2) by numpy's reckoning.
answer() { "$PY" "$clients" answer "$port" "$stage" "$1" "$2"; }
# Fail, saying so when the daemon has died.
fail_or_died() {
	if ! kill -0 "$daemon_pid" 2>/dev/null; then
		wait "$daemon_pid"
		status=$?
		daemon_pid=
		fail "the daemon died (exit status $status) after $1"
	fi
	fail "$1"
}
# Model $1 answers with the bytes of its $2 files after $3.
still() {
	h=$(answer "$1" "$2") || fail_or_died "$3: $1's answer is not its $2 files'"
	[ "$h" = "$(cat "$tmp/ref/$1.$2")" ] || fail_or_died "$3: $1's answer changed its bytes"
}
for m in $models; do
	answer "$m" old >"$tmp/ref/$m.old" || fail "$m: the first answer is not its files'"
done

# 64 fashion-mlp rows and their answers one row at a time over shm: the shm clients' references.
"$PY" - "$tmp/in.bin" <<'PYEOF' || exit 99
import struct, sys
seed, vals = 4242, []
for i in range(64 * 784):
    seed = (seed * 1103515245 + 12345) % 2**31
    vals.append((seed >> 7) / 2**24)
open(sys.argv[1], "wb").write(struct.pack("<%df" % len(vals), *vals))
PYEOF
# shellcheck disable=SC2046
"$top_builddir/tests/helpers/ipc_client" "$sock" seq "$tmp/in.bin" "$tmp/ref.bin" $(seq 64 | sed 's/.*/1/') ||
	fail "shm references"

# --- 8 HTTP clients on every model, 2 shm clients on fashion-mlp ---------------------------------
"$PY" "$clients" run "$port" "$stage" "$tmp" 8 >"$tmp/http.log" 2>&1 &
http_clients=$!
background="$background $http_clients"
shm_pids=
for i in 1 2; do
	( n=0; while [ ! -f "$tmp/stop-shm" ] || [ $n -eq 0 ]; do
		"$top_builddir/tests/helpers/ipc_client" "$sock" load "$tmp/in.bin" "$tmp/ref.bin" 100 4 "$i$n" \
			>>"$tmp/shm$i.log" 2>&1 || { echo "client failed" >>"$tmp/shm$i.log"; exit 1; }
		n=$((n + 1)); done ) &
	shm_pids="$shm_pids $!"
done
background="$background $shm_pids"
sleep 1

# change MODEL FILE NEW: rename FILE away, overwrite it in place with NEW, truncate it to 1000 bytes and to
# 0, delete it and copy NEW in its place, asking MODEL after each step: its answer must not change.
change() {
	m=$1 f=$2 new=$3
	mv "$f" "$f.moved" || exit 99
	still "$m" old "renaming $f"
	cat "$new" >"$f.moved" || exit 99
	still "$m" old "overwriting $f in place"
	head -c 1000 "$new" >"$f.moved" || exit 99
	still "$m" old "truncating $f to 1000 bytes"
	: >"$f.moved" || exit 99
	still "$m" old "truncating $f to 0 bytes"
	rm "$f.moved" || exit 99
	still "$m" old "deleting $f"
	cp "$new" "$f" || exit 99
	still "$m" old "copying a new $f in its place"
	echo "ok: $m: its $(basename "$f") renamed, overwritten, truncated and deleted; every answer the same bytes"
}
# Load model $1 explicitly; its answers are then its new files'.
reload() {
	out=$(curl -s -w '\n%{http_code}\n' -X POST "http://127.0.0.1:$port/v2/repository/models/$1/load")
	[ "$(echo "$out" | tail -n 1)" = 200 ] || fail_or_died "$1: the load failed: $out"
	answer "$1" new >"$tmp/ref/$1.new" || fail_or_died "$1: after the load, the answer is not the new files'"
	echo "ok: $1: after an explicit load, the new files' answers"
}

case " $models " in *" onnx-ext "*)
	change onnx-ext "$repo/onnx-ext/weights.bin" "$stage/onnx-ext/weights.bin"
	reload onnx-ext
	change onnx-inline "$repo/onnx-inline/model.onnx" "$stage/onnx-inline/model.onnx"
	reload onnx-inline ;;
*)	echo "SKIP (part): python3 cannot import onnx: model.onnx and its external data are not tested" ;;
esac
change fashion-mlp "$repo/fashion-mlp/model.safetensors" "$stage/fashion-mlp/new.safetensors"
# The shm clients' references are the old files' answers: they stop before the load.
touch "$tmp/stop-shm"
for p in $shm_pids; do wait "$p" || fail "an shm client failed: $(grep -v ' 0 wrong' "$tmp"/shm*.log | head -n 5)"; done
[ "$(cat "$tmp"/shm*.log | grep -vc '100 requests, 0 wrong')" = 0 ] || fail "an shm client saw a wrong answer"
runs=$(cat "$tmp"/shm*.log | grep -c '100 requests, 0 wrong')
echo "ok: shm clients: $runs runs of 100 requests, every answer right"
reload fashion-mlp

# --- a file being written is not loaded until it is complete and left alone ------------------------
f="$repo/fashion-mlp/model.safetensors"
loads=$(log_count "model 'fashion-mlp' reloaded")
changing="model 'fashion-mlp' version 1: its files are still changing"
rm -f "$tmp/stop-writer"
rm -f "$tmp/writing"
( : >"$f"; while [ ! -f "$tmp/stop-writer" ]; do
	head -c 4096 "$stage/fashion-mlp/new2.safetensors" >>"$f"; : >"$tmp/writing"; sleep 0.1; done ) &
writer=$!
background="$background $writer"
# The rescan must come after the writer has begun (a SIGHUP before it sees the old, settled file).
wait_for "[ -f \"$tmp/writing\" ] && echo yes" yes
kill -HUP "$daemon_pid"
wait_for "log_count \"$changing\"" 1
# Rescans while it grows (SIGHUPs, and the daemon's own look after each interval) leave it alone.
for k in 1 2 3; do
	sleep 2
	kill -HUP "$daemon_pid"
done
sleep 2
touch "$tmp/stop-writer"
wait "$writer"
[ "$(log_count "model 'fashion-mlp' reloaded")" = "$loads" ] || fail "a rescan loaded a file being written"
[ "$(log_count "model 'fashion-mlp' version 1 not loaded")" = 0 ] || fail "a rescan tried to load a file being written"
still fashion-mlp new "rescans while its file was being written"
# Complete now: one SIGHUP, and the daemon loads it once it has been left alone for the settle interval.
cp "$stage/fashion-mlp/new2.safetensors" "$f" || exit 99
kill -HUP "$daemon_pid"
wait_for "log_count \"model 'fashion-mlp' reloaded\"" $((loads + 1))
[ "$(log_count "$changing")" = 1 ] || fail "'$changing' logged $(log_count "$changing") times, not once"
[ "$(log_count "model 'fashion-mlp' version 1 not loaded")" = 0 ] || fail "a rescan tried to load a partial file"
answer fashion-mlp new2 >"$tmp/ref/fashion-mlp.new2" || fail_or_died "after the SIGHUP's load, not the newer files'"
echo "ok: a file being written was left alone by the rescans; once complete, one SIGHUP loaded it"

# --- every request answered, each with the files of its moment -----------------------------------
touch "$tmp/stop"
wait "$http_clients" || fail "HTTP requests failed: $(head -c 2000 "$tmp/failed.log")"
cat "$tmp/http.log"
refs=
for m in $models; do
	for g in old new new2; do
		[ -f "$tmp/ref/$m.$g" ] && refs="$refs $m:$g:$(cat "$tmp/ref/$m.$g")"
	done
done
# shellcheck disable=SC2086
"$PY" "$clients" check "$tmp" $refs || fail "an HTTP answer was not its model's files' of the moment"
stop_daemon
echo "PASS: test_file_change"
