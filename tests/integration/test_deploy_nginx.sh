#!/bin/sh
# test_deploy_nginx.sh: conf/deploy/inferd-upstream.conf in a real nginx in front of three
# inferd daemons on loopback: 3,000 requests all succeed and every daemon serves some; then a
# daemon is SIGKILLed mid-run and still no request fails (nginx retries it on another one).
# nginx runs unprivileged-friendly: its own prefix, temp dirs, pid file and logs in a temp dir.
set -u

PY=${PYTHON3:-/usr/bin/python3}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
if [ ! -x "$PY" ]; then
	echo "SKIP: $PY is missing"
	exit 77
fi
if [ ! -x "$NGINX" ]; then
	echo "SKIP: nginx is missing (Debian: apt-get install nginx-light)"
	exit 77
fi
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
load="$top_srcdir/tests/helpers/deploy_load.py"
example="$top_srcdir/docs/examples/fashion-request.json"
upstream_conf="$top_srcdir/conf/deploy/inferd-upstream.conf"
COUNT=3000

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-nginx.XXXXXX") || exit 1
pids=""
cleanup() {
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.log "$tmp"/nginx/error.log; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
	done
	exit 1
}

# start_daemon N: inferd number N on a free port; sets port_N and pid_N.
start_daemon() {
	"$top_builddir/inferd" --device="${INFERD_TEST_DEVICE:-cpu}" --model_repository="$top_srcdir/conf/models" \
	    --http_port=0 --port-file="$tmp/d$1.port" --shm_socket="$tmp/d$1.sock" --http_threads=2 \
	    >"$tmp/d$1.log" 2>&1 &
	eval "pid_$1=$!"
	pids="$pids $!"
}

# wait_daemon N: wait (at most 60 s) for daemon N's port file.
wait_daemon() {
	tries=0
	while [ ! -s "$tmp/d$1.port" ]; do
		eval "kill -0 \$pid_$1" 2>/dev/null || fail "inferd $1 exited at start-up"
		tries=$((tries + 1))
		[ "$tries" -le 600 ] || fail "inferd $1 did not start within 60 s"
		sleep 0.1
	done
	eval "port_$1=\$(cat \"$tmp/d$1.port\")"
}

# free_port: a loopback port nobody listens on right now.
free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# served N: rows daemon N has inferred, from its /metrics.
served() {
	eval "p=\$port_$1"
	"$PY" "$load" metric --url "http://127.0.0.1:$p" --name inferd_inference_count --label model=fashion-mlp
}

# write_nginx_conf PORT: the deploy file with our three daemons and PORT, inside a main
# config whose paths all live in $tmp/nginx.  Every other directive is the deploy file's own.
write_nginx_conf() {
	mkdir -p "$tmp/nginx/conf" "$tmp/nginx/temp" || fail "mkdir $tmp/nginx"
	awk -v servers="127.0.0.1:$port_1 127.0.0.1:$port_2 127.0.0.1:$port_3" -v listen="127.0.0.1:$1" '
	/^[ \t]*server[ \t]+[^ \t{]+:[0-9]+/ {
		if (done++) next
		params = ""
		for (i = 3; i <= NF; i++) params = params " " $i
		n = split(servers, s, " ")
		for (i = 1; i <= n; i++) printf "\tserver %s%s\n", s[i], params
		next
	}
	/^[ \t]*listen[ \t]/ { printf "\tlisten %s;\n", listen; next }
	{ print }' "$upstream_conf" >"$tmp/nginx/conf/inferd-upstream.conf" || fail "awk"
	cat >"$tmp/nginx/conf/nginx.conf" <<NGINX
daemon off;
master_process off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 512; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx/temp/body;
	proxy_temp_path $tmp/nginx/temp/proxy;
	fastcgi_temp_path $tmp/nginx/temp/fastcgi;
	uwsgi_temp_path $tmp/nginx/temp/uwsgi;
	scgi_temp_path $tmp/nginx/temp/scgi;
	include $tmp/nginx/conf/inferd-upstream.conf;
}
NGINX
}

# start_nginx: nginx on a free port (tried three times: the port may be taken in between);
# sets nginx_url.
start_nginx() {
	for attempt in 1 2 3; do
		port=$(free_port) || fail "no free port"
		write_nginx_conf "$port"
		"$NGINX" -p "$tmp/nginx" -e "$tmp/nginx/error.log" -c "$tmp/nginx/conf/nginx.conf" -t \
		    >"$tmp/nginx-t.log" 2>&1 || fail "nginx -t rejects the configuration: $(cat "$tmp/nginx-t.log")"
		"$NGINX" -p "$tmp/nginx" -e "$tmp/nginx/error.log" -c "$tmp/nginx/conf/nginx.conf" &
		nginx_pid=$!
		pids="$pids $nginx_pid"
		tries=0
		while [ "$tries" -lt 100 ] && kill -0 "$nginx_pid" 2>/dev/null; do
			if "$PY" -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then
				nginx_url="http://127.0.0.1:$port"
				return 0
			fi
			tries=$((tries + 1))
			sleep 0.1
		done
		kill -9 "$nginx_pid" 2>/dev/null
	done
	fail "nginx did not start"
}

for n in 1 2 3; do start_daemon $n; done
for n in 1 2 3; do wait_daemon $n; done
start_nginx
grep -q "^[[:space:]]*proxy_next_upstream .*non_idempotent;" "$tmp/nginx/conf/inferd-upstream.conf" || fail "the deploy file lost proxy_next_upstream"
[ "$(grep -c "^[[:space:]]*server 127.0.0.1:" "$tmp/nginx/conf/inferd-upstream.conf")" -eq 3 ] \
    || fail "the rewritten upstream does not list exactly the three daemons"

# 1. All three up: every request succeeds and every daemon serves some.
"$PY" "$load" load --url "$nginx_url" --example "$example" --count "$COUNT" --threads 8 \
    || fail "requests failed through nginx with all daemons up"
total=0
for n in 1 2 3; do
	s=$(served $n) || fail "no inference count from daemon $n"
	echo "daemon $n served $s"
	[ "$s" -gt 0 ] || fail "daemon $n served no request"
	eval "before_$n=$s"
	total=$((total + s))
done
[ "$total" -eq "$COUNT" ] || fail "the daemons inferred $total rows for $COUNT requests"

# 2. Daemon 2 is SIGKILLed after a third of the run: nginx must send its requests elsewhere.
"$PY" "$load" load --url "$nginx_url" --example "$example" --count "$COUNT" --threads 8 \
    --kill-pid "$pid_2" --kill-after $((COUNT / 3)) || fail "requests failed when a daemon was killed"
wait "$pid_2" 2>/dev/null
kill -0 "$pid_2" 2>/dev/null && fail "daemon 2 is still running"
for n in 1 3; do
	s=$(served $n) || fail "no inference count from daemon $n after the kill"
	eval "b=\$before_$n"
	echo "daemon $n served $((s - b)) more"
	[ "$s" -gt "$b" ] || fail "daemon $n served nothing after daemon 2 was killed"
done
kill -0 "$nginx_pid" 2>/dev/null || fail "nginx died"
echo "PASS: test_deploy_nginx"
exit 0
