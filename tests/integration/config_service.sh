#!/bin/sh
# config_service.sh: conf/inferd.service.in passes systemd-analyze verify and keeps its promises.
set -u

unit_in=${top_srcdir:?}/conf/inferd.service.in
inferd=${top_builddir:?}/inferd
command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: no systemd-analyze"; exit 77; }
test -x "$inferd" || { echo "no $inferd"; exit 99; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-unit.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
failed=0

# verify only warns (status 0) on unknown keys, so any line naming the unit fails too.
verify() {
	(cd "$tmp" && systemd-analyze verify "./$1") >"$tmp/verify.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || grep -q "$1" "$tmp/verify.out"; then
		return 1
	fi
	return 0
}

# Some sandboxes cannot run verify at all: skip there rather than fail.
printf '[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart=/bin/true\n' >"$tmp/probe.service"
verify probe.service || { echo "SKIP: systemd-analyze verify does not work here:"; cat "$tmp/verify.out"; exit 77; }

# The unit as make install writes it, with ExecStart pointing at the built daemon.
sed -e "s|@sbindir@|$top_builddir|g" -e "s|@sysconfdir@|$tmp/etc|g" "$unit_in" >"$tmp/inferd.service"
grep -q '@[a-z]*@' "$tmp/inferd.service" && { echo "FAIL: unsubstituted @var@ left"; failed=1; }
verify inferd.service || { echo "FAIL: systemd-analyze verify:"; cat "$tmp/verify.out"; failed=1; }

# A mistake must be caught by the check above, or it proves nothing.
sed 's/^Type=notify/Type=notfy/' "$tmp/inferd.service" >"$tmp/broken.service"
verify broken.service && { echo "FAIL: verify accepted a broken unit"; failed=1; }

# What the daemon relies on: notify, pinned memory, JIT-able memory, the GPU nodes.
for line in 'Type=notify' 'LimitMEMLOCK=infinity' 'User=inferd' 'DevicePolicy=closed' \
    'DeviceAllow=char-nvidia rw' 'DeviceAllow=char-nvidia-uvm rw' 'RuntimeDirectory=inferd' \
    'NoNewPrivileges=yes' 'ProtectSystem=strict'; do
	grep -qx "$line" "$tmp/inferd.service" || { echo "FAIL: no '$line' in the unit"; failed=1; }
done
for key in MemoryDenyWriteExecute PrivateDevices DynamicUser SupplementaryGroups; do
	grep -q "^$key=" "$tmp/inferd.service" && { echo "FAIL: $key= is set (the unit explains why it must not be)"; failed=1; }
done
exit $failed
