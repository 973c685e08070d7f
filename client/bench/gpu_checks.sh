#!/bin/sh
# gpu_checks.sh: the ONNX-on-GPU checks in one go, on the GPU machine, from the repository root:
#     client/bench/gpu_checks.sh [BUILD_DIR [PYTHON [OUTDIR]]]   (defaults: _g, /opt/torch/.venv/bin/python3, gpu-checks)
# Runs, in order (CHECKS="encoders resnet_fp16 fashion vision e2e" picks some, e.g. one per 10-minute slot):
#   encoders     gpu_check_encoders.py: BERT-base, DistilBERT (seq 128) fp32 and fp16 vs PyTorch fp32, speed at
#                batch 1, 8, 64 against PyTorch eager / CUDA graph (ENCODERS_ARGS adds options, e.g. --compile)
#   resnet_fp16  gpu_check_resnet_fp16.py: ResNet-50 fp16 top-1 agreement on 1,000 random images
#   fashion      gpu_check_fashion.py: Fashion CNN fp16 vs fp32
#   vision       gpu_check_vision.py: ResNet-50, MobileNetV3, EfficientNet-B0, ViT-B/16 (BatchNorm statistics
#                calibrated on random inputs): fp32 vs PyTorch fp32 within 1e-4 of the output scale at batch
#                1, 8, 64 (with the float64 noise floor), fp16 top-1 agreement >= 99 % on 1,000 random images,
#                speed of inferd's backend alone vs PyTorch eager and CUDA graph at batch 1, 8, 64, fp32 and
#                fp16; every figure in OUTDIR/vision.json (VISION_ARGS adds options); vision:MODEL (e.g.
#                vision:vit_b_16) checks one model into OUTDIR/vision-MODEL.json, to split the run into slots
#   e2e          gpu_e2e_shm.py: ResNet-50 fp16, 16 shm clients of one image through the daemon against the
#                engine alone at the mean batch the batcher formed (target >= 0.9 x), p50/p99 latency;
#                OUTDIR/e2e-shm.json, the daemon's log OUTDIR/e2e-daemon.log (E2E_ARGS adds options)
# DEVICE (default cuda:0) is inferd's device; DEVICE=cpu with small ENCODERS_ARGS/VISION_ARGS/E2E_ARGS is a dry run of the
# plumbing on a CPU build (see each script's --help).
# Then plot_models.py OUTDIR (PNG charts when PYTHON has matplotlib); prints each SUMMARY line; exits 1 if
# any check failed (a missed speed or end-to-end target is reported, not a failure).
build=${1:-_g}
py=${2:-/opt/torch/.venv/bin/python3}
out=${3:-gpu-checks}
checks=${CHECKS:-encoders resnet_fp16 fashion vision e2e}
device=${DEVICE:-cuda:0}
mkdir -p "$out" || exit 1
rc=0
for check in $checks; do
	echo "== $check"
	case $check in
	encoders)
		# shellcheck disable=SC2086
		"$py" client/bench/gpu_check_encoders.py --build "$build" --device "$device" --json "$out/encoders.json" \
			${ENCODERS_ARGS:-} || rc=1 ;;
	resnet_fp16 | fashion)
		"$py" "client/bench/gpu_check_$check.py" --build "$build" --device "$device" || rc=1 ;;
	vision)
		# shellcheck disable=SC2086
		"$py" client/bench/gpu_check_vision.py --build "$build" --device "$device" --json "$out/vision.json" \
			${VISION_ARGS:-} || rc=1 ;;
	vision:*)
		# shellcheck disable=SC2086
		"$py" client/bench/gpu_check_vision.py --build "$build" --device "$device" --models "${check#vision:}" \
			--json "$out/vision-${check#vision:}.json" ${VISION_ARGS:-} || rc=1 ;;
	e2e)
		# shellcheck disable=SC2086
		"$py" client/bench/gpu_e2e_shm.py --build "$build" --device "$device" --json "$out/e2e-shm.json" \
			--daemon-log "$out/e2e-daemon.log" ${E2E_ARGS:-} || rc=1 ;;
	*)
		echo "gpu_checks.sh: unknown check '$check' (encoders resnet_fp16 fashion vision vision:MODEL e2e)" >&2
		rc=1 ;;
	esac
done
if ls "$out"/*.json >/dev/null 2>&1; then
	"$py" client/bench/plot_models.py "$out" || echo "gpu_checks.sh: plot_models.py failed (no plots)" >&2
fi
exit $rc
