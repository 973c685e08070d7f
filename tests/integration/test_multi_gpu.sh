#!/bin/sh
# test_multi_gpu.sh: instances of a model on two GPUs (skips on a machine with fewer).
#  - device = auto with two GPUs spreads a model without "devices" over both (one instance each);
#  - "devices": "cuda:1" places a model on the second GPU only, beside a daemon on cuda:0's context;
#  - shm and HTTP clients get the answers of the same model on the CPU backend (the reference),
#    and both GPUs' instances did work (inferd_model_instance_busy_seconds).
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "${gpus:-0}" -ge 2 ] || { echo "SKIP: this test needs two GPUs (nvidia-smi lists ${gpus:-0})"; exit 77; }

repo="$tmp/models"
mlp="$top_srcdir/conf/models/fashion-mlp"
# The same weights three times: on the CPU (the reference), spread by auto, and on cuda:1 alone.
for m in ref spread second; do
	mkdir -p "$repo/$m" && cp "$mlp/model.safetensors" "$repo/$m/" || exit 99
done
sed 's/"fashion-mlp"/"ref"/; s/^{/{ "instance_group": [{"devices": "cpu"}],/' "$mlp/model.json" >"$repo/ref/model.json" &&
	sed 's/"fashion-mlp"/"spread"/' "$mlp/model.json" >"$repo/spread/model.json" &&
	sed 's/"fashion-mlp"/"second"/; s/^{/{ "instance_group": [{"devices": "cuda:1"}],/' "$mlp/model.json" \
		>"$repo/second/model.json" || exit 99

INFERD_TEST_DEVICE=auto start_daemon --model_repository="$repo"
grep -q "model 'spread' loaded (version 1).*2 instances on cuda:0 x1, cuda:1 x1" "$tmp/daemon.log" ||
	fail "auto did not spread 'spread' over both GPUs: $(grep "model 'spread'" "$tmp/daemon.log")"
grep -q "model 'second' loaded (version 1).*on cuda:1" "$tmp/daemon.log" ||
	fail "'second' is not on cuda:1: $(grep "model 'second'" "$tmp/daemon.log")"

# 64 pseudo-random rows; their answers from the CPU instance are the reference for both GPU models.
write_row_references 99 ref

# 8 threads x 40 HTTP requests of the 64 rows to model $1, every answer within 1e-4 of the CPU's.
http_requests() {
	"$PY" - "$port" "$1" "$tmp" <<'PYEOF'
import json, sys, threading, urllib.request
port, model, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
ref, body, bad = json.load(open(tmp + "/ref.json")), open(tmp + "/body.json", "rb").read(), []
def run():
    for _ in range(40):
        req = urllib.request.Request("http://127.0.0.1:%s/v2/models/%s/infer" % (port, model), data=body)
        out = json.load(urllib.request.urlopen(req, timeout=60))["outputs"][0]["data"]
        if len(out) != len(ref) or not all(abs(a - b) <= 1e-4 * max(1.0, abs(b)) for a, b in zip(out, ref)):
            bad.append(out[:4])
threads = [threading.Thread(target=run) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
assert not bad, "%d wrong answers, first %s" % (len(bad), bad[0])
PYEOF
}
# Busy seconds of model $1's instances on device $2.
busy() {
	curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" -v d="$2" \
		'$1 ~ /^inferd_model_instance_busy_seconds[{]/ && index($1, "model=\"" m "\"") && index($1, "device=\"" d "\"") {
			s += $2 } END { print s + 0 }'
}
# 4 shm clients x 300 requests of 4 rows to model $1, every answer checked against ref.bin.
shm_clients() {
	pids=
	for i in 1 2 3 4; do
		IPC_CLIENT_MODEL=$1 "$top_builddir/tests/helpers/ipc_client" "$sock" load "$tmp/in.bin" "$tmp/ref.bin" \
			300 4 "$i" >"$tmp/shm-$1-$i.log" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || fail "shm client of $1: $(cat "$tmp"/shm-"$1"-*.log)"; done
	[ "$(cat "$tmp"/shm-"$1"-*.log | grep -c '300 requests, 0 wrong')" = 4 ] ||
		fail "shm answers of $1: $(cat "$tmp"/shm-"$1"-*.log)"
}

for round in 1 2 3; do
	shm_clients spread &
	shm=$!
	http_requests spread || fail "HTTP requests to 'spread'"
	wait $shm || fail "shm clients of 'spread'"
	[ "$(busy spread cuda:0)" != 0 ] && [ "$(busy spread cuda:1)" != 0 ] && break
done
[ "$(busy spread cuda:0)" != 0 ] && [ "$(busy spread cuda:1)" != 0 ] ||
	fail "not both GPUs served 'spread': $(curl -s "http://127.0.0.1:$port/metrics" | grep instance_busy)"
echo "ok: auto spread 'spread' over cuda:0 and cuda:1, both served (busy $(busy spread cuda:0) s, $(busy spread cuda:1) s)"

shm_clients second
http_requests second || fail "HTTP requests to 'second'"
[ "$(busy second cuda:1)" != 0 ] || fail "'second' did no work on cuda:1"
echo "ok: 'second' on cuda:1 alone answers as the CPU does"

stop_daemon
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/daemon.log" && fail "sanitizer report"
echo "PASS"
