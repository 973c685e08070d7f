#!/bin/sh
# test_docs_files.sh: docs/ARCHITECTURE.md names every source file of the daemon, the client library and
# tools, common/ and include/ (as `name.c`, `name.h` or `name.*`; protoc's generated *.pb.* aside), so its map of the
# tree stays complete; and the README's test command is the one CI runs (.ci/run).
set -u

doc=${top_srcdir:?}/docs/ARCHITECTURE.md
test -f "$doc" || { echo "FAIL: $doc is missing"; exit 1; }
missing=0
for f in $(cd "$top_srcdir" && find daemon client/lib client/tools common include \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' \) ! -name '*.pb.*' | sort); do
	base=$(basename "$f")
	stem=${base%.*}
	if ! grep -qF -e "$base" -e "$stem.*" "$doc"; then
		echo "not in docs/ARCHITECTURE.md: $f"
		missing=$((missing + 1))
	fi
done
[ "$missing" -eq 0 ] || { echo "FAIL: $missing source files are not named in docs/ARCHITECTURE.md"; exit 1; }

# The README's test command is what CI runs: .ci/run is the same two steps, install then check-all.
grep -qxF '$(command -v sudo) tests/install-deps.sh && tests/check-all.sh' "$top_srcdir/README.md" ||
	{ echo "FAIL: README.md's test command is not 'tests/install-deps.sh && tests/check-all.sh'"; exit 1; }
grep -q '^tests/install-deps.sh ' "$top_srcdir/.ci/run" && grep -q '^tests/check-all.sh ' "$top_srcdir/.ci/run" ||
	{ echo "FAIL: .ci/run does not run tests/install-deps.sh and tests/check-all.sh as the README does"; exit 1; }
bash -n "$top_srcdir/tests/install-deps.sh" && bash -n "$top_srcdir/.ci/run" ||
	{ echo "FAIL: tests/install-deps.sh or .ci/run does not parse"; exit 1; }
echo "PASS: every source file is named in docs/ARCHITECTURE.md"
