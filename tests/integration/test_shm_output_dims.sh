#!/bin/sh
# test_shm_output_dims.sh: outputs whose dims the inputs' dims compute, over shared memory.  A Conv over
# [N, 2, T] with stride 2 and pads 1 ([N, 3, ceil(T/2)], metadata -2) beside an output of [N, 2, T], and a
# Reshape that needs 2T to be a multiple of 4, served from ONNX by a private daemon: inferctl, the C client
# (inferd_output_dims, inferd_run and inferd_submit with outputs given without dims) and the Python client
# give exactly those shapes and onnxruntime's values at T = 1, 4, 7 and 64; T = 3 is refused through each
# with the daemon's reason naming the Reshape's node; a reload that changes the shapes is followed
# (tests/helpers/shm_output_dims.py has the checks).  Skips (77) without onnx, onnxruntime or numpy.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

for mod in numpy onnx onnxruntime; do
	"$PY" -c "import $mod" 2>/dev/null || { echo "SKIP: $PY cannot import $mod"; exit 77; }
done
lib="$top_builddir/client/lib/.libs/libinferd.so.0"
[ -f "$lib" ] || { echo "SKIP: no shared libinferd in this build ($lib)"; exit 77; }
# Under the sanitizers the Python client's libinferd needs their runtimes loaded first.
preload=""
if grep -q '^SANITIZER_FLAGS = .*fsanitize=address' "$top_builddir/Makefile"; then
	for rt in libasan.so libubsan.so; do
		f=$(${CC:-cc} -print-file-name=$rt)
		[ -f "$f" ] || { echo "SKIP: sanitizer build, and $rt is not found"; exit 77; }
		preload="$preload $f"
	done
fi

"$PY" "$top_srcdir/tests/helpers/make_conv_dims_onnx.py" "$tmp/models" || fail "make_conv_dims_onnx.py"
start_daemon --model_repository="$tmp/models" --model_control_mode=explicit --load_model=convdims,split4
grep -q "model 'convdims' loaded" "$tmp/daemon.log" || fail "model 'convdims' did not load"

# The metadata cannot tell y's last dim: it is computed (ceil(T/2)), not equal to an input dim.
"$top_builddir/client/tools/inferctl" --socket="$sock" model convdims >"$tmp/meta.txt" || fail "inferctl model"
grep -qx 'output: y FP32 \[-1, 3, -1\]' "$tmp/meta.txt" || fail "convdims metadata: $(cat "$tmp/meta.txt")"

(cd "$tmp" && env PYTHONPATH="$top_srcdir/client/python" PYTHONDONTWRITEBYTECODE=1 INFERD_LIB="$lib" \
    LD_PRELOAD="${preload# }" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    "$PY" "$top_srcdir/tests/helpers/shm_output_dims.py" "$sock" "http://127.0.0.1:$port" \
    "$top_builddir/client/tools/inferctl" "$top_builddir/tests/helpers/ipc_client" "$tmp/models" "$tmp")
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "shm_output_dims.py"

# A T over the input's maximum is refused before anything is sent, naming the bound.
"$PY" -c 'import numpy as np, sys; np.zeros((1, 2, 65), dtype=np.float32).tofile(sys.argv[1])' "$tmp/x65.bin"
"$top_builddir/tests/helpers/ipc_client" "$sock" outdims convdims "$tmp/x65.bin" "$tmp/o.bin" 1 2 65 \
    >"$tmp/x65.out" 2>&1 && fail "T = 65 was answered"
grep -q "refused inferd_output_dims: invalid argument: input 'x' dim 2 is 65, the model's maximum is 64" \
    "$tmp/x65.out" || fail "T = 65: $(cat "$tmp/x65.out")"
echo "ok: T = 65 refused: $(head -n 1 "$tmp/x65.out")"

grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/daemon.log" && fail "sanitizer report in the daemon"
wait_for daemon_regions 0
stop_daemon
echo "PASS: test_shm_output_dims"
