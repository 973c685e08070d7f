#!/bin/sh
# test_cpu_kernels_ort.sh: random one-node ONNX models run by onnxruntime (cpu_kernels_ref.py), then by the CPU kernels.
# Skips (77) when /usr/bin/python3 (or $PYTHON3) cannot import onnx and onnxruntime.
set -u
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
PY=${PYTHON3:-/usr/bin/python3}
seed=${CPU_KERNELS_SEED:-1234}
dir=$(mktemp -d "${TMPDIR:-/tmp}/inferd-cpu-ort-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

"$PY" "$srcdir/tests/helpers/cpu_kernels_ref.py" "$dir" "$seed"
rc=$?
if [ $rc -eq 77 ]; then
	echo "SKIP: onnx/onnxruntime not importable by $PY"
	exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: cpu_kernels_ref.py exited $rc"; exit 1; }
"$builddir/tests/unit/test_cpu_kernels_ort" "$dir"
