#!/bin/sh
# test_onnx_import.sh: export the whole-model cases with PyTorch/onnxruntime (skip when they are missing), then run the C test.
py=${PYTHON3:-/usr/bin/python3}
dir="${top_builddir:-.}/tests/onnx_import_cases"
script="${top_srcdir:-.}/tests/helpers/make_onnx_import_cases.py"
[ -x "$py" ] || { echo "skip: no $py"; exit 77; }
mkdir -p "$dir" || exit 1
if [ ! -f "$dir/manifest.json" ] || [ "$script" -nt "$dir/manifest.json" ]; then
	"$py" "$script" "$dir" >"$dir/generate.log" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		tail -n 20 "$dir/generate.log"
		[ $rc -eq 77 ] && exit 77
		exit 1
	fi
fi
exec "${top_builddir:-.}/tests/unit/test_onnx_import" "$dir"
