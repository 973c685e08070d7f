#!/bin/sh
# check-all.sh: the whole test suite, as the README and CI run it.
# Builds out of tree twice from the source checkout: a normal build with `make check`
# and `make distcheck`, then an ASan+UBSan build with fault injection compiled in (armed only by
# test_faults.sh) and `make check`, then `make fuzz`: every
# libFuzzer target for FUZZ_SECONDS (default 60) each (INFERD_SKIP_FUZZ=1 leaves it out).
# A checkout that is configured in-tree (./configure && make, as the README builds) cannot
# also be configured out of tree, so its sources are copied to BUILD_ROOT/src first and
# built from there; the in-tree build is left as it is.
# Usage: tests/check-all.sh [BUILD_ROOT]   (default: ./_check)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$src/_check}
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$root"
root=$(cd "$root" && pwd)

# Copy the sources without the in-tree build: git's tracked and unignored files when
# this is a git checkout, else everything and a distclean of the copy.
copy_sources() {
	rm -rf "$root/src"
	mkdir -p "$root/src"
	if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		    xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\n" "$f"; done' sh |
		    tar -cf - -T -) | (cd "$root/src" && tar -xf -)
	else
		(cd "$src" && tar -cf - --exclude="./${root#"$src"/}" .) | (cd "$root/src" && tar -xf -)
		(cd "$root/src" && make distclean >/dev/null 2>&1) || true
	fi
}

if [ -f "$src/config.status" ]; then
	echo "== $src is configured in-tree: building from a copy in $root/src"
	copy_sources
	src=$root/src
fi

cd "$src"
[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi

# After a failed `make check`: each failing test's own "FAIL:" lines and its log's tail, so a
# cut CI output still says what failed and why (test-suite.log stays in the build tree).
show_failures() {
	find "$1" -name '*.trs' -exec grep -l '^:test-result: \(FAIL\|ERROR\|XPASS\)' {} + 2>/dev/null |
	while read -r trs; do
		log=${trs%.trs}.log
		echo "== failed: $log"
		grep -m 10 '^FAIL' "$log"
		echo "-- its last 30 lines:"
		tail -n 30 "$log"
	done
}

run_pass() {
	name=$1; shift
	rm -rf "$root/$name"
	mkdir -p "$root/$name"
	(cd "$root/$name" && "$src/configure" -q "$@" && make -j"$jobs" && make -j"$jobs" check) ||
	    { status=1; show_failures "$root/$name"; }
	echo "== $name: test logs in $root/$name/test-suite.log"
}

status=0
run_pass plain
if [ "${INFERD_SKIP_DISTCHECK:-0}" != 1 ]; then
	(cd "$root/plain" && make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--without-cuda) ||
	    { status=1; show_failures "$root/plain/inferd-"*; }
fi
run_pass sanitizers --enable-sanitizers --enable-fault-injection
if [ "${INFERD_SKIP_FUZZ:-0}" != 1 ]; then
	(cd "$root/plain" && make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-60}") || status=1
	echo "== fuzz: logs in $root/plain/tests/fuzz/*.log; crash inputs in $src/tests/data/*-corpus"
fi
exit $status
