#!/bin/sh
# test_precision_check.sh: a model served at fp16 or bf16 is compared with itself at FP32 when it loads,
# and the figure is in its statistics.  Two ONNX models with random weights, each at fp16 and at bf16: one
# with ordinary outputs, one whose outputs are about 1e-14 (below fp16's smallest value, so fp16 answers
# would be exact zeros; bfloat16 has FP32's range).  On the CPU backend (which computes FP32 at every
# precision) all measure 0; on a GPU (INFERD_TEST_DEVICE=cuda:N) plain at fp16 stays under 1e-2, tiny at
# fp16 measures about 1 with a warning naming its output, and both at bf16 stay under 8e-2 (fp16's 1e-2
# times 8: bfloat16 keeps 8 significant bits to FP16's 11), which bfloat16 read as FP16 would not.
# Skips (77) without python3's onnx and numpy.
set -u

PY=${PYTHON3:-/usr/bin/python3}
[ -x "$PY" ] || { echo "SKIP: no python3"; exit 77; }
"$PY" -c "import onnx, numpy" 2>/dev/null || { echo "SKIP: python3 cannot import onnx and numpy"; exit 77; }
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-precision.XXXXXX") || exit 99
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*"
	[ -f "$tmp/daemon.log" ] && tail -n 30 "$tmp/daemon.log"
	exit 1
}

"$PY" - "$tmp/models" <<'PYEOF' || fail "making the models"
import json, os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

for name, scale, precision in (("plain", 1.0, "fp16"), ("tiny", 1e-14, "fp16"), ("plain_bf16", 1.0, "bf16"),
                               ("tiny_bf16", 1e-14, "bf16")):
    rng = np.random.default_rng(7 if scale == 1.0 else 8)
    d = os.path.join(sys.argv[1], name)
    os.makedirs(d)
    w1 = numpy_helper.from_array((rng.standard_normal((32, 64)) / 6).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((64, 10)) * scale / 8).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], [w1, w2])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump({"precision": precision, "max_batch_size": 4}, f)
PYEOF

device=${INFERD_TEST_DEVICE:-cpu}
"$top_builddir/inferd" --device="$device" --model_repository="$tmp/models" --http_port=0 \
    --port-file="$tmp/port" --shm_socket="$tmp/sock" --log_level=info >"$tmp/daemon.log" 2>&1 &
pid=$!
i=0
until [ -s "$tmp/port" ] && [ -S "$tmp/sock" ]; do
	i=$((i + 1))
	[ $i -le 1200 ] || fail "the daemon did not come up within 120 s"
	kill -0 "$pid" 2>/dev/null || fail "the daemon exited at start"
	sleep 0.1
done
port=$(cat "$tmp/port")

# Each model's stats carry its precision ($2) and the error measured at load.
error_of() {
	curl -sf "http://127.0.0.1:$port/v2/models/$1/stats" | "$PY" -c '
import json, sys
p = json.load(sys.stdin)["model_stats"][0]["precision"]
assert p["mode"] == sys.argv[1], p
print("null" if p["relative_error"] is None else p["relative_error"])' "$2"
}
plain=$(error_of plain fp16) || fail "stats of plain"
tiny=$(error_of tiny fp16) || fail "stats of tiny"
plain_bf16=$(error_of plain_bf16 bf16) || fail "stats of plain_bf16"
tiny_bf16=$(error_of tiny_bf16 bf16) || fail "stats of tiny_bf16"
echo "relative error against FP32 on $device: fp16 plain $plain, tiny $tiny; bf16 plain $plain_bf16, tiny $tiny_bf16"
grep -q "model 'plain' version 1: at fp16 its outputs differ from FP32 by" "$tmp/daemon.log" ||
	fail "no precision line for plain in the log"
grep -q "model 'plain_bf16' version 1: at bf16 its outputs differ from FP32 by" "$tmp/daemon.log" ||
	fail "no precision line for plain_bf16 in the log"
case $device in
cpu)
	for e in "$plain" "$tiny" "$plain_bf16" "$tiny_bf16"; do
		[ "$e" = "0.0" ] || fail "the CPU backend computes FP32: want 0 for every model"
	done
	;;
*)
	"$PY" -c "import sys; sys.exit(not (0 <= $plain < 1e-2 and $tiny > 0.5))" ||
		fail "want plain under 1e-2 and tiny near 1 (its fp16 outputs underflow)"
	grep -q "inferd warn: model 'tiny' version 1: at fp16 its outputs differ from FP32 by .*output 'y'" \
	    "$tmp/daemon.log" || fail "no warning for tiny"
	"$PY" -c "import sys; sys.exit(not (0 < $plain_bf16 < 8e-2 and 0 < $tiny_bf16 < 8e-2))" ||
		fail "want both bf16 models above 0 (bfloat16 rounds) and under 8e-2 (bfloat16 keeps FP32's range)"
	;;
esac
kill -TERM "$pid"
wait "$pid" || fail "the daemon exited with status $?"
pid=
echo "PASS: test_precision_check.sh"
