#!/bin/sh
# test_cpu_conv_odd.sh: the convolution family at odd geometries (tests/helpers/make_conv_odd_onnx.py: groups,
# depthwise, dilations, strides, asymmetric pads, 1-D and 3-D, ConvTranspose with output_padding, fused bias,
# residual and activations, windowed pools with ceil_mode) served through the engine on the CPU backend
# (model_load + model_exec_run: oneDNN's primitives where the build has it) at batch sizes 1 and 3, against
# onnxruntime.  Skips (77) without onnx/onnxruntime.
set -u
py=${PYTHON3:-/usr/bin/python3}
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
dir="$builddir/tests/conv_odd"
[ -x "$py" ] || { echo "SKIP: no python3"; exit 77; }
rm -rf "$dir" && mkdir -p "$dir" || exit 1
"$py" "$srcdir/tests/helpers/make_conv_odd_onnx.py" "$dir" >"$dir.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: $py cannot import onnx, onnxruntime and numpy"; exit 77; }
[ $rc -eq 0 ] || { tail -n 20 "$dir.log"; echo "FAIL: making the cases"; exit 1; }
# shellcheck disable=SC2046
exec env INFERD_TEST_DEVICE=cpu "$builddir/tests/helpers/onnx_engine_run" $(grep manifest.json "$dir.log")
