#!/bin/bash
# run-gpu.sh OUTDIR [BUILDDIR]: the benchmark sweep on a GPU (targets in docs/BENCHMARKS.md), every target a
# ratio measured in the same run.
#
# BUILDDIR (default $BUILD) is a tree configured --with-cuda and built: inferd,
# client/bench/inferd-bench, inferd-bench-engine and bench-http-baseline.  The script starts its
# own daemon with --device=${DEVICE:-cuda:0} on a free port and a private socket, writes one
# JSON file per point into OUTDIR, then OUTDIR/summary.md and, with matplotlib, the plots.
# It needs no network.  About 4 minutes with the defaults (under 7 in any case).
#
#   DEVICE=cuda:0                           the GPU (for the daemon and --limits)
#   BENCH_DURATION=2 BENCH_WARMUP=0.5       seconds per inferd-bench point
#   WRK_DURATION=3 WRK_THREADS=4 WRK_CONNECTIONS=32   WRK=wrk (the HTTP row is skipped without it)
#   PYTHON=python3                          a Python with PyTorch built for CUDA
#
# The points run-cpu.sh has (common.sh's sweeps, the binary-tensor-against-JSON HTTP points
# bin-json-r1/-r64 and bin-binary-r1/-r64 among them), and beyond them:
#   small-shm     1 row (3136 B) over shm, no batching window, against the limits: p50 and p99
#                 as ratios of the floor (4 KiB in + op + 4 KiB out + sync) of the same run
#   ingest-shm    64 MiB a request over shm into the "ingest" model, against the limits:
#                 input GB/s as a ratio of pinned cudaMemcpyAsync at 64 MiB (a second daemon,
#                 since a 64 MiB model would leave the first one's HTTP pool one slot);
#                 ingest-shm-d2 the same with two requests in flight
#   overlap-c1/c2 a model whose 256-row batch computes about as long as its 64 MiB copy-in
#                 takes, from one client and from two: with two, the copy-in of one batch
#                 runs during the other's compute, so requests complete at the copy's rate
#   torch-gpu     PyTorch's raw model on the GPU, and with its copies
#   t-MODE-*      the shared-memory targets once per copy_mode (auto, dma, mapped), each its own
#                 daemon: t-MODE-c1 (1 client, 1 row, the shipped model: default config) and
#                 -c1-nodelay (max_queue_delay_us=0) against limits-small, -c64 (64 clients),
#                 -http-c1 (HTTP JSON, the same request), -ingest (64 MiB, 1 in flight) against
#                 limits-64m; limits-64k and limits-1m add the sizes between for the copy table.
#                 targets.py prints their rows, the ratios and the copy costs: OUTDIR/targets.md
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 OUTDIR [BUILDDIR]" >&2
	exit 2
