# common.sh (bash): what run-cpu.sh and run-gpu.sh share — daemons and servers started and
# stopped, one benchmark point to one JSON file, wrk, idle CPU, the metrics at the end.
# Sourced, not run.  The caller sets: src (source tree), build (build tree), out (results),
# tmp (scratch directory, removed at exit), PYTHON.

BENCH_DURATION=${BENCH_DURATION:-2}	# measured seconds per point
BENCH_WARMUP=${BENCH_WARMUP:-0.5}
WRK_DURATION=${WRK_DURATION:-3}
WRK_CONNECTIONS=${WRK_CONNECTIONS:-32}

started_pids=""

log() {
	printf '%s run: %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

# Wait until a path exists, at most $2 seconds; 1 on timeout.
wait_for() {
	local n=$(($2 * 10))
	while [ ! -e "$1" ]; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.1
	done
}

# Stop one process we started: TERM, up to 40 s, then KILL.
stop_pid() {
	local n=400

	kill -TERM "$1" 2>/dev/null || return 0
	while kill -0 "$1" 2>/dev/null && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	return 0
}

# At exit: stop whatever is still running, remove the scratch directory.
cleanup() {
	local p

	for p in $started_pids; do
		stop_pid "$p"
	done
	rm -rf "$tmp"
}

# start_daemon NAME REPO DEVICE [FLAGS...]: sets daemon_pid, daemon_url, daemon_sock.
start_daemon() {
	local name=$1 repo=$2 dev=$3
	shift 3
	mkdir -p "$tmp/$name"
	"$build/inferd" --model-repository="$repo" --device="$dev" --http-port=0 \
		--port-file="$tmp/$name/port" --shm-socket="$tmp/$name/sock" "$@" \
		>"$out/$name-daemon.log" 2>&1 &
	daemon_pid=$!
	started_pids="$started_pids $daemon_pid"
	if ! wait_for "$tmp/$name/port" 120 || ! wait_for "$tmp/$name/sock" 10; then
		log "daemon $name did not start; its log:"
		tail -20 "$out/$name-daemon.log" >&2
		exit 1
	fi
	daemon_url=http://127.0.0.1:$(cat "$tmp/$name/port")
	daemon_sock=$tmp/$name/sock
	log "daemon $name on $dev: $daemon_url, $daemon_sock"
}

# start_server NAME PORTFILE COMMAND...: a helper server that writes its port to PORTFILE.
start_server() {
	local name=$1 pf=$2
	shift 2
	"$@" >"$out/$name.log" 2>&1 &
	server_pid=$!
	started_pids="$started_pids $server_pid"
	if ! wait_for "$pf" 120; then
		log "$name did not start; its log:"
		tail -20 "$out/$name.log" >&2
		exit 1
	fi
	server_url=http://127.0.0.1:$(cat "$pf")
}

# bench_point PROGRAM LABEL FLAGS...: one point of PROGRAM into $out/LABEL.json (its
# stderr beside it).
bench_point() {
	local prog=$1 label=$2
	shift 2
	if "$build/client/bench/$prog" --json --label="$label" --duration="$BENCH_DURATION" \
		--warmup="$BENCH_WARMUP" "$@" >"$out/$label.json" 2>"$out/$label.err"; then
		rm -f "$out/$label.err"
	else
		log "warning: $label: $(tail -1 "$out/$label.err")"
	fi
	[ -s "$out/$label.json" ] || rm -f "$out/$label.json"
}

# bench LABEL FLAGS...: one inferd-bench point (a daemon under load).
bench() {
	bench_point inferd-bench "$@"
}

# engine LABEL FLAGS...: one inferd-bench-engine --engine point (the backend alone).
engine() {
	bench_point inferd-bench-engine "$@"
}

# limits LABEL DEVICE BYTES: the device's limits for copies of BYTES into $out/LABEL.json,
# for inferd-bench --limits-from; a failure is logged and leaves no file.
limits() {
	if "$build/client/bench/inferd-bench-engine" --limits --limits-device="$2" --json \
		--input-bytes="$3" >"$out/$1.json" 2>"$out/$1.err"; then
		rm -f "$out/$1.err"
	else
		log "warning: --limits: $(tail -1 "$out/$1.err")"
		rm -f "$out/$1.json"
	fi
}

# futex_point LABEL: a cross-process futex round trip (inferd-bench-engine --futex) into $out/LABEL.json.
futex_point() {
	if "$build/client/bench/inferd-bench-engine" --futex --json --label="$1" >"$out/$1.json" \
		2>"$out/$1.err"; then
		rm -f "$out/$1.err"
	else
		log "warning: --futex: $(tail -1 "$out/$1.err")"
		rm -f "$out/$1.json"
	fi
}

# cpu_target_line DIR: the CPU target on one line, from DIR's conc-shm-c1 (1 client, 1 row, default
# config), lat-shm (no batching window), engine-r1 and futex points: shm p50 <= engine p50 + 2 x futex RTT.
cpu_target_line() {
	"$PYTHON" - "$1" <<'EOF' || log "warning: the CPU target line could not be made"
import json, os, sys
d = sys.argv[1]
def load(name):
    p = os.path.join(d, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
shm, nod, eng, fx = load("conc-shm-c1"), load("lat-shm"), load("engine-r1"), load("futex")
if not (shm and eng and fx):
    sys.exit("missing points: need conc-shm-c1, engine-r1 and futex")
p50, e50, rtt = shm["latency_us"]["p50"], eng["batch_us"]["p50"], fx["futex_rtt_p50_us"]
bound = e50 + 2 * rtt
extra = " (no window: %.1f us)" % nod["latency_us"]["p50"] if nod else ""
print("cpu target: shm p50 %.1f us%s, engine-alone p50 %.1f us, futex RTT %.1f us: "
      "shm p50 %s engine + 2 x RTT = %.1f us (%.2f x)" % (p50, extra, e50, rtt,
      "<=" if p50 <= bound else ">", bound, p50 / bound if bound else 0))
EOF
}

# limits_from LABEL: the --limits-from flag for the limits in $out/LABEL.json, if measured.
limits_from() {
	[ -s "$out/$1.json" ] && echo "--limits-from=$out/$1.json"
}

# wrk_point LABEL THREADS CONNECTIONS URL [VAR=VALUE...]: wrk with wrk-post.lua.
wrk_point() {
	local label=$1 threads=$2 conns=$3 url=$4
	shift 4
	if ! command -v "${WRK:-wrk}" >/dev/null 2>&1; then
		log "wrk not installed: $label skipped"
		return 0
	fi
	env "$@" "${WRK:-wrk}" -t"$threads" -c"$conns" -d"$WRK_DURATION"s -s "$src/client/bench/wrk-post.lua" \
		"$url" >"$out/$label.txt" 2>&1 || log "warning: wrk $label failed"
	sed -n "s/^wrk-json: {/{\"label\":\"$label\",/p" "$out/$label.txt" >"$out/$label.json"
	[ -s "$out/$label.json" ] || rm -f "$out/$label.json"
}

# idle_cpu LABEL PID SECONDS: the process's CPU use while nobody calls it.
idle_cpu() {
	"$PYTHON" - "$1" "$2" "$3" >"$out/$1.json" <<'EOF' || true
import json, os, sys, time
label, pid, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
def ticks():
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime + stime
t0, c0 = time.monotonic(), ticks()
time.sleep(secs)
t1, c1 = time.monotonic(), ticks()
hz = os.sysconf("SC_CLK_TCK")
print(json.dumps({"label": label, "tool": "idle", "seconds": t1 - t0,
                  "cpu_percent": 100.0 * (c1 - c0) / hz / (t1 - t0)}))
EOF
	[ -s "$out/$1.json" ] || { rm -f "$out/$1.json"; log "warning: idle CPU not measured"; }
}

# metrics_snapshot LABEL URL: GET /metrics into LABEL.txt, the allocation gauge into LABEL.json.
metrics_snapshot() {
	"$PYTHON" - "$1" "$2" "$out/$1.txt" >"$out/$1.json" <<'EOF' || true
import json, sys, urllib.request
label, url, path = sys.argv[1:4]
text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
with open(path, "w") as f:
    f.write(text)
allocs = None
for line in text.splitlines():
    if line.startswith("inferd_allocations_after_startup "):
        allocs = int(line.split()[1])
print(json.dumps({"label": label, "tool": "metrics", "allocations_after_startup": allocs}))
EOF
	[ -s "$out/$1.json" ] || { rm -f "$out/$1.json"; log "warning: no metrics from $2"; }
}

# sweeps URL SOCKET: the points both runs share, against the daemon at URL and SOCKET.
# engine_points DEVICE: the backend alone (inferd-bench-engine --engine) at the batch sizes
# torch_peer.py measures, for the like-for-like row against PyTorch's raw model.
engine_points() {
	local r
	log "the backend alone on $1 (no daemon), against PyTorch's raw model"
	for r in 1 4 16 64 256; do
		engine engine-r$r --engine="$src/conf/models/fashion-mlp" --device="$1" --rows=$r
	done
}

sweeps() {
	local url=$1 sock=$2 c r base

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
	start_server baseline "$tmp/baseline.port" "$build/client/bench/bench-http-baseline" --port=0 \
		--port-file="$tmp/baseline.port"
	base=$server_url
	bench base-http-c16 --protocol=http --url="$base" --concurrency=16
	bench inferd-http-c16 --protocol=http --url="$url" --concurrency=16
	wrk_point wrk-base-784 "$WRK_THREADS" "$WRK_CONNECTIONS" "$base/infer"
	wrk_point wrk-inferd-784 "$WRK_THREADS" "$WRK_CONNECTIONS" "$url/v2/models/fashion-mlp/infer"
	wrk_point wrk-base-16 "$WRK_THREADS" "$WRK_CONNECTIONS" "$base/infer" WRK_FLOATS=16
	stop_pid "$server_pid"

	binary_points "$url"
}

# binary_points URL: the binary tensor extension against JSON on the demo model, 16 connections,
# 1 and 64 rows a request (target: binary >= 5 x JSON's req/s).
binary_points() {
	local url=$1 r

	log "HTTP binary tensors against JSON (demo model, 16 connections)"
	for r in 1 64; do
		bench bin-json-r$r --protocol=http --url="$url" --concurrency=16 --rows=$r
		bench bin-binary-r$r --protocol=http-binary --url="$url" --concurrency=16 --rows=$r
	done
}

# diy_http DEVICE: PyTorch behind Python's http.server, the do-it-yourself alternative.
diy_http() {
	start_server torch-http "$tmp/torch.port" "$PYTHON" "$src/client/bench/torch_http_server.py" \
		--device="$1" --port=0 --port-file="$tmp/torch.port"
	bench diy-http-c1 --protocol=http --url="$server_url"
	bench diy-http-c16 --protocol=http --url="$server_url" --concurrency=16
	stop_pid "$server_pid"
}
