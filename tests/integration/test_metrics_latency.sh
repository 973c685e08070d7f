#!/bin/sh
# test_metrics_latency.sh: the per-model request latency histogram, queue depth and in-flight batch
# gauges of GET /metrics.  After N requests to a model its histogram's count and +Inf bucket are N,
# its buckets are cumulative (never decreasing) and its sum is positive; a model's request held in
# its queue (eager_dispatch off, a long max_queue_delay_us) shows queue depth 1 until its batch
# runs, then 0; with nothing running, no batch is in flight.  The request log (request_log = FILE)
# has one JSON line per request with its model, version, status, rows and times.  A CPU daemon has no
# GPU gauges and logs why.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

N=7
mkdir -p "$tmp/models" || exit 99
cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/fashion-mlp" || exit 99
cp -r "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/held-mlp" || exit 99
"$PY" - "$tmp/models/held-mlp/model.json" <<'PYEOF' || exit 99
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "held-mlp"
m["dynamic_batching"]["eager_dispatch"] = False
m["dynamic_batching"]["max_queue_delay_us"] = 10000000
m["dynamic_batching"]["default_timeout_us"] = 60000000
json.dump(m, open(sys.argv[1], "w"))
PYEOF
start_daemon --model_repository="$tmp/models" --request_log="$tmp/requests.jsonl"

infer() {	# infer MODEL: the HTTP status of one inference
	curl -s -o /dev/null -w '%{http_code}' -d "@$top_srcdir/docs/examples/fashion-request.json" \
		"http://127.0.0.1:$port/v2/models/$1/infer"
}

labelled() {	# labelled NAME MODEL: the value of NAME{model="MODEL",...} (the first such line)
	curl -s "http://127.0.0.1:$port/metrics" | "$PY" -c '
import sys
name, model = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    if line.startswith(name + "{") and ("model=\"%s\"" % model) in line:
        print(line.rsplit(" ", 1)[1].strip())
        break
else:
    print("missing")' "$1" "$2"
}

i=0
while [ $i -lt $N ]; do
	[ "$(infer fashion-mlp)" = 200 ] || fail "request $i to fashion-mlp"
	i=$((i + 1))
done
curl -s "http://127.0.0.1:$port/metrics" >"$tmp/metrics" || fail "GET /metrics"
"$PY" - "$tmp/metrics" "$N" <<'PYEOF' || fail "the latency histogram of fashion-mlp"
import re, sys
text, n = open(sys.argv[1]).read(), int(sys.argv[2])
assert "# TYPE inferd_request_duration_seconds histogram" in text, "no histogram TYPE line"
buckets = [(le, int(v)) for le, v in re.findall(
    r'^inferd_request_duration_seconds_bucket\{model="fashion-mlp",le="([^"]+)"\} (\d+)$', text, re.M)]
assert len(buckets) > 2 and buckets[-1][0] == "+Inf", buckets
counts = [v for _, v in buckets]
assert counts == sorted(counts), "buckets are not cumulative: %s" % buckets
bounds = [float(le) for le, _ in buckets[:-1]]
assert bounds == sorted(bounds) and len(set(bounds)) == len(bounds), "bucket bounds out of order: %s" % bounds
count = int(re.search(r'^inferd_request_duration_seconds_count\{model="fashion-mlp"\} (\d+)$', text, re.M).group(1))
total = float(re.search(r'^inferd_request_duration_seconds_sum\{model="fashion-mlp"\} (\S+)$', text, re.M).group(1))
assert count == n and counts[-1] == n, "count %d, +Inf %d, %d requests sent" % (count, counts[-1], n)
assert total > 0, "sum %s" % total
print("ok: %d requests, histogram %s, sum %.6f s" % (n, counts, total))
PYEOF
# GPU gauges (NVML): none on a CPU daemon, and the start-up log says why; on a GPU daemon that found NVML,
# each GPU's memory total is its real size.
case "${INFERD_TEST_DEVICE:-cpu}" in
cpu)
	grep -q 'gpu metrics: none' "$tmp/daemon.log" || fail "no start-up line saying why there are no GPU gauges"
	! grep -q '^inferd_gpu_' "$tmp/metrics" || fail "GPU gauges on a CPU daemon"
	echo "ok: no GPU gauges on the CPU, and the log says why";;
*)
	if grep -q 'gpu metrics: through NVML' "$tmp/daemon.log"; then
		grep -Eq '^inferd_gpu_memory_total_bytes\{gpu="[0-9]+",uuid="GPU-[0-9a-f-]+"\} [1-9][0-9]*$' "$tmp/metrics" ||
			fail "no GPU memory gauge although NVML was loaded"
		echo "ok: GPU gauges through NVML"
	fi;;
esac
[ "$(labelled inferd_request_duration_seconds_count held-mlp)" = 0 ] || fail "held-mlp counts requests it never had"
[ "$(labelled inferd_inflight_batches fashion-mlp)" = 0 ] || fail "a batch of fashion-mlp is in flight at rest"
[ "$(labelled inferd_queue_depth held-mlp)" = 0 ] || fail "held-mlp's queue is not empty at rest"

# One request held in held-mlp's queue for max_queue_delay_us: the gauge shows it, then it runs.
infer held-mlp >"$tmp/held.status" &
held=$!
wait_for "labelled inferd_queue_depth held-mlp" 1
wait "$held"
[ "$(cat "$tmp/held.status")" = 200 ] || fail "the held request: $(cat "$tmp/held.status")"
[ "$(labelled inferd_queue_depth held-mlp)" = 0 ] || fail "held-mlp's queue depth stays up after its batch ran"
[ "$(labelled inferd_request_duration_seconds_count held-mlp)" = 1 ] || fail "held-mlp's request was not counted"
echo "ok: queue depth 1 while a request waited, 0 after; its latency counted"
stop_daemon
"$PY" - "$tmp/requests.jsonl" "$N" <<'PYEOF' || fail "the request log"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
fm = [l for l in lines if l["model"] == "fashion-mlp"]
held = [l for l in lines if l["model"] == "held-mlp"]
assert len(fm) == n and len(held) == 1, "lines: %d fashion-mlp, %d held-mlp" % (len(fm), len(held))
for l in lines:
    assert l["status"] == "success", l
    assert l["version"] == 1 and l["rows"] == 1, l
    assert 0 <= l["queue_us"] <= l["total_us"], l
    assert l["time"] > 1e9, l
# eager_dispatch off: the held request waited out its window in the queue.
assert held[0]["queue_us"] >= 1000000, held[0]
print("ok: request log: %d lines, each with model, status and times" % len(lines))
PYEOF
exit 0
