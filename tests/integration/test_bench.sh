#!/bin/sh
# test_bench.sh: inferd-bench against a private daemon on the CPU, over shm and HTTP, and
# against bench-http-baseline; inferd-bench-engine's --engine and --limits; checks the JSON
# reports hold together and that refusals, usage errors and --limits without CUDA give the
# documented exit statuses.  A behaviour
# test: no figure is asserted beyond what any working run must show.
set -u
: "${top_srcdir:?run through make check}" "${top_builddir:?run through make check}"

PY=${PYTHON3:-}
bench=$top_builddir/client/bench/inferd-bench
engine=$top_builddir/client/bench/inferd-bench-engine
baseline=$top_builddir/client/bench/bench-http-baseline
[ -n "$PY" ] && [ -x "$PY" ] || { echo "SKIP: no python3 to read the JSON reports"; exit 77; }
for f in "$top_builddir/inferd" "$bench" "$engine" "$baseline"; do
	[ -x "$f" ] || { echo "no $f"; exit 99; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-bench-test.XXXXXX") || exit 99
daemon_pid=
baseline_pid=

# Stop what we started, remove the temporary directory.
cleanup() {
	for p in $daemon_pid $baseline_pid; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Report a failure with the last output and the daemon's log, and stop.
fail() {
	echo "FAIL: $*"
	for f in "$tmp/out" "$tmp/err" "$tmp/daemon.log"; do
		[ -s "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
	done
	exit 1
}

# Wait (bounded, 120 s, as test_ipc_lib.sh's await_daemon: a GPU daemon builds its cuDNN plans
# first) until test $1 holds for path $2 while process $3 runs.
wait_path() {
	i=0
	until [ "$1" "$2" ]; do
		i=$((i + 1))
		[ $i -le 1200 ] || fail "$2 did not appear within 120 s"
		kill -0 "$3" 2>/dev/null || fail "process $3 exited at start"
		sleep 0.1
	done
}

# Run inferd-bench; stdout in $tmp/out, stderr in $tmp/err, status in $rc.
run_bench() {
	"$bench" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# run_engine ARGS...: inferd-bench-engine, output in $tmp/out and $tmp/err, status in $rc.
run_engine() {
	"$engine" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# Check the JSON report in $tmp/out: the invariants of any good run, then key=value pairs.
check_report() {
	"$PY" - "$tmp/out" "$@" <<'EOF' || fail "report of: $bench_args"
import json, sys
r = json.loads(open(sys.argv[1]).read())
problems = []
def need(cond, what):
    if not cond:
        problems.append(what)
lat = r["latency_us"]
need(r["requests"] > 0, "no request measured")
need(r["errors"] == 0 and r["first_error"] is None, "requests refused")
need(r["checked"] >= 1, "no output checked")
need(0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"], f"latencies out of order: {lat}")
need(lat["min"] <= lat["mean"] <= lat["max"], "mean latency outside min..max")
need(r["elapsed_s"] > 0, "no measured interval")
rps = r["requests"] / r["elapsed_s"]
need(abs(r["requests_per_s"] - rps) <= 1e-6 * rps + 1e-9, "requests_per_s is not requests / elapsed_s")
need(abs(r["rows_per_s"] - rps * r["rows"]) <= 1e-6 * rps * r["rows"] + 1e-9, "rows_per_s is not rows x req/s")
row_in = r["input_bytes_per_request"] // r["rows"]
need(row_in == 784 * 4, f"input row of {row_in} bytes, the demo model has 3136")
need(r["output_bytes_per_request"] == r["rows"] * 10 * 4, "output bytes per request")
gb = rps * (r["input_bytes_per_request"] + r["output_bytes_per_request"]) / 1e9
need(abs(r["gb_per_s"] - gb) <= 1e-6 * gb, "gb_per_s is not (in + out) x req/s")
# Each request is timed from its send, so no request outlasts the whole run.
need(lat["max"] / 1e6 <= r["elapsed_s"] + r["warmup_s"] + 10, "a latency longer than the run")
if r["protocol"] == "http":
    need(r["request_body_bytes"] > 784 * r["rows"] * 2, "HTTP body too small for its floats")
if r["protocol"] == "http-binary":
    need(784 * 4 * r["rows"] < r["request_body_bytes"] < 784 * 4 * r["rows"] + 1024,
         "binary body is not a JSON header and the raw floats")
s = r["server"]
if s is not None:
    outstanding = r["concurrency"] * r["async_depth"] * r["rows"]
    need(s["execution_count_delta"] > 0, "the server executed nothing")
    need(1 <= s["mean_batch"] <= outstanding, f"mean batch {s['mean_batch']} outside 1..{outstanding}")
    need(abs(s["mean_batch"] - s["inference_count_delta"] / s["execution_count_delta"]) < 1e-6,
         "mean_batch is not inference / execution")
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    got = r
    for part in k.split("."):
        got = got[part] if got is not None else None
    need(str(got) == v, f"{k} is {got!r}, expected {v}")
if problems:
    print("\n".join(problems))
    print(json.dumps(r, indent=1))
    sys.exit(1)
EOF
}

# bench ARGS... then check: must succeed, one JSON object, coherent.
bench_ok() {
	bench_args="$*"
	run_bench --json "$@"
	[ $rc -eq 0 ] || fail "inferd-bench $* exited $rc"
	[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "inferd-bench $*: not one line of JSON"
}

"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$top_srcdir/conf/models" \
	--http_port=0 --port-file="$tmp/port" --shm_socket="$tmp/sock" >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
wait_path -s "$tmp/port" "$daemon_pid"
wait_path -S "$tmp/sock" "$daemon_pid"
url=http://127.0.0.1:$(cat "$tmp/port")

# Duration mode, both protocols, the server's mean batch read from /metrics.
bench_ok --socket="$tmp/sock" --url="$url" --concurrency=2 --duration=1 --warmup=0.2 --label=s1
check_report protocol=shm concurrency=2 rows=1 label=s1 model=fashion-mlp
bench_ok --protocol=http --url="$url" --concurrency=2 --rows=3 --duration=1 --warmup=0.2
check_report protocol=http concurrency=2 rows=3 socket=None

# The binary tensor extension, either spelling; its outputs are checked as binary.
bench_ok --protocol=http-binary --url="$url" --concurrency=2 --rows=3 --requests=100 --warmup=0
check_report protocol=http-binary rows=3 requests=100
bench_ok --protocol=http --binary --url="$url" --requests=20 --warmup=0 --label=b
check_report protocol=http-binary label=b
run_bench --protocol=http --binary --url="$url" --requests=5 --warmup=0
grep -q "binary tensors" "$tmp/out" || fail "text report does not say binary tensors"

# Request mode: exactly N requests counted, pipelined D deep over shm.
bench_ok --socket="$tmp/sock" --url="$url" --requests=300 --async-depth=4 --concurrency=2 --warmup=0.1
check_report requests=300 async_depth=4
bench_ok --protocol=http --url="$url" --requests=50 --warmup=0
check_report requests=50

# --input-bytes picks the rows: 10000 bytes are 4 rows of 3136; no --url, no server figures.
bench_ok --socket="$tmp/sock" --input-bytes=10000 --requests=20 --warmup=0
check_report rows=4 server=None input_bytes_per_request=12544

# The text report names the figures.
run_bench --socket="$tmp/sock" --url="$url" --requests=20 --warmup=0
[ $rc -eq 0 ] || fail "text report: exit $rc"
for w in "req/s" "rows/s" "GB/s" "p50" "p99" "server batch"; do
	grep -q -F "$w" "$tmp/out" || fail "text report lacks '$w'"
done

# The baseline server answers the same body, and serves metadata for inferd-bench.
"$baseline" --port=0 --port-file="$tmp/bport" --threads=2 >"$tmp/baseline.log" 2>&1 &
baseline_pid=$!
wait_path -s "$tmp/bport" "$baseline_pid"
burl=http://127.0.0.1:$(cat "$tmp/bport")
bench_ok --protocol=http --url="$burl" --concurrency=2 --requests=200 --warmup=0
check_report requests=200 server=None
grep -q "no mean batch size" "$tmp/err" || fail "no word that the baseline has no /metrics"

# Refused requests: counted, named, exit 1 (HTTP learns the batch limit from the server).
bench_args="--rows=300 over http"
run_bench --json --protocol=http --url="$url" --rows=300 --requests=2 --warmup=0
[ $rc -eq 1 ] || fail "300 rows over HTTP exited $rc, expected 1"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(not (r["errors"] == 2 and r["requests"] == 0 and r["first_error"]))' \
	"$tmp/out" || fail "refusals not counted: $(cat "$tmp/out")"
grep -q "refused" "$tmp/err" || fail "no word of the refusals"
# Over shm the model's metadata already says so.
run_bench --socket="$tmp/sock" --rows=300 --requests=5
[ $rc -eq 1 ] && grep -q "at most 256" "$tmp/err" || fail "300 rows over shm: exit $rc"
# A daemon that is not there.
run_bench --socket="$tmp/nothing" --requests=5
[ $rc -eq 1 ] && [ -s "$tmp/err" ] || fail "a missing socket: exit $rc, no message"

# Usage errors exit 2.
for args in "--protocol=http" "--protocol=udp --url=$url" "--url=ftp://x" "--concurrency=0" \
	"--rows=2 --input-bytes=1K" "--duration=abc" "--protocol=http --url=$url --async-depth=2" \
	"--socket=$tmp/sock --binary" "extra"; do
	# shellcheck disable=SC2086
	run_bench $args
	[ $rc -eq 2 ] || fail "inferd-bench $args exited $rc, expected 2"
done

# inferd-bench-engine --engine times the backend alone, with no daemon: one JSON object
# with coherent figures.
run_engine --json --engine="$top_srcdir/conf/models/fashion-mlp" --rows=4 --duration=0.3 --warmup=0.05
[ $rc -eq 0 ] || fail "--engine exited $rc"
"$PY" - "$tmp/out" <<'EOF' || fail "--engine report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["mode"] == "engine" and r["rows"] == 4 and r["model"] == "fashion-mlp", r
assert r["batches"] > 0 and abs(r["rows_per_s"] - r["batches"] * 4 / r["duration_s"]) < 1e-6 * r["rows_per_s"] + 1, r
assert 0 < r["batch_us"]["p50"] <= r["batch_us"]["p99"], r
EOF
run_engine --engine="$tmp/no-such-model" --duration=0.1
[ $rc -eq 1 ] && grep -q "no-such-model" "$tmp/err" || fail "--engine on a missing model: exit $rc"
# --profile: per-step medians of the plan (fashion-mlp: three Gemm nodes fc1..fc3), by op and by node,
# their sum beside the whole run, in text and under "profile" in the JSON.
run_engine --engine="$top_srcdir/conf/models/fashion-mlp" --rows=4 --duration=0.2 --warmup=0.05 --profile=3
[ $rc -eq 0 ] || fail "--engine --profile exited $rc: $(cat "$tmp/err")"
grep -q "profile of the 4-row plan: 3 steps, medians of 3 runs" "$tmp/out" &&
    grep -Eq "^ +Gemm +cpu +[0-9.]+ +3 +100.0%" "$tmp/out" && grep -q " fc1 (Gemm, cpu)" "$tmp/out" &&
    grep -q "sum of steps" "$tmp/out" || fail "--engine --profile text: $(cat "$tmp/out")"
run_engine --json --engine="$top_srcdir/conf/models/fashion-mlp" --rows=4 --duration=0.2 --warmup=0.05 --profile=5
[ $rc -eq 0 ] || fail "--engine --profile --json exited $rc"
"$PY" - "$tmp/out" <<'EOF' || fail "--engine --profile report"
import json, sys
r = json.load(open(sys.argv[1]))
p = r["profile"]
assert p["rows"] == 4 and p["steps"] == 3 and p["reps"] == 5, p
assert [(o["op"], o["how"]) for o in p["ops"]] == [("Gemm", "cpu")] and p["ops"][0]["count"] == 3, p
assert sorted(n["node"] for n in p["top_nodes"]) == ["fc1", "fc2", "fc3"], p
us = [n["us"] for n in p["top_nodes"]]
assert us == sorted(us, reverse=True) and min(us) >= 0, p
assert abs(sum(us) - p["sum_us"]) <= 1e-6 * p["sum_us"] + 1e-3 and abs(p["ops"][0]["us"] - p["sum_us"]) < 1e-3, p
assert p["sum_us"] == 0 or abs(sum(n["share"] for n in p["top_nodes"]) - 1) < 1e-6, p
assert abs(p["whole_us"] - r["batch_us"]["p50"]) < 0.01, p
EOF
run_engine --futex --profile
[ $rc -eq 2 ] || fail "--profile without --engine: exit $rc, expected 2"
run_engine --engine="$top_srcdir/conf/models/fashion-mlp" --profile=0
[ $rc -eq 2 ] || fail "--profile=0: exit $rc, expected 2"
run_engine --engine="$top_srcdir/conf/models/fashion-mlp" --socket="$tmp/sock"
[ $rc -eq 2 ] || fail "--engine with --socket: exit $rc, expected 2"
run_engine --engine="$top_srcdir/conf/models/fashion-mlp" --limits
[ $rc -eq 2 ] || fail "--engine with --limits: exit $rc, expected 2"
# The installed inferd-bench has no in-process modes: it does not link the engine.
run_bench --engine="$top_srcdir/conf/models/fashion-mlp"
[ $rc -eq 2 ] || fail "inferd-bench --engine: exit $rc, expected 2"

# --limits needs a CUDA build: without one it says so and exits 2.
if "$top_builddir/inferd" --version | grep -q '^cuda: no'; then
	run_engine --limits
	[ $rc -eq 2 ] && grep -q "CUDA" "$tmp/err" || fail "--limits without CUDA: exit $rc"
fi

# --limits-from reads a limits report and adds it and the ratios to the run's report.
cat >"$tmp/limits.json" <<'EOF'
{"limits":{"device":"test-device","copy_bytes":3136,"copy_runs":5,"pinned_h2d_gbps":10.0,"pinned_d2h_gbps":10.0,"pageable_h2d_gbps":5.0,"registered_h2d_gbps":8.0,"floor_p50_us":10.0,"floor_p99_us":20.0,"floor_runs":100}}
EOF
bench_args="--limits-from"
bench_ok --socket="$tmp/sock" --requests=20 --warmup=0 --limits-from="$tmp/limits.json"
"$PY" - "$tmp/out" <<'EOF' || fail "--limits-from report: $(cat "$tmp/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["limits"]["device"] == "test-device" and r["limits"]["copy_bytes"] == 3136, r["limits"]
assert abs(r["ratios"]["registered_over_pinned_h2d"] - 0.8) < 1e-9, r["ratios"]
p50 = r["latency_us"]["p50"]
assert abs(r["ratios"]["p50_over_floor_p50"] - p50 / 10.0) < 1e-6 * p50, r
EOF
echo '{"limits":{"device":"x"}}' >"$tmp/bad-limits.json"
run_bench --socket="$tmp/sock" --requests=5 --warmup=0 --limits-from="$tmp/bad-limits.json"
[ $rc -eq 1 ] && grep -q "not a limits report" "$tmp/err" || fail "a bad limits file: exit $rc"

# The summary script reads reports as the sweeps write them.
mkdir "$tmp/results"
bench_ok --socket="$tmp/sock" --url="$url" --requests=50 --warmup=0 --label=conc-shm-c1
cp "$tmp/out" "$tmp/results/conc-shm-c1.json"
"$PY" "$top_srcdir/client/bench/summarize.py" "$tmp/results" >"$tmp/summary" ||
	fail "summarize.py failed"
grep -q "| conc-shm-c1 | shm | 1 x 1 | 1 |" "$tmp/summary" || fail "summary lacks the point"
grep -q "| HTTP binary tensor extension | >= 5 x JSON req/s | no bin-json" "$tmp/summary" ||
	fail "summary lacks the binary row unmeasured"
for p in "bin-json-r1 --protocol=http" "bin-binary-r1 --protocol=http-binary"; do
	# shellcheck disable=SC2086
	bench_ok --url="$url" --concurrency=4 --requests=200 --warmup=0 --label=$p
	cp "$tmp/out" "$tmp/results/${p%% *}.json"
done
"$PY" "$top_srcdir/client/bench/summarize.py" "$tmp/results" >"$tmp/summary" ||
	fail "summarize.py failed"
grep -Eq "^\| HTTP binary tensor extension \(1 row/request, c=4\) \| >= 5 x JSON req/s \| [0-9.]+ x \([0-9]+ vs [0-9]+ req/s.*, 0 errors\) \| (meets|\*\*misses\*\*) \|$" \
	"$tmp/summary" || fail "summary lacks the binary row: $(grep -i binary "$tmp/summary")"
echo "ok"
