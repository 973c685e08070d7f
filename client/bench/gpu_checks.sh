#!/bin/sh
# gpu_checks.sh: the ONNX-on-GPU checks of issue 12 in one go, on the GPU machine, from the repository root:
#     client/bench/gpu_checks.sh [BUILD_DIR [PYTHON]]     (defaults: _g, /opt/torch/.venv/bin/python3)
# Runs gpu_check_encoders.py (BERT-base, DistilBERT fp32 vs PyTorch, speed at batch 1 and 8),
# gpu_check_resnet_fp16.py (ResNet-50 fp16 top-1 agreement on 1,000 random images) and
# gpu_check_fashion.py (Fashion CNN fp16 vs fp32); prints each SUMMARY line; exits 1 if any check failed.
build=${1:-_g}
py=${2:-/opt/torch/.venv/bin/python3}
rc=0
for check in gpu_check_encoders.py gpu_check_resnet_fp16.py gpu_check_fashion.py; do
	echo "== $check"
	"$py" "client/bench/$check" --build "$build" --device cuda:0 || rc=1
done
exit $rc