fi
out=$1
build=$(cd "${2:-${BUILD:?give the build directory as \$2 or \$BUILD}}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda:0}
WRK_THREADS=${WRK_THREADS:-4}
for f in "$build/inferd" "$build/client/bench/inferd-bench" "$build/client/bench/inferd-bench-engine" \
	"$build/client/bench/bench-http-baseline"; do
	[ -x "$f" ] || { echo "$0: $f is missing: give the build directory (make first)" >&2; exit 2; }
done
if ! "$build/inferd" --version | grep -q '^cuda: yes'; then
	echo "$0: $build was configured without CUDA (configure --with-cuda)" >&2
	exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-bench.XXXXXX")
. "$src/client/bench/common.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

"$PYTHON" "$src/client/bench/make_models.py" "$tmp/models"
"$PYTHON" "$src/client/bench/make_models.py" "$tmp/ingest-models" --ingest
# The device's limits for the two request sizes measured against them: 64 MiB (the ingest
# runs) and one fashion-mlp row of 3136 bytes (the small-request runs).
limits limits-64m "$DEVICE" 64M
limits limits-small "$DEVICE" 3136
limits limits-64k "$DEVICE" 64K
limits limits-1m "$DEVICE" 1M

start_daemon gpu "$tmp/models" "$DEVICE"
url=$daemon_url sock=$daemon_sock pid=$daemon_pid
idle_cpu idle-cpu "$pid" 2

log "small request over shm against the device's floor"
# shellcheck disable=SC2046
bench small-shm --socket="$sock" --url="$url" --model=fashion-mlp-nodelay $(limits_from limits-small)
# shellcheck disable=SC2046
bench small-shm-shipped --socket="$sock" --url="$url" --model=fashion-mlp $(limits_from limits-small)
sweeps "$url" "$sock"
engine_points "$DEVICE"
metrics_snapshot metrics-end "$url"

log "PyTorch on the same GPU: the raw model, and behind Python's http.server"
if "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	"$PYTHON" "$src/client/bench/torch_peer.py" --device=cuda --json --seconds=0.3 \
		--check="$src/docs/examples/fashion-request.json" >"$out/torch-gpu.json" ||
		log "warning: torch_peer.py failed"
	diy_http cuda
else
	log "no CUDA PyTorch in $PYTHON: the PyTorch comparisons are skipped"
fi
stop_pid "$pid"

log "large-tensor ingest: 64 MiB a request over shm"
start_daemon ingest "$tmp/ingest-models" "$DEVICE"
# shellcheck disable=SC2046
bench ingest-shm --socket="$daemon_sock" --url="$daemon_url" --model=ingest --input-bytes=64M \
	$(limits_from limits-64m)
# shellcheck disable=SC2046
bench ingest-shm-d2 --socket="$daemon_sock" --url="$daemon_url" --model=ingest --input-bytes=64M \
	--async-depth=2 $(limits_from limits-64m)
stop_pid "$daemon_pid"

# target_points MODE: the issue-18 target rows with copy_mode=MODE (a daemon for the demo model, one
# for the ingest model), into t-MODE-*.json.
target_points() {
	local mode=$1
	log "shared-memory targets with copy_mode=$mode"
	start_daemon "t-$mode" "$tmp/models" "$DEVICE" --copy-mode="$mode"
	# shellcheck disable=SC2046
	bench "t-$mode-c1" --socket="$daemon_sock" --url="$daemon_url" --model=fashion-mlp $(limits_from limits-small)
	# shellcheck disable=SC2046
	bench "t-$mode-c1-nodelay" --socket="$daemon_sock" --url="$daemon_url" --model=fashion-mlp-nodelay \
		$(limits_from limits-small)
	bench "t-$mode-c64" --socket="$daemon_sock" --url="$daemon_url" --model=fashion-mlp --concurrency=64
	bench "t-$mode-http-c1" --protocol=http --url="$daemon_url" --model=fashion-mlp
	stop_pid "$daemon_pid"
	start_daemon "t-$mode-ingest" "$tmp/ingest-models" "$DEVICE" --copy-mode="$mode"
	# shellcheck disable=SC2046
	bench "t-$mode-ingest" --socket="$daemon_sock" --url="$daemon_url" --model=ingest --input-bytes=64M \
		$(limits_from limits-64m)
	stop_pid "$daemon_pid"
}
for mode in auto dma mapped; do
	target_points "$mode"
done

log "overlap: 64 MiB in and about as much compute, one client against two (own streams)"
"$PYTHON" "$src/client/bench/make_models.py" "$tmp/wide-models" --wide
start_daemon wide "$tmp/wide-models" "$DEVICE"
engine engine-wide --engine="$tmp/wide-models/wide" --device="$DEVICE" --rows=256
bench overlap-c1 --socket="$daemon_sock" --url="$daemon_url" --model=wide --input-bytes=64M
bench overlap-c2 --socket="$daemon_sock" --url="$daemon_url" --model=wide --input-bytes=64M \
	--concurrency=2
stop_pid "$daemon_pid"

"$PYTHON" "$src/client/bench/summarize.py" "$out" | tee "$out/summary.md"
"$PYTHON" "$src/client/bench/targets.py" "$out" | tee "$out/targets.md"
"$PYTHON" "$src/client/bench/plot.py" "$out" || log "warning: plot.py failed"
log "results in $out"
