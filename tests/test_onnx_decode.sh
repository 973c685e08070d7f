#!/bin/sh
# test_onnx_decode.sh: generate the ONNX decoder's cases (tests/make_onnx_cases.py), then check the decoder on them.
set -u

python=/usr/bin/python3
test -x "$python" || { echo "SKIP: $python not found"; exit 77; }
"$python" -c 'import onnx, numpy' 2>/dev/null || { echo "SKIP: the onnx and numpy Python packages are needed"; exit 77; }
dir=${top_builddir:?}/tests/onnx-cases
rm -rf "$dir"
"$python" "${top_srcdir:?}/tests/make_onnx_cases.py" "$dir" || exit 99
"$top_builddir/tests/test_onnx_decode" "$dir"
rc=$?
test $rc -eq 0 && rm -rf "$dir"
exit $rc
