#!/bin/bash
# run-gpu.sh OUTDIR [BUILDDIR]: the benchmark sweep on a GPU (targets in docs/BENCHMARKS.md), every target a
# ratio measured in the same run.
#
# BUILDDIR (default $BUILD) is a tree configured --with-cuda and built: inferd,
# client/bench/inferd-bench, inferd-bench-engine and bench-http-baseline.  The script starts its
# own daemon with --device=${DEVICE:-cuda:0} on a free port and a private socket, writes one
# JSON file per point into OUTDIR, then OUTDIR/summary.md and, with matplotlib, the plots.
# It needs no network.  About 3 minutes with the defaults (under 6 in any case).
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

log "overlap: 64 MiB in and about as much compute, one client against two (own streams)"
"$PYTHON" "$src/client/bench/make_models.py" "$tmp/wide-models" --wide
start_daemon wide "$tmp/wide-models" "$DEVICE"
engine engine-wide --engine="$tmp/wide-models/wide" --device="$DEVICE" --rows=256
bench overlap-c1 --socket="$daemon_sock" --url="$daemon_url" --model=wide --input-bytes=64M
bench overlap-c2 --socket="$daemon_sock" --url="$daemon_url" --model=wide --input-bytes=64M \
	--concurrency=2
stop_pid "$daemon_pid"

"$PYTHON" "$src/client/bench/summarize.py" "$out" | tee "$out/summary.md"
"$PYTHON" "$src/client/bench/plot.py" "$out" || log "warning: plot.py failed"
log "results in $out"
