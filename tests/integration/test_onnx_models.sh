#!/bin/sh
# test_onnx_models.sh: whole models exported from PyTorch with random weights (tests/helpers/onnx_reference.py:
# LeNet-5, ResNet-18, MobileNetV2, MobileNetV3-small (opset 13), GoogLeNet (opset 17, 96 px), the 2-layer TransformerEncoder with an embedding, a tiny ViT,
# a BERT-style encoder whose attention is written as transformers' eager BERT (per-head views and transposes); opsets 13 and 17),
# (its attention fused into one node: checked from the profile) served through the engine on the CPU backend, or the GPU named by INFERD_TEST_DEVICE (model_load + model_exec_run) at batch sizes 1, 3, 8 and, for the
# transformer, sequence lengths 7 and 33, and compared with onnxruntime. Skips (77) without torch/onnx/onnxruntime.
set -u
py=${PYTHON3:-/usr/bin/python3}
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
dir="$builddir/tests/onnx_models"
gen="$srcdir/tests/helpers/onnx_reference.py"
[ -x "$py" ] || { echo "SKIP: no python3"; exit 77; }
"$py" -c 'import torch, onnx, onnxruntime' 2>/dev/null || { echo "SKIP: $py cannot import torch, onnx and onnxruntime"; exit 77; }
mkdir -p "$dir" || exit 1

# make NAME OPSET SEQ MODEL_JSON: export once per generator version into $dir/NAME-oOPSET[-sSEQ]/MODEL
make_case() {
	name=$1 opset=$2 seq=$3 json=$4
	out="$dir/$name-o$opset${seq:+-s$seq}"
	if [ ! -f "$out/$name/manifest.json" ] || [ "$gen" -nt "$out/$name/manifest.json" ]; then
		rm -rf "$out" && mkdir -p "$out" || exit 1
		if ! "$py" "$gen" --out "$out" --model "$name" --opset "$opset" --batch 1 3 8 ${seq:+--seq $seq} \
		    >"$out.log" 2>&1; then
			tail -n 20 "$out.log"
			echo "FAIL: exporting $name at opset $opset"
			exit 1
		fi
	fi
	printf '%s\n' "$json" >"$out/$name/model.json"
	manifests="$manifests $out/$name/manifest.json"
}

manifests=
for opset in 13 17; do
	make_case lenet5 $opset "" '{"platform": "onnx", "max_batch_size": 8}'
	make_case resnet18 $opset "" '{"platform": "onnx", "max_batch_size": 8}'
	make_case mobilenetv2 $opset "" '{"platform": "onnx", "max_batch_size": 8}'
	make_case vit_tiny $opset "" '{"platform": "onnx", "max_batch_size": 8}'
	# Inception blocks: Concats of Conv outputs along the channels, read by Convs and a max pool.
	[ "$opset" = 17 ] && make_case googlenet $opset "" '{"platform": "onnx", "max_batch_size": 8}'
	# Below opset 14 torch writes HardSwish as x * HardSigmoid(x): fused back into one node, then into the Conv.
	[ "$opset" = 13 ] && make_case mobilenetv3 $opset "" '{"platform": "onnx", "max_batch_size": 8}'
	# Variable dims: a plan (and on CUDA a graph) per exact shape on first use; plan_cache 2 makes them evict.
	for seq in 7 33; do
		make_case transformer $opset $seq '{"platform": "onnx", "max_batch_size": 8, "max_dims": {"tokens": [64]}, "plan_cache": 2}'
	done
	# An additive padding mask on the attention scores (fused with them into one attention node).
	make_case transformer_fmask $opset 33 '{"platform": "onnx", "max_batch_size": 8, "max_dims": {"tokens": [64], "padding_mask": [64]}}'
	# Per-head views transposed around the attention: the transposes become the fused node's strides (seq-major).
	for seq in 7 33; do
		make_case bert_heads $opset $seq '{"platform": "onnx", "max_batch_size": 8, "max_dims": {"input_ids": [64], "attention_mask": [64]}}'
	done
done
# shellcheck disable=SC2086
"$builddir/tests/helpers/onnx_engine_run" $manifests || exit 1

# The exported attention (MatMul, scale, mask, Softmax, MatMul) runs as one fused node: its profile names it
# (on a GPU, one whose cuDNN is 9.8 or later: the CUDA backend fuses only then).
bench="$builddir/client/bench/inferd-bench-engine"
if [ -x "$bench" ]; then
	for m in transformer-o17-s33/transformer transformer_fmask-o17-s33/transformer_fmask vit_tiny-o17/vit_tiny; do
		"$bench" --engine="$dir/$m" --device="${INFERD_TEST_DEVICE:-cpu}" --rows=2 --profile=1 >"$dir/profile.txt" 2>&1 ||
			{ cat "$dir/profile.txt"; echo "FAIL: profiling $m"; exit 1; }
		grep -q '^ *Attention ' "$dir/profile.txt" || { cat "$dir/profile.txt"; echo "FAIL: $m: the attention was not fused"; exit 1; }
	done
	echo "PASS: the attention of the transformer, the masked transformer and the ViT ran fused"
	"$bench" --engine="$dir/bert_heads-o17-s33/bert_heads" --device="${INFERD_TEST_DEVICE:-cpu}" --rows=2 --profile=1 \
	    >"$dir/profile.txt" 2>&1 || { cat "$dir/profile.txt"; echo "FAIL: profiling bert_heads"; exit 1; }
	if ! grep -q '^ *Attention ' "$dir/profile.txt" || grep -q '^ *Transpose ' "$dir/profile.txt"; then
		cat "$dir/profile.txt"
		echo "FAIL: bert_heads: the attention was not fused with its head transposes"
		exit 1
	fi
	echo "PASS: bert_heads' head transposes ran as strides of its fused attention"
	"$bench" --engine="$dir/mobilenetv3-o13/mobilenetv3" --device="${INFERD_TEST_DEVICE:-cpu}" --rows=2 --profile=1 \
	    >"$dir/profile.txt" 2>&1 || { cat "$dir/profile.txt"; echo "FAIL: profiling mobilenetv3"; exit 1; }
	grep -q '^ *Unary ' "$dir/profile.txt" && { cat "$dir/profile.txt"; echo "FAIL: mobilenetv3: a HardSwish was not fused"; exit 1; }
	echo "PASS: mobilenetv3's HardSwish (HardSigmoid and Mul at opset 13) ran fused into its Convs"
fi
