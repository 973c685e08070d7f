#!/bin/sh
# gpu_instances.sh: ResNet-50 throughput through the daemon with one instance, two instances on two GPUs,
# two instances on one GPU and device = auto's default placement, on the GPU machine, from the repository root:
#     client/bench/gpu_instances.sh [BUILD_DIR [PYTHON [OUTDIR]]]   (defaults: _g, python3, gpu-instances)
# PYTHON needs torch and onnx (tests/helpers/onnx_reference.py exports ResNet-50 with random weights, BatchNorm
# folded).  One daemon (--device=auto) serves every configuration as its own model, so the runs alternate in
# one sitting:
#   one       instance_group count 1 on cuda:0
#   two_gpus  count 1 on cuda:0 and cuda:1 (only with two GPUs or more)
#   two_same  count 2 on cuda:0
#   auto      no instance_group: device = auto's placement (one instance on every GPU)
# Each run is inferd-bench over shared memory: CONCURRENCY (16) connections of ROWS (8) rows with DEPTH (2)
# requests outstanding, DURATION (5) s after 2 s of warm-up; MAX_BATCH (16) is every model's max_batch_size,
# PRECISION (fp32) its precision.  RUNS overrides the order (default: one two_gpus two_same auto one two_gpus,
# without two_gpus on one GPU).  Writes OUTDIR/bench_<n>_<model>.txt, OUTDIR/daemon.log, OUTDIR/busy.txt
# (inferd_model_instance_busy_seconds) and OUTDIR/summary.txt: rows/s per run and each model's mean over
# one's mean.  Exits 1 when the export, the daemon or a run fails; the issue's target (two GPUs >= 1.8 x one
# instance) is reported, not enforced.
build=${1:-_g}
py=${2:-python3}
out=${3:-gpu-instances}
max_batch=${MAX_BATCH:-16}
precision=${PRECISION:-fp32}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
runs=${RUNS:-}
if [ -z "$runs" ]; then
	if [ "${gpus:-0}" -ge 2 ]; then runs="one two_gpus two_same auto one two_gpus"; else runs="one two_same auto one two_same"; fi
fi
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
work=$(mktemp -d) || exit 1
daemon=
trap '[ -z "$daemon" ] || kill "$daemon" 2>/dev/null; rm -rf "$work"' EXIT
echo "GPUs: ${gpus:-0}; runs: $runs"

"$py" tests/helpers/onnx_reference.py --out "$work/src" --model resnet50 --opset 17 --batch 1 --bn fold \
	>"$out/export.log" 2>&1 || { echo "FAIL: exporting ResNet-50 (see $out/export.log)"; exit 1; }
# model NAME [INSTANCE_GROUP_JSON_MEMBER]
model() {
	mkdir -p "$work/repo/$1" && cp "$work/src/resnet50/model.onnx" "$work/repo/$1/" || exit 1
	printf '{"platform": "onnx", "max_batch_size": %s, "precision": "%s", %s "dynamic_batching": {"max_queue_delay_us": 2000}}\n' \
		"$max_batch" "$precision" "$2" >"$work/repo/$1/model.json"
}
model one '"instance_group": [{"count": 1, "devices": "cuda:0"}],'
[ "${gpus:-0}" -lt 2 ] || model two_gpus '"instance_group": [{"count": 1, "devices": "cuda:0,cuda:1"}],'
model two_same '"instance_group": [{"count": 2, "devices": "cuda:0"}],'
model auto ''

"$build/inferd" --device=auto --model_repository="$work/repo" --http_port=0 --port-file="$work/port" \
	--shm_socket="$work/sock" >"$out/daemon.log" 2>&1 &
daemon=$!
i=0
until [ -s "$work/port" ]; do
	i=$((i + 1))
	kill -0 "$daemon" 2>/dev/null && [ $i -le 3000 ] || { echo "FAIL: the daemon did not come up (see $out/daemon.log)"; exit 1; }
	sleep 0.2
done
url=http://127.0.0.1:$(cat "$work/port")
grep "loaded (version" "$out/daemon.log" | sed 's/.*model /model /; s/ (1 inputs.*max batch/: max batch/; s/ arena [0-9]* bytes,//; s/; device memory.*//'

rc=0 n=0
: >"$out/summary.txt"
for m in $runs; do
	n=$((n + 1))
	f="$out/bench_${n}_$m.txt"
	"$build/client/bench/inferd-bench" --socket="$work/sock" --url="$url" --model="$m" \
		--concurrency="${CONCURRENCY:-16}" --rows="${ROWS:-8}" --async-depth="${DEPTH:-2}" \
		--duration="${DURATION:-5}" --warmup=2 --label="$m" >"$f" 2>&1 || { echo "FAIL: run $n ($m), see $f"; rc=1; }
	rows=$(sed -n 's/.*throughput.* \([0-9.]*\) rows\/s.*/\1/p' "$f")
	echo "run $n $m ${rows:-?} rows/s; $(grep -E 'latency us|server batch' "$f" | tr -s ' ' | tr '\n' ';')" | tee -a "$out/summary.txt"
done
curl -s "$url/metrics" | grep '^inferd_model_instance_busy_seconds' >"$out/busy.txt"
cat "$out/busy.txt"
kill "$daemon" && wait "$daemon"
daemon=
# Each model's mean rows/s over one's mean.
awk '$1 == "run" && $4 != "?" { s[$3] += $4; c[$3]++ }
	END { if (!c["one"]) exit; base = s["one"] / c["one"];
		for (m in s) printf "SUMMARY %s %.1f rows/s = %.2f x one instance\n", m, s[m] / c[m], s[m] / c[m] / base }' \
	"$out/summary.txt" | sort | tee -a "$out/summary.txt"
exit $rc
