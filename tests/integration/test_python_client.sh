#!/bin/sh
# test_python_client.sh: the Python client (client/python) against a private daemon: installed
# with pip into a scratch directory, then its pytest suite (shared memory, HTTP, the ABI probe,
# Fashion-MNIST against the C client, a two-input model) run on that installed copy and this
# build's libinferd.
#
# To run the suite by hand against a daemon of your own:
#   INFERD_LIB=_b/client/lib/.libs/libinferd.so.0 INFERD_TEST_SOCKET=/tmp/inferd.sock \
#   INFERD_TEST_URL=http://127.0.0.1:8000 INFERD_TEST_MODEL_DIR=conf/models/fashion-mlp \
#   PYTHONPATH=client/python python3 -m pytest client/python/tests
. "$top_srcdir/tests/helpers/test_ipc_lib.sh"

for mod in numpy pytest; do
	"$PY" -c "import $mod" 2>/dev/null || { echo "SKIP: $PY cannot import $mod (Debian: python3-$mod)"; exit 77; }
done
lib="$top_builddir/client/lib/.libs/libinferd.so.0"
[ -f "$lib" ] || { echo "SKIP: no shared libinferd in this build ($lib)"; exit 77; }

# Under the sanitizers the library needs their runtimes loaded first; Python's own leaks are not ours.
preload=""
if grep -q '^SANITIZER_FLAGS = .*fsanitize=address' "$top_builddir/Makefile"; then
	for rt in libasan.so libubsan.so; do
		f=$(${CC:-cc} -print-file-name=$rt)
		[ -f "$f" ] || { echo "SKIP: sanitizer build, and $rt is not found"; exit 77; }
		preload="$preload $f"
	done
fi

# pip install, as a user would (from a copy: the source tree may be read-only, as in distcheck).
cp -R "$top_srcdir/client/python" "$tmp/src" && chmod -R u+w "$tmp/src" || fail "copy client/python"
site="$tmp/site"
if "$PY" -m pip --version >/dev/null 2>&1 && "$PY" -c "import setuptools" 2>/dev/null; then
	"$PY" -m pip install --quiet --no-build-isolation --no-deps --no-index --target "$site" "$tmp/src" \
	    >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install client/python"; }
	[ -f "$site/inferd/shm.py" ] && [ -f "$site/inferd/py.typed" ] || fail "pip installed an incomplete package"
	echo "ok: pip install client/python"
else
	echo "note: no pip or setuptools for $PY: testing the package from the source tree"
	site="$tmp/src"
fi

# The demo model, and (when the onnx package is there) the two-input model of make_multi_onnx.py.
mkdir "$tmp/models" && ln -s "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/fashion-mlp" || fail "repository"
"$PY" "$top_srcdir/tests/helpers/make_multi_onnx.py" "$tmp/models" >"$tmp/multi.log" 2>&1
case $? in
0) ;;
77) echo "note: $(cat "$tmp/multi.log"): the multi-input tests skip" ;;
*) cat "$tmp/multi.log"; fail "make_multi_onnx.py" ;;
esac
# The demo model's twin without eager dispatch: a request waits out its 500 ms window, so a 1 us
# timeout expires in the queue whatever the dispatch path (the demo model may run it at once).
"$PY" - "$top_srcdir/conf/models/fashion-mlp" "$tmp/models/fashion-slow" <<'PYEOF' || fail "fashion-slow"
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
spec = json.load(open(os.path.join(src, "model.json")))
spec["name"] = "fashion-slow"
spec["dynamic_batching"] = dict(spec.get("dynamic_batching", {}), max_queue_delay_us=500000, eager_dispatch=False)
os.makedirs(dst)
json.dump(spec, open(os.path.join(dst, "model.json"), "w"))
w = spec.get("weights", "model.safetensors")
os.symlink(os.path.join(os.path.abspath(src), w), os.path.join(dst, w))
PYEOF
# A model whose load fails (its weights file cut short): named by the daemon, served by neither door.
mkdir "$tmp/models/broken" && cp "$top_srcdir/conf/models/fashion-mlp/model.json" "$tmp/models/broken/" &&
	head -c 1000 "$top_srcdir/conf/models/fashion-mlp/model.safetensors" >"$tmp/models/broken/model.safetensors" &&
	sed -i 's/"fashion-mlp"/"broken"/' "$tmp/models/broken/model.json" || fail "the broken model"
# Explicit mode, every model loaded at start: the repository tests load and unload over HTTP.
# strict_readiness = no: the broken model is loaded on purpose, and the suite checks readiness.
start_daemon --model_repository="$tmp/models" --model_control_mode=explicit --strict_readiness=no \
	--load_model=fashion-mlp,multi,fashion-slow,broken
grep -q "model 'broken'.*model.safetensors" "$tmp/daemon.log" || fail "the broken model's load error names no file"
(cd "$tmp" && env PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 INFERD_LIB="$lib" \
    LD_PRELOAD="${preload# }" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    INFERD_TEST_SOCKET="$sock" INFERD_TEST_URL="http://127.0.0.1:$port" INFERD_TEST_SLOW_MODEL=fashion-slow \
    INFERD_TEST_BROKEN_MODEL=broken \
    INFERD_TEST_MODEL_DIR="$top_srcdir/conf/models/fashion-mlp" INFERD_TEST_DAEMON="$top_builddir/inferd" \
    INFERD_ABI_PROBE="$top_builddir/tests/helpers/inferd_abi" \
    INFERD_TEST_IPC_CLIENT="$top_builddir/tests/helpers/ipc_client" \
    "$PY" -m pytest -p no:cacheprovider -q -rs "$top_srcdir/client/python/tests") || fail "pytest client/python/tests"
kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died during the tests"
# inferctl lists the served models over shm as over HTTP: the broken one left out, and no error.
for door in "--socket=$sock" "--http=127.0.0.1:$port"; do
	listed=$("$top_builddir/client/tools/inferctl" "$door" models 2>"$tmp/ctl.err") ||
		fail "inferctl $door models: $(cat "$tmp/ctl.err")"
	echo "$listed" | grep -qx fashion-mlp && ! echo "$listed" | grep -qx broken ||
		fail "inferctl $door models listed: $listed"
done
echo "ok: a model that failed to load is left out of both clients' model lists"
grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/daemon.log" && fail "sanitizer report in the daemon"
wait_for daemon_regions 0
stop_daemon
echo "PASS: test_python_client"
