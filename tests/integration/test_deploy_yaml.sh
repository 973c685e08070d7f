#!/bin/sh
# test_deploy_yaml.sh: conf/deploy without a cluster: every YAML parses, every inferd flag the
# ServingRuntime, the Containerfile and the inferd@.service template pass is accepted by
# `inferd --check-config` (and means what the files around it assume), the ports agree, and
# every metric the Grafana dashboard plots is one a running daemon exports.
# The checks are in deploy_validate.py.
set -u

PY=${PYTHON3:-/usr/bin/python3}
if [ ! -x "$PY" ]; then
	echo "SKIP: $PY is missing"
	exit 77
fi
if ! "$PY" -c 'import yaml' 2>/dev/null; then
	echo "SKIP: python3 cannot import yaml (Debian: apt-get install python3-yaml)"
	exit 77
fi
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
unit="$top_builddir/conf/deploy/inferd@.service"
[ -f "$unit" ] || { echo "FAIL: $unit is not built (make all)"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-deploy.XXXXXX") || exit 1
pid=""
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*"
	[ -f "$tmp/inferd.log" ] && tail -n 30 "$tmp/inferd.log"
	exit 1
}

# A daemon to take the list of exported metrics from.
"$top_builddir/inferd" --device=cpu --model_repository="$top_srcdir/conf/models" --http_port=0 \
    --port-file="$tmp/port" --shm_socket= >"$tmp/inferd.log" 2>&1 &
pid=$!
tries=0
while [ ! -s "$tmp/port" ]; do
	kill -0 "$pid" 2>/dev/null || fail "inferd exited at start-up"
	tries=$((tries + 1))
	[ "$tries" -le 600 ] || fail "inferd did not start within 60 s"
	sleep 0.1
done
"$PY" -c '
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/metrics")
r = c.getresponse()
body = r.read()
sys.exit(r.status != 200 or sys.stdout.buffer.write(body) == 0)' "$(cat "$tmp/port")" >"$tmp/metrics" \
    || fail "GET /metrics"

"$PY" "$top_srcdir/tests/helpers/deploy_validate.py" --srcdir "$top_srcdir" --inferd "$top_builddir/inferd" \
    --unit "$unit" --cpu-unit "$top_builddir/conf/deploy/inferd-cpu@.service" --metrics "$tmp/metrics" || fail "conf/deploy"
echo "PASS: test_deploy_yaml"
exit 0
