#!/bin/bash
# run-cpu.sh OUTDIR [BUILDDIR]: the benchmark sweep on the CPU backend (DESIGN §8).
#
# Starts its own daemon (--device=cpu) on a free port and a private socket, serving the
# demo model and its no-batching-window twin (make_models.py), and writes one JSON file
# per point into OUTDIR, then OUTDIR/summary.md (summarize.py) and plots (plot.py, when
# matplotlib is there).  BUILDDIR (default $BUILD, else the current directory) holds the
# built inferd and client/inferd-bench.  About 2 minutes with the defaults.
#
#   BENCH_DURATION=2 BENCH_WARMUP=0.5   seconds per inferd-bench point
#   WRK_DURATION=3 WRK_THREADS=1        wrk runs (the design's HTTP row: 2 cores, wrk beside)
#   PYTHON=/usr/bin/python3             the Python with PyTorch (Debian's python3-torch)
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 OUTDIR [BUILDDIR]" >&2
	exit 2
fi
out=$1
build=$(cd "${2:-${BUILD:-.}}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
WRK_THREADS=${WRK_THREADS:-1}
for f in "$build/inferd" "$build/client/inferd-bench" "$build/client/bench-http-baseline"; do
	[ -x "$f" ] || { echo "$0: $f is missing: give the build directory (make first)" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-bench.XXXXXX")
. "$src/client/bench/common.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

"$PYTHON" "$src/client/bench/make_models.py" "$tmp/models"
start_daemon cpu "$tmp/models" cpu
url=$daemon_url sock=$daemon_sock pid=$daemon_pid
idle_cpu idle-cpu "$pid" 2

log "latency and batching against concurrency (demo model, 1 row a request)"
for c in 1 2 4 8 16 32 64; do
	bench conc-shm-c$c --socket="$sock" --url="$url" --concurrency=$c
	bench conc-http-c$c --protocol=http --url="$url" --concurrency=$c
done

log "shm against HTTP without the batching window (1 client, 1 row)"
bench lat-shm --socket="$sock" --url="$url" --model=fashion-mlp-nodelay
bench lat-http --protocol=http --url="$url" --model=fashion-mlp-nodelay

log "rows/s against batch size (1 client, batches exactly the request)"
for r in 1 4 16 64 256; do
	bench rows-shm-r$r --socket="$sock" --url="$url" --model=fashion-mlp-nodelay --rows=$r
	bench rows-http-r$r --protocol=http --url="$url" --model=fashion-mlp-nodelay --rows=$r
done

log "HTTP JSON against the bare libmicrohttpd + jansson baseline"
start_server baseline "$tmp/baseline.port" "$build/client/bench-http-baseline" --port=0 \
	--port-file="$tmp/baseline.port"
base=$server_url
bench base-http-c16 --protocol=http --url="$base" --concurrency=16
bench inferd-http-c16 --protocol=http --url="$url" --concurrency=16
wrk_point wrk-base-784 "$WRK_THREADS" 32 "$base/infer"
wrk_point wrk-inferd-784 "$WRK_THREADS" 32 "$url/v2/models/fashion-mlp/infer"
wrk_point wrk-base-16 "$WRK_THREADS" 32 "$base/infer" WRK_FLOATS=16
stop_pid "$server_pid"

log "PyTorch on the same CPU: raw model, and behind Python's http.server"
if "$PYTHON" -c 'import torch' 2>/dev/null; then
	"$PYTHON" "$src/client/bench/torch_peer.py" --json --seconds=0.5 \
		--check="$src/docs/examples/fashion-request.json" >"$out/torch-cpu.json" ||
		log "warning: torch_peer.py failed"
	start_server torch-http "$tmp/torch.port" "$PYTHON" "$src/client/bench/torch_http_server.py" \
		--port=0 --port-file="$tmp/torch.port"
	bench diy-http-c1 --protocol=http --url="$server_url"
	bench diy-http-c16 --protocol=http --url="$server_url" --concurrency=16
	stop_pid "$server_pid"
else
	log "no PyTorch in $PYTHON: the PyTorch comparisons are skipped"
fi

metrics_snapshot metrics-end "$url"
"$PYTHON" "$src/client/bench/summarize.py" "$out" | tee "$out/summary.md"
"$PYTHON" "$src/client/bench/plot.py" "$out" || log "warning: plot.py failed"
log "results in $out"
