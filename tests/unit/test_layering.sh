#!/bin/sh
# test_layering.sh: no call loops between source files — the daemon's (core library and main) and the
# client library's — from their objects' symbols (tests/helpers/check_layering.py says how).  A new
# loop fails the suite with the files and the calls that close it.
set -u

python=${PYTHON3:-/usr/bin/python3}
test -x "$python" || { echo "SKIP: $python not found"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm (binutils) not found"; exit 77; }
core=${top_builddir:?}/daemon/libinferd_core.a
main=$top_builddir/daemon/inferd-main.o
test -f "$core" && test -f "$main" || { echo "FAIL: $core or $main is not built"; exit 1; }
# The client library's objects (libtool keeps them in .libs); only those of sources that exist, so a
# stale object of a removed file cannot invent a loop.
client=
for src in "${top_srcdir:?}"/client/lib/*.c; do
	obj=$top_builddir/client/lib/.libs/libinferd_la-$(basename "$src" .c).o
	test -f "$obj" || obj=$top_builddir/client/lib/libinferd_la-$(basename "$src" .c).o
	test -f "$obj" || { echo "FAIL: no object for $src"; exit 1; }
	client=${client:+$client,}$obj
done
"$python" "$top_srcdir/tests/helpers/check_layering.py" "daemon=$core,$main" "client=$client"
