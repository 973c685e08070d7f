#!/bin/sh
# test_model_file_errors.sh: a broken model file is refused with a message that says what is wrong
# with which file and what to do: an empty model directory, a text file named model.onnx (a Git
# LFS pointer), a truncated model.onnx and an empty one.  The daemon serves the good model beside them.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

cnn="$top_srcdir/conf/models/fashion-cnn/model.onnx"
mkdir -p "$tmp/models/empty" "$tmp/models/text" "$tmp/models/trunc" "$tmp/models/zero" || exit 99
cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/fashion-mlp" || exit 99
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n' >"$tmp/models/text/model.onnx" || exit 99
head -c 2000 "$cnn" >"$tmp/models/trunc/model.onnx" || exit 99
: >"$tmp/models/zero/model.onnx" || exit 99

start_daemon --model_repository="$tmp/models"
stop_daemon

expect() {	# expect MODEL TEXT...: the log line refusing MODEL holds every TEXT
	line=$(grep "model '$1' version 1 not loaded" "$tmp/daemon.log") || fail "$1: no line refuses it"
	shift
	for want in "$@"; do
		case $line in *"$want"*) ;; *) fail "no '$want' in: $line" ;; esac
	done
}
expect empty "$tmp/models/empty holds neither model.onnx nor model.json" "docs/MODELS.md"
expect text "$tmp/models/text/model.onnx is not a usable ONNX model" "text file" "git lfs pull"
expect trunc "$tmp/models/trunc/model.onnx is not a usable ONNX model" "truncated" "2000 bytes" "copy it again"
expect zero "$tmp/models/zero/model.onnx is not a usable ONNX model" "it is empty"
grep -q "model 'fashion-mlp' loaded" "$tmp/daemon.log" || fail "fashion-mlp did not load beside them"
echo "ok: each broken model file is refused with what is wrong and what to do"
exit 0
