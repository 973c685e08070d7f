#!/bin/sh
# test_perf_analyzer.sh: Triton's perf_analyzer (a C++ client no one here wrote) against inferd,
# unchanged: binary tensor data, system shared memory for inputs and outputs, batches of 4,
# asynchronous requests, and the ONNX model.  Each run is short and bounded; it must report no
# error, and inferd's /metrics must count at least its requests as successes.  Skips (77) when
# perf_analyzer is not on PATH (.ci/install-perf-analyzer.sh installs it).
. "${top_srcdir:?run through make check}/tests/helpers/test_triton_lib.sh"

command -v perf_analyzer >/dev/null 2>&1 || {
	echo "SKIP: perf_analyzer is not on PATH (.ci/install-perf-analyzer.sh installs it)"
	exit 77
}
perf_analyzer --version >"$tmp/pa-version.log" 2>&1 || {
	cat "$tmp/pa-version.log"
	echo "SKIP: perf_analyzer does not run here"
	exit 77
}

# successes: inferd's count of successful requests of model $1 from /metrics.
successes() {
	curl -sf "http://127.0.0.1:$port/metrics" |
		awk -v m="model=\"$1\"" 'index($0, "inferd_requests_total{") == 1 && index($0, m) &&
			index($0, "status=\"success\"") { s += $2 } END { print s + 0 }'
}

runs="fashion-mlp --concurrency-range=1:2
fashion-mlp --shared-memory=system
fashion-mlp --shared-memory=system -b 4 --output-shared-memory-size=1024
fashion-mlp --async --concurrency-range=4:4
fashion-cnn --shared-memory=system"
# On a GPU run, Triton's CUDA shared memory too (perf_analyzer's own cudaIpc handles).
case "${INFERD_TEST_DEVICE:-cpu}" in
cuda*) runs="$runs
fashion-mlp --shared-memory=cuda
fashion-mlp --shared-memory=cuda -b 8 --output-shared-memory-size=1024" ;;
esac

start_daemon
n=0
echo "$runs" | while read -r model opts; do
	n=$((n + 1))
	before=$(successes "$model")
	# A fixed request count per window and a wide stability band: the bound is on time, and a
	# loaded machine's jitter must not turn into "no stable measurement".
	# shellcheck disable=SC2086
	timeout 120 perf_analyzer -m "$model" -u "127.0.0.1:$port" -i http $opts \
		--measurement-mode=count_windows --measurement-request-count=100 \
		--stability-percentage=1000 --max-trials=3 >"$tmp/pa-$n.log" 2>&1 ||
		{ cat "$tmp/pa-$n.log"; fail "perf_analyzer -m $model $opts"; }
	grep -qi "error" "$tmp/pa-$n.log" && { cat "$tmp/pa-$n.log"; fail "perf_analyzer $opts reported errors"; }
	count=$(awk '/Request count:/ { print $3; exit }' "$tmp/pa-$n.log")
	after=$(successes "$model")
	[ -n "$count" ] && [ "$count" -ge 100 ] || { cat "$tmp/pa-$n.log"; fail "perf_analyzer $opts: request count '$count'"; }
	[ $((after - before)) -ge "$count" ] ||
		fail "perf_analyzer $opts: it counted $count requests, inferd $((after - before)) successes"
	# The server-side section: perf_analyzer prints it only when /v2 lists "statistics" and the
	# statistics endpoint answers.  Its count is the statistics' difference over the window, which a
	# request still being answered at either end shifts by one, so only its presence is required.
	served=$(awk '/Successful request count:/ { print $4; exit }' "$tmp/pa-$n.log")
	grep -q "Avg request latency:.*queue.*compute infer" "$tmp/pa-$n.log" && [ -n "$served" ] &&
		[ "$served" -gt 0 ] || { cat "$tmp/pa-$n.log"; fail "perf_analyzer $opts: no server-side statistics"; }
	echo "perf_analyzer -m $model $opts: $(grep -m1 'Throughput' "$tmp/pa-$n.log" | sed 's/^ *//'), $count requests checked"
done || exit 1
stop_daemon
echo "PASS: test_perf_analyzer"
