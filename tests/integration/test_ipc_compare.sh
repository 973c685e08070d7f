#!/bin/sh
# test_ipc_compare.sh: shared-memory answers equal HTTP answers bit for bit (CPU backend);
# inferctl over shm and HTTP, the example program, and libinferd's own error checks.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

start_daemon

# Inputs: the demo image, then ten rows of deterministic pseudo-random pixels.
# The same requests (1, 3 and 7 rows, one at a time so each batch is alone)
# go over HTTP here and over shm below; outputs are compared as float32 bits.
"$PY" - "$port" "$top_srcdir/docs/examples/fashion-request.json" "$tmp" <<'PYEOF' || fail "HTTP requests"
import json, struct, sys, urllib.request
port, example, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
image = json.load(open(example))["inputs"][0]["data"]
rows = [[struct.unpack("<f", struct.pack("<f", float(v)))[0] for v in image]]
seed = 12345
for r in range(10):
    row = []
    for i in range(784):
        seed = (seed * 1103515245 + 12345) % 2**31
        row.append(struct.unpack("<f", struct.pack("<f", seed / 2**31))[0])
    rows.append(row)
with open(tmp + "/in.bin", "wb") as f:
    for row in rows:
        f.write(struct.pack("<784f", *row))
out = b""
used = 0
for n in (1, 3, 7):
    body = {"inputs": [{"name": "input", "shape": [n, 784], "datatype": "FP32",
                        "data": [v for row in rows[used:used + n] for v in row]}]}
    req = urllib.request.Request("http://127.0.0.1:%s/v2/models/fashion-mlp/infer" % port,
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    reply = json.load(urllib.request.urlopen(req, timeout=30))
    data = reply["outputs"][0]["data"]
    assert len(data) == n * 10, len(data)
    out += struct.pack("<%df" % len(data), *data)
    used += n
open(tmp + "/http.bin", "wb").write(out)
# The first image as a .npy file, header written by hand (numpy.lib.format, version 1.0).
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 784), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(tmp + "/image.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<784f", *rows[0]))
with open(tmp + "/image.raw", "wb") as f:
    f.write(struct.pack("<784f", *rows[0]))
PYEOF

staged_before=$(metric inferd_staged_bytes_total)
"$top_builddir/tests/helpers/ipc_client" "$sock" seq "$tmp/in.bin" "$tmp/shm.bin" 1 3 7 || fail "shm requests"
cmp "$tmp/http.bin" "$tmp/shm.bin" || fail "shm and HTTP outputs differ"
echo "ok: 11 rows in 3 requests: shm == HTTP, bit for bit"
[ "$(metric inferd_staged_bytes_total)" = "$staged_before" ] || fail "the shm path staged bytes"

ctl="$top_builddir/client/tools/inferctl"
"$ctl" --socket="$sock" health | grep -q '^ok' || fail "inferctl health"
"$ctl" --socket="$sock" models | grep -qx fashion-mlp || fail "inferctl models"
"$ctl" --socket="$sock" model fashion-mlp >"$tmp/model.txt" || fail "inferctl model"
grep -q 'input: input FP32 \[-1, 784\]' "$tmp/model.txt" || fail "inferctl model: input"
grep -q '9="Ankle boot"' "$tmp/model.txt" || fail "inferctl model: labels"
"$ctl" --socket="$sock" infer fashion-mlp --input "$tmp/image.npy" >"$tmp/shm.txt" || fail "inferctl infer .npy"
grep -q '^row 0: class 9 "Ankle boot"$' "$tmp/shm.txt" || fail "inferctl infer: not class 9 \"Ankle boot\": $(cat "$tmp/shm.txt")"
"$ctl" --socket="$sock" infer fashion-mlp --input="$tmp/image.raw" >"$tmp/raw.txt" || fail "inferctl infer raw"
cmp "$tmp/shm.txt" "$tmp/raw.txt" || fail "inferctl: .npy and raw input disagree"
"$ctl" --http=127.0.0.1:"$port" health | grep -q '^ok' || fail "inferctl --http health"
"$ctl" --http=127.0.0.1:"$port" models | grep -qx fashion-mlp || fail "inferctl --http models"
"$ctl" --http=127.0.0.1:"$port" infer fashion-mlp --input "$tmp/image.npy" >"$tmp/http.txt" || fail "inferctl --http infer"
grep -q '^row 0: class 9' "$tmp/http.txt" || fail "inferctl --http infer: not class 9"
[ "$(head -n 1 "$tmp/http.txt")" = "$(head -n 1 "$tmp/shm.txt")" ] || fail "inferctl: shm and HTTP logits differ"
"$ctl" --socket="$sock" infer no-such-model --input "$tmp/image.npy" 2>/dev/null && fail "inferctl: unknown model accepted"
printf 'abc' >"$tmp/bad.raw"
"$ctl" --socket="$sock" infer fashion-mlp --input "$tmp/bad.raw" 2>/dev/null && fail "inferctl: 3-byte input accepted"
"$ctl" --socket="$tmp/nothing.sock" health 2>/dev/null && fail "inferctl: health without a daemon"
echo "ok: inferctl over shm and HTTP"

"$top_builddir/client/examples/example" "$sock" >"$tmp/example.txt" || fail "example: $(cat "$tmp/example.txt")"
[ "$(grep -c '^async' "$tmp/example.txt")" -eq 4 ] || fail "example: not 4 async results"
"$top_builddir/tests/helpers/ipc_client" "$sock" errors || fail "libinferd error checks"
echo "ok: example and libinferd errors"

wait_for daemon_regions 0
stop_daemon
[ ! -e "$sock" ] || fail "the socket file is left behind"
echo "PASS"
