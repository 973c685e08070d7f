#!/bin/sh
# test_http_staging.sh: each HTTP request takes from the pinned staging memory (pinned_pool_bytes) exactly
# what its tensors need.  With a 256 KiB pool: 24 clients sending fashion-mlp requests of 1-64 rows at once
# (a 64-row request needs 50 of its 64 pages, so they wait for each other) are all answered with their own
# rows' reference logits, none refused; a request larger than the whole pool is 413 naming
# pinned_pool_bytes; a model loaded after start-up with rows 25 times wider is served; a model whose single
# row does not fit is refused at load, naming pinned_pool_bytes.
. "${top_srcdir:?run through make check}/tests/helpers/test_triton_lib.sh"

helper="$top_srcdir/tests/helpers/staging_client.py"
repo="$tmp/repo"
mkdir -p "$repo" "$tmp/later" || fail "mkdir"
cp -r "$top_srcdir/conf/models/fashion-mlp" "$repo/" || fail "copy fashion-mlp"
"$PY" "$helper" make "$tmp/later" wide 20000 || exit $?
"$PY" "$helper" make "$tmp/later" huge 40000 || exit $?

start_daemon --model_repository="$repo" --model_control_mode=explicit --load_model=fashion-mlp \
	--pinned_pool_bytes=256K
base="http://127.0.0.1:$port"

"$PY" "$helper" mixed "$port" "$ref" || fail "concurrent requests of 1-64 rows through a 256 KiB pool"

# 256 rows need 256 x (3,136 + 40) bytes, more than the whole pool: 413 at once, naming the key.
"$PY" -c 'import json; print(json.dumps({"inputs": [{"name": "input", "shape": [256, 784], "datatype": "FP32", "data": [0.5] * (256 * 784)}]}))' >"$tmp/big.json"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$tmp/big.json" \
	"$base/v2/models/fashion-mlp/infer")
[ "$code" = 413 ] && grep -q pinned_pool_bytes "$tmp/body" || fail "256 rows: $code $(cat "$tmp/body")"

# Loaded later, one row of 160,000 bytes: served without anything resized; two rows exceed the pool.
cp -r "$tmp/later/wide" "$repo/" || fail "copy wide"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base/v2/repository/models/wide/load")
[ "$code" = 200 ] || fail "loading wide: $code $(cat "$tmp/body")"
"$PY" "$helper" relu "$port" wide 20000 1 || fail "wide, one row"
"$PY" "$helper" relu "$port" wide 20000 2 >"$tmp/out" 2>&1
grep -q "413.*pinned_pool_bytes" "$tmp/out" || fail "wide, two rows: $(cat "$tmp/out")"

# A model whose one row (320,000 bytes) cannot fit is refused at load, naming the key.
cp -r "$tmp/later/huge" "$repo/" || fail "copy huge"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base/v2/repository/models/huge/load")
[ "$code" = 400 ] && grep -q pinned_pool_bytes "$tmp/body" || fail "loading huge: $code $(cat "$tmp/body")"

# Everything still answers, and the pool is whole again (no piece leaked by the requests above).
"$PY" "$helper" relu "$port" wide 20000 1 || fail "wide after the refusals"
stop_daemon
! grep -q "still in use" "$tmp/daemon.log" || fail "staging memory still in use at stop"
echo "PASS: test_http_staging"
