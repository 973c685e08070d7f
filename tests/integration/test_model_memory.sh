#!/bin/sh
# test_model_memory.sh: the per-version device memory report (load log line, /stats, /metrics).
#  - fashion-mlp with 2 instances and 3 batch contexts each: weights equal the bytes of the
#    tensors its safetensors file declares (read here from the file's own header), activations
#    the arena the load line reports times the 6 contexts (and at least the largest batch's
#    input and output), and on the CPU no workspace and no graphs;
#  - total is the sum of the kinds, and the same figures appear in the log line, in /stats
#    (memory and Triton's memory_usage, per model and per version) and in /metrics;
#  - fashion-cnn (ONNX, 1 instance): weights equal its initializers' bytes (read with the onnx
#    package; that part is skipped without it), activations its arena times 3;
#  - an unload removes the version's lines and a load brings the same figures back.
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

repo="$tmp/models"
mlp="$top_srcdir/conf/models/fashion-mlp"
mkdir -p "$repo/fashion-mlp/1" || exit 99
cp "$mlp/model.safetensors" "$repo/fashion-mlp/1/" || exit 99
"$PY" - "$mlp/model.json" "$repo/fashion-mlp/model.json" <<'PYEOF' || exit 99
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["instance_group"] = [{"count": 2}]
json.dump(cfg, open(sys.argv[2], "w"))
PYEOF
cp -r "$top_srcdir/conf/models/fashion-cnn" "$repo/cnn" && sed -i 's/"fashion-cnn"/"cnn"/' "$repo/cnn/model.json" || exit 99
post() { curl -s -w '\n%{http_code}\n' -X POST "http://127.0.0.1:$port$1"; }

start_daemon --model_repository="$repo" --model_control_mode=explicit --load_model=fashion-mlp \
	--load_model=cnn --inflight_batches=3

# Check model $1's report (weights file $2, $3 instances) against the file, the load line, /stats
# and /metrics; prints the total less the graphs.
check_report() {
	"$PY" - "$port" "$tmp/daemon.log" "$1" "$2" "$3" "${INFERD_TEST_DEVICE:-cpu}" <<'PYEOF'
import json, re, struct, sys, urllib.request
port, log, model, weights_file, ninstances, device = sys.argv[1:7]
kinds = ["weights", "activations", "workspace", "graphs"]
def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)
# Weights: every tensor the file declares, from the file itself.
expect_weights = None
if weights_file.endswith(".safetensors"):
    with open(weights_file, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    size = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}
    expect_weights = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        elems = 1
        for d in t["shape"]:
            elems *= d
        expect_weights += elems * size[t["dtype"]]
else:
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        print("note: no onnx package, %s's weights not checked" % model, file=sys.stderr)
    else:
        expect_weights = sum(numpy_helper.to_array(t).nbytes for t in onnx.load(weights_file).graph.initializer)
lines = [l for l in open(log) if "model '%s' " % model in l and "device memory" in l]
if not lines:
    fail("no load line of %s with its memory report" % model)
line = lines[-1]
m = re.search(r"arena (\d+) bytes, (\d+) instances?(?: on [^;]*)?; device memory (\d+) bytes: weights (\d+), activations (\d+), "
              r"workspace (\d+), graphs (\d+)\)", line)
if m is None:
    fail("load line without the memory report: " + line)
arena, instances, total = int(m.group(1)), int(m.group(2)), int(m.group(3))
logged = dict(zip(kinds, map(int, m.group(4, 5, 6, 7))))
if instances != int(ninstances):
    fail("expected %s instances: %s" % (ninstances, line))
# On a GPU a specialisation's folded constants (an ONNX graph's shape arithmetic) are uploaded too.
exact = device == "cpu" or weights_file.endswith(".safetensors")
if expect_weights is not None and (logged["weights"] < expect_weights or
                                   (exact and logged["weights"] != expect_weights)):
    fail("weights %d, the file declares %d bytes" % (logged["weights"], expect_weights))
# Both models take 784 floats a row and give 10, at most 256 rows a batch.
if arena < 256 * (784 + 10) * 4:
    fail("arena %d smaller than the largest batch's input and output" % arena)
if logged["activations"] != arena * 3 * instances:
    fail("activations %d, expected arena %d x 3 contexts x %d instances" % (logged["activations"], arena,
         instances))
if device == "cpu" and logged["graphs"] != 0:
    fail("the CPU backend reports graphs: %s" % logged)
if device == "cpu" and model == "fashion-mlp" and logged["workspace"] != 0:
    fail("an MLP on the CPU backend needs no workspace: %s" % logged)
if total != sum(logged.values()):
    fail("total %d is not the sum of %s" % (total, logged))
for path in ("/v2/models/%s/stats" % model, "/v2/models/%s/versions/1/stats" % model):
    st = json.load(urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=10))["model_stats"][0]
    want = dict(logged, total=total)
    if st["memory"] != want:
        fail("%s memory %s, the load line says %s" % (path, st["memory"], want))
    usage = st["memory_usage"]
    dev_type = "CPU" if device == "cpu" else "GPU"
    if usage != [{"type": dev_type, "id": usage[0]["id"], "byte_size": total}] or usage[0]["id"] < 0:
        fail("%s memory_usage %s, expected %s total %d" % (path, usage, dev_type, total))
text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10).read().decode()
if "# TYPE inferd_model_memory_bytes gauge" not in text:
    fail("/metrics lacks the inferd_model_memory_bytes TYPE line")
for k in kinds:
    key = 'inferd_model_memory_bytes{model="%s",version="1",kind="%s"}' % (model, k)
    vals = [l.split(" ")[1] for l in text.splitlines() if l.split(" ")[0] == key]
    if vals != [str(logged[k])]:
        fail("%s: %s, expected %d" % (key, vals, logged[k]))
# The total without graphs: a reload's graphs figure is blurred (see the comparison below).
print(total - logged["graphs"])
PYEOF
}

first=$(check_report fashion-mlp "$repo/fashion-mlp/1/model.safetensors" 2) || fail "after the load: $first"
cnn=$(check_report cnn "$repo/cnn/model.onnx" 1) || fail "cnn: $cnn"

# Unload: the version's lines go; load again: the same figures.
post /v2/repository/models/fashion-mlp/unload | tail -n 1 | grep -qx 200 || fail "unload refused"
wait_for "curl -s http://127.0.0.1:$port/metrics | grep -c 'inferd_model_memory_bytes{model=\"fashion-mlp\"'" 0
post /v2/repository/models/fashion-mlp/load | tail -n 1 | grep -qx 200 || fail "load refused"
again=$(check_report fashion-mlp "$repo/fashion-mlp/1/model.safetensors" 2) || fail "after unload and load: $again"
# Compared without graphs: on a GPU that figure is the free memory the captures took, and the
# driver hands a reload the memory the unloaded version's graphs gave back (it read 0 on the H100).
[ "$again" = "$first" ] || fail "the reload reports $again bytes besides graphs, the first load $first"
stop_daemon
echo "PASS: memory report (fashion-mlp $first bytes, cnn $cnn bytes)"
