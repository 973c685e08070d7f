#!/bin/sh
# test_install_prefix.sh: `./configure --prefix=DIR && make install` as a user installs, then
# a C program built against the installed header and library with pkg-config alone, run
# against the installed daemon and demo model with no LD_LIBRARY_PATH; nothing installed
# names another prefix; `make install prefix=DIR2` moves every path too; the installed
# unit passes systemd-analyze verify.  The answer is checked against numpy.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=${PYTHON3:-/usr/bin/python3}
CC=${CC:-cc}
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: no pkg-config"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-prefix.XXXXXX") || exit 99
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail() { echo "FAIL: $*"; [ -f "$tmp/inferd.log" ] && tail -n 30 "$tmp/inferd.log"; exit 1; }
unset LD_LIBRARY_PATH

# A clean copy of the sources (make distdir works in- and out-of-tree), configured as a user would.
make -s -C "$top_builddir" distdir distdir="$tmp/src" >"$tmp/distdir.log" 2>&1 ||
	{ cat "$tmp/distdir.log"; fail "make distdir"; }
mkdir "$tmp/build"
(cd "$tmp/build" && "$tmp/src/configure" -q --prefix="$tmp/p1" --without-cuda &&
    make -s -j2 install) >"$tmp/build.log" 2>&1 || { tail -n 40 "$tmp/build.log"; fail "configure, make install"; }
p=$tmp/p1

# Nothing installed may point at the default prefix.
hits=$(grep -rl -a /usr/local "$p" 2>/dev/null)
[ -z "$hits" ] || fail "installed files name /usr/local: $hits"
grep -qx "ExecStart=$p/sbin/inferd --config=$p/etc/inferd/inferd.conf" "$p/lib/systemd/system/inferd.service" ||
	fail "unit's ExecStart: $(grep ExecStart "$p/lib/systemd/system/inferd.service")"
test -f "$p/lib/sysusers.d/inferd.conf" || fail "no sysusers.d entry under the prefix"
grep -q "^\.BR strict_readiness " "$p/share/man/man8/inferd.8" 2>/dev/null || fail "make install installed no inferd(8) with the config keys"
grep -q "$p/etc/inferd/inferd.conf" "$p/share/man/man8/inferd.8" || fail "inferd(8) does not name $p/etc/inferd/inferd.conf"
"$p/sbin/inferd" --help | grep -q "$p/etc/inferd/inferd.conf" || fail "--help does not name $p/etc/inferd/inferd.conf"
"$p/sbin/inferd" --print-config | grep -qx "model_repository = \"$p/share/inferd/models\"" ||
	fail "built-in model_repository: $("$p/sbin/inferd" --print-config | grep model_repository)"

# The example, built the documented way against the installed files only.
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
flags=$(pkg-config --cflags --libs inferd) || fail "pkg-config --cflags --libs inferd"
$CC "$top_srcdir/client/examples/example.c" $flags -o "$tmp/example" || fail "building example.c with: $flags"
"$p/bin/inferctl" --version | grep -q inferd || fail "installed inferctl --version"

# The installed daemon, its default config file and the installed demo model.
"$p/sbin/inferd" --device=cpu --http_port=0 --port-file="$tmp/port" --shm_socket="$tmp/s.sock" \
    >"$tmp/inferd.log" 2>&1 &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
	kill -0 "$pid" 2>/dev/null || fail "installed inferd exited at start-up"
	i=$((i + 1)); [ $i -le 600 ] || fail "installed inferd did not start in 60 s"
	sleep 0.1
done
grep -q "config $p/etc/inferd/inferd.conf" "$tmp/inferd.log" || fail "the daemon did not read $p/etc/inferd/inferd.conf"
"$tmp/example" "$tmp/s.sock" fashion-mlp >"$tmp/example.out" 2>&1 || { cat "$tmp/example.out"; fail "example"; }
kill -TERM "$pid"; wait "$pid" || fail "inferd exited with $? on SIGTERM"; pid=

# example.c's input is x[i] = (i % 7) / 7: its class, by numpy in double precision from the weights.
if "$PY" -c 'import numpy' 2>/dev/null; then
	want=$("$PY" - "$p/share/inferd/models/fashion-mlp" <<'PYEOF'
import json, struct, sys
import numpy as np
d = sys.argv[1]
m = json.load(open(d + "/model.json"))
raw = open(d + "/" + m["weights"], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
def t(name):
    e = hdr[name]; a, b = e["data_offsets"]
    return np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(e["shape"]).astype(np.float64)
x = np.array([(i % 7) / 7.0 for i in range(784)])
for l in m["layers"]:
    x = x @ t(l["weight"]).T + t(l["bias"]) if l["op"] == "linear" else np.maximum(x, 0)
k = int(np.argmax(x))
print("sync: class %d %s" % (k, m["labels"][k]))
PYEOF
) || fail "numpy reference"
	head -n 1 "$tmp/example.out" | grep -qxF "$want" || fail "example said '$(head -n 1 "$tmp/example.out")', numpy '$want'"
else
	echo "numpy missing: the example's class is not checked against a reference"
	grep -q '^sync: class' "$tmp/example.out" || fail "example printed: $(cat "$tmp/example.out")"
fi
[ "$(grep -c '^async' "$tmp/example.out")" -eq 4 ] || fail "example's async answers: $(cat "$tmp/example.out")"

# make install prefix=DIR2 after the build: the same files, every path moved.
(cd "$tmp/build" && make -s install prefix="$tmp/p2") >"$tmp/build2.log" 2>&1 || { tail -n 30 "$tmp/build2.log"; fail "make install prefix=DIR2"; }
hits=$(grep -rl -a "$tmp/p1" "$tmp/p2" 2>/dev/null)
[ -z "$hits" ] || fail "make install prefix=DIR2 installed files naming the configured prefix: $hits"
grep -q "^libdir=$tmp/p2/lib" "$tmp/p2/lib/pkgconfig/inferd.pc" || fail "inferd.pc under p2: $(cat "$tmp/p2/lib/pkgconfig/inferd.pc")"

# The installed unit, as systemd would read it.
if command -v systemd-analyze >/dev/null 2>&1; then
	printf '[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart=/bin/true\n' >"$tmp/probe.service"
	if (cd "$tmp" && systemd-analyze verify ./probe.service) >"$tmp/probe.out" 2>&1 && ! grep -q probe "$tmp/probe.out"; then
		cp "$p/lib/systemd/system/inferd.service" "$tmp/inferd.service"
		(cd "$tmp" && systemd-analyze verify ./inferd.service) >"$tmp/verify.out" 2>&1 ||
			{ cat "$tmp/verify.out"; fail "systemd-analyze verify on the installed unit"; }
		grep -q inferd.service "$tmp/verify.out" && { cat "$tmp/verify.out"; fail "systemd-analyze verify warns"; }
	else
		echo "systemd-analyze verify does not work here: the installed unit is not verified"
	fi
fi
echo "PASS: installed under $p and $tmp/p2; example built with pkg-config answered: $(head -n 1 "$tmp/example.out")"
exit 0
