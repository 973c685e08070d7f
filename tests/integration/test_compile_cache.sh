#!/bin/sh
# test_compile_cache.sh: the compile cache on a GPU (skips on the CPU: only the CUDA backend fills its GPU file;
# the load checks' verdicts, on every device, are test_load_verdicts.sh's).
# A first start with an empty compile_cache_dir searches its choices (misses over the demo models' loads;
# a second instance of a model may already hit what the first stored), writes one cache file, and answers; a restart takes every choice from the file (hits,
# 0 misses) and answers the same logits; a file with a flipped byte is ignored with a log line, searched
# again, answers the same, and is rewritten whole.  Run it with INFERD_TEST_DEVICE=cuda:0.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

case "${INFERD_TEST_DEVICE:-cpu}" in
cpu) echo "SKIP: the compile cache holds GPU choices (set INFERD_TEST_DEVICE=cuda:0)"; exit 77;;
esac
cache="$tmp/cache"

# counts: "HITS MISSES" summed over the loads of the daemon's last start (its log lines since "starting").
counts() {
	awk '/ starting \(pid / { h = 0; m = 0 }
	    /version [0-9]+: compile cache: [0-9]+ hits, [0-9]+ misses/ {
		for (i = 1; i < NF; i++) { if ($(i + 1) == "hits,") h += $i; if ($(i + 1) ~ /^misses/) m += $i }
	    }
	    END { print h + 0, m + 0 }' "$tmp/daemon.log"
}

# answer FILE: fashion-cnn's logits for the example request, as JSON, into FILE.
answer() {
	curl -s -d "@$top_srcdir/docs/examples/fashion-cnn-request.json" \
		"http://127.0.0.1:$port/v2/models/fashion-cnn/infer" >"$1" || fail "inference"
}

# same A B: the two answers' logits agree (the same engines: to float rounding at most).
same() {
	"$PY" - "$1" "$2" <<'PYEOF' || fail "answers differ: $1 $2"
import json, sys
a, b = (json.load(open(p))["outputs"][0]["data"] for p in sys.argv[1:3])
assert len(a) == len(b) == 10, (a, b)
assert all(abs(x - y) <= 1e-5 * max(1.0, abs(x)) for x, y in zip(a, b)), (a, b)
PYEOF
}

start_daemon --compile_cache_dir="$cache"
set -- $(counts)
[ "${2:-0}" -gt 0 ] || fail "cold start: '$(counts)' (want misses: an empty cache)"
answer "$tmp/cold.json"
stop_daemon
# The GPU's file, beside the load checks' verdicts (model_verdict.c), which have a file of their own.
[ -f "$cache/load_checks.cache" ] || fail "no load-check verdicts file after the first start"
files=$(ls "$cache"/*.cache 2>/dev/null | grep -vc "/load_checks.cache$")
[ "$files" = 1 ] || fail "$files GPU cache files after the first start (want 1)"
file=$(ls "$cache"/*.cache | grep -v "/load_checks.cache$")
echo "ok: cold start searched $2 choices into $(basename "$file")"

start_daemon --compile_cache_dir="$cache"
set -- $(counts)
[ "${1:-0}" -gt 0 ] && [ "${2:-x}" = 0 ] || fail "warm start: '$(counts)' (want hits, 0 misses)"
answer "$tmp/warm.json"
same "$tmp/cold.json" "$tmp/warm.json"
stop_daemon
echo "ok: warm start took $1 choices from the cache and answered the same"

# Flip one byte in the middle of the file: ignored whole, searched again, rewritten.
"$PY" - "$file" <<'PYEOF' || fail "damaging the file"
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x5a
open(sys.argv[1], "wb").write(bytes(b))
PYEOF
start_daemon --compile_cache_dir="$cache"
grep -q "compile cache: ignoring .*$(basename "$file")" "$tmp/daemon.log" || fail "no log line for the damaged file"
set -- $(counts)
[ "${2:-0}" -gt 0 ] || fail "after damage: '$(counts)' (want misses: the file ignored)"
answer "$tmp/again.json"
same "$tmp/cold.json" "$tmp/again.json"
stop_daemon
start_daemon --compile_cache_dir="$cache"
set -- $(counts)
[ "${2:-x}" = 0 ] || fail "the rewritten file: '$(counts)' (want 0 misses)"
stop_daemon
echo "ok: a damaged file is ignored with a log line, searched again and rewritten"
exit 0
