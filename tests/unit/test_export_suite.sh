#!/bin/sh
# test_export_suite.sh: models users bring (a GPT-style decoder with a torch.triu mask, LSTM/GRU classifiers and taggers,
# transformers' BertModel with its default attention, swin's shifted-window block, GroupNorm/InstanceNorm2d with einsum,
# one_hot and scatter, transformers' CLIPTextModel pooling by ArgMax, torch's repeat as Tile), exported by torch.onnx.export at
# opsets 14 and 17 (export_suite.py), loaded by the engine and compared with onnxruntime at several input shapes.
# A refusal fails, but for the exports listed as known refusals, which must be refused naming the op.
# Skips without torch, transformers, torchvision, onnx or onnxruntime in /usr/bin/python3.
# INFERD_TEST_DEVICE=cuda:0 runs the same comparisons on the GPU.
py=${PYTHON3:-/usr/bin/python3}
[ -x "$py" ] || { echo "skip: no $py"; exit 77; }
"$py" -c "import torch, torchvision, transformers, onnx, onnxruntime" 2>/dev/null || { echo "skip: the exporters are not importable by $py"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/inferd-export-suite-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
OMP_NUM_THREADS=2 "$py" "${top_srcdir:-.}/tests/helpers/export_suite.py" "$dir" >"$dir/export.log" 2>&1
rc=$?
grep -v "warn" "$dir/export.log" | tail -n 5
[ $rc -eq 0 ] || { [ $rc -eq 77 ] && exit 77; exit 1; }
# Every model of the list must export: one the exporter cannot handle is a change in the suite, not a pass.
[ ! -s "$dir/not_exportable.txt" ] || { cat "$dir/not_exportable.txt"; exit 1; }
"${top_builddir:-.}/tests/helpers/onnx_node_engine" "$dir"
