#!/bin/sh
# test_attacks.sh: the hostile-client attacks on HTTP, each bounded and on loopback, against a
# daemon with small limits; each asserts the fixed behaviour and that a normal client is
# served meanwhile (tests/helpers/attack_http.py).  The shm side has its own tests:
# test_ipc_hostile.sh (access control), test_shutdown_drain.sh (nothing lost on SIGTERM).
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

start_daemon --max_body_bytes=1M --http_body_budget_bytes=4M --http_header_timeout=2 \
	--http_min_body_rate=1K --http_max_connections=400 --http_max_connections_per_client=50 \
	--http_threads=2
for attack in chunked budget content-length connections half-close; do
	echo "--- $attack"
	"$PY" "$top_srcdir/tests/helpers/attack_http.py" "$port" "$daemon_pid" "$attack" ||
		fail "attack $attack"
done
stop_daemon
# The trickling connections need more room than 50 per address; the amplification
# attack needs max_body_bytes above the model's largest sensible request.
start_daemon --http_header_timeout=2 --http_min_body_rate=1K \
	--http_max_connections=400 --http_max_connections_per_client=300 --http_threads=2
for attack in amplification slow; do
	echo "--- $attack"
	"$PY" "$top_srcdir/tests/helpers/attack_http.py" "$port" "$daemon_pid" "$attack" ||
		fail "attack $attack"
done
stop_daemon
echo "PASS"
