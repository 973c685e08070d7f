#!/bin/bash
# run-cpu.sh OUTDIR [BUILDDIR]: the benchmark sweep on the CPU backend (the targets are in docs/BENCHMARKS.md).
#
# Starts its own daemon (--device=cpu) on a free port and a private socket, serving the
# demo model and its no-batching-window twin (make_models.py), and writes one JSON file
# per point into OUTDIR, then OUTDIR/summary.md (summarize.py) and plots (plot.py, when
# matplotlib is there).  BUILDDIR (default $BUILD, else the current directory) holds the
# built inferd, client/bench/inferd-bench, inferd-bench-engine and bench-http-baseline.  About 2 minutes.
# Among the points (common.sh's sweeps): bin-json-r1/-r64 against bin-binary-r1/-r64, the
# binary tensor extension against JSON at 16 connections (target: >= 5 x JSON's req/s).
#
#   BENCH_DURATION=2 BENCH_WARMUP=0.5       seconds per inferd-bench point
#   WRK_DURATION=3 WRK_THREADS=1            wrk (the design's HTTP row: 2 cores, wrk beside)
#   WRK_CONNECTIONS=32
#   PYTHON=/usr/bin/python3                 a Python with PyTorch (Debian's python3-torch)
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
for f in "$build/inferd" "$build/client/bench/inferd-bench" "$build/client/bench/inferd-bench-engine" \
	"$build/client/bench/bench-http-baseline"; do
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
sweeps "$url" "$sock"
engine_points cpu
futex_point futex

log "PyTorch on the same CPU: the raw model, and behind Python's http.server"
if "$PYTHON" -c 'import torch' 2>/dev/null; then
	"$PYTHON" "$src/client/bench/torch_peer.py" --json --seconds=0.5 \
		--check="$src/docs/examples/fashion-request.json" >"$out/torch-cpu.json" ||
		log "warning: torch_peer.py failed"
	diy_http cpu
else
	log "no PyTorch in $PYTHON: the PyTorch comparisons are skipped"
fi

metrics_snapshot metrics-end "$url"
cpu_target_line "$out" | tee "$out/cpu-target.txt"
"$PYTHON" "$src/client/bench/summarize.py" "$out" | tee "$out/summary.md"
"$PYTHON" "$src/client/bench/plot.py" "$out" || log "warning: plot.py failed"
log "results in $out"
