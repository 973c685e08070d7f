#!/bin/sh
# test_lifecycle.sh: a real inferd: sd_notify READY/STOPPING, serving, SIGTERM draining a request, start-up failures.
set -u

inferd=${top_builddir:?}/inferd
python=${PYTHON3:-}
test -x "$inferd" || { echo "no $inferd"; exit 99; }
test -n "$python" && test -x "$python" || { echo "SKIP: no python3 (configure found none)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-life.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# The driver bounds every wait and kills the daemons it started.
timeout 300 "$python" "${top_srcdir:?}/tests/helpers/lifecycle_driver.py" "$inferd" "$top_srcdir" "$tmp"
